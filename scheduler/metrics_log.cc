// JSON-lines metrics; see metrics_log.h.
#include "scheduler/metrics_log.h"

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace xmlt::scheduler {

std::string ToJson(const EvalRecord& r) {
  nlohmann::json j;
  j["megabatch"] = r.megabatch;
  j["epoch"] = r.epoch;
  j["train_time_s"] = r.train_time_s;
  j["wall_time_s"] = r.wall_time_s;
  j["eval_time_s"] = r.eval_time_s;
  j["train_samples"] = r.train_samples;
  j["train_loss"] = r.train_loss;
  if (r.test.rows > 0) {  // without a test set there is nothing to report
    j["p1"] = r.test.metrics.p1;
    j["p3"] = r.test.metrics.p3;
    j["p5"] = r.test.metrics.p5;
    j["ndcg3"] = r.test.metrics.ndcg3;
    j["ndcg5"] = r.test.metrics.ndcg5;
    j["loss"] = r.test.loss;
  }
  j["perturbed"] = r.perturbed;
  j["devices"] = nlohmann::json::array();
  for (const DeviceRecord& d : r.devices) {
    j["devices"].push_back({{"id", d.id}, {"batch", d.batch}, {"lr", d.lr}, {"updates", d.updates}, {"rows", d.rows},
                            {"weight", d.weight}, {"busy_s", d.busy_s}, {"idle_s", d.idle_s}});
  }
  return j.dump();
}

MetricsLog::MetricsLog(std::string path) : path_(std::move(path)) {
  if (path_.empty()) return;
  const std::string partial = path_ + ".partial";
  file_ = std::fopen(partial.c_str(), "w");
  if (file_ == nullptr)
    throw std::runtime_error(partial + ": cannot create metrics file: " + std::strerror(errno));
}

MetricsLog::~MetricsLog() {
  if (file_ != nullptr) std::fclose(file_);
}

void MetricsLog::Append(const EvalRecord& record) {
  if (file_ == nullptr) return;
  const std::string line = ToJson(record) + "\n";
  if (std::fputs(line.c_str(), file_) < 0 || std::fflush(file_) != 0)
    throw std::runtime_error(path_ + ".partial: write failed: " + std::strerror(errno));
}

void MetricsLog::Finish() {
  if (file_ == nullptr) return;
  const bool failed = std::fclose(file_) != 0;
  file_ = nullptr;
  const std::string partial = path_ + ".partial";
  if (failed || std::rename(partial.c_str(), path_.c_str()) != 0)
    throw std::runtime_error(partial + ": cannot finish metrics file: " + std::strerror(errno));
}

}  // namespace xmlt::scheduler
