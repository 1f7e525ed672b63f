// The --propensity flag of train and eval (the A and B of the propensity-scored metrics) and the
// JSON of a set of top-k metrics, as the summaries and eval print them.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "kernels/propensity.h"
#include "kernels/top_k_metrics.h"

namespace CLI {
class App;
}

namespace xmlt::apps {

// "A,B", e.g. "0.55,1.5"; throws std::invalid_argument naming --propensity otherwise.
kernels::PropensityModel ParsePropensity(const std::string& text);
void AddPropensityFlag(CLI::App* command, std::string* text);

// p1..ndcg5, and psp1..psndcg5 when they were computed.
nlohmann::json TopKMetricsJson(const kernels::TopKMetrics& metrics);

}  // namespace xmlt::apps
