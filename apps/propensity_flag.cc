// --propensity and the top-k metrics' JSON; see propensity_flag.h.
#include "apps/propensity_flag.h"

#include <CLI/CLI.hpp>
#include <cmath>
#include <stdexcept>

namespace xmlt::apps {

kernels::PropensityModel ParsePropensity(const std::string& text) {
  const size_t comma = text.find(',');
  kernels::PropensityModel model;
  try {
    size_t used_a = 0, used_b = 0;
    if (comma == std::string::npos) throw std::invalid_argument("no comma");
    model.a = std::stod(text.substr(0, comma), &used_a);
    model.b = std::stod(text.substr(comma + 1), &used_b);
    if (used_a != comma || used_b != text.size() - comma - 1) throw std::invalid_argument("trailing text");
  } catch (const std::exception&) {
    throw std::invalid_argument("--propensity must be A,B (two numbers, e.g. 0.55,1.5), not '" + text + "'");
  }
  if (!(model.a > 0) || !(model.b > 0) || !std::isfinite(model.a) || !std::isfinite(model.b))
    throw std::invalid_argument("--propensity: A and B must be finite and > 0, not '" + text + "'");
  return model;
}

void AddPropensityFlag(CLI::App* command, std::string* text) {
  command->add_option("--propensity", *text,
                      "A,B of the label propensities behind PSP@k and PSnDCG@k (Jain et al. 2016), from the "
                      "training labels: 0.55,1.5 in general, 0.6,2.6 for Amazon, 0.5,0.4 for Wikipedia")
      ->capture_default_str();
}

nlohmann::json TopKMetricsJson(const kernels::TopKMetrics& m) {
  nlohmann::json j = {{"p1", m.p1}, {"p3", m.p3}, {"p5", m.p5}, {"ndcg3", m.ndcg3}, {"ndcg5", m.ndcg5}};
  if (m.propensity_scored)
    j.update({{"psp1", m.psp1}, {"psp3", m.psp3}, {"psp5", m.psp5}, {"psndcg3", m.psndcg3}, {"psndcg5", m.psndcg5}});
  return j;
}

}  // namespace xmlt::apps
