// JSON-lines metrics; see metrics_log.h.
#include "run/metrics_log.h"

#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "data/output_target.h"

namespace xmlt::run {

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
    if (r.test.metrics.propensity_scored) {
      j["psp1"] = r.test.metrics.psp1;
      j["psp3"] = r.test.metrics.psp3;
      j["psp5"] = r.test.metrics.psp5;
      j["psndcg3"] = r.test.metrics.psndcg3;
      j["psndcg5"] = r.test.metrics.psndcg5;
    }
    j["loss"] = r.test.loss;
    j["test_rows"] = r.test.rows;
  }
  j["perturbed"] = r.perturbed;
  j["rollbacks"] = r.rollbacks;
  j["lr_scale"] = r.lr_scale;
  j["devices"] = nlohmann::json::array();
  for (const DeviceRecord& d : r.devices) {
    j["devices"].push_back({{"id", d.id}, {"batch", d.batch}, {"lr", d.lr}, {"updates", d.updates}, {"rows", d.rows},
                            {"weight", d.weight}, {"busy_s", d.busy_s}, {"idle_s", d.idle_s},
                            {"dropped", d.dropped}});
    if (d.dropped) j["devices"].back()["fault"] = d.fault;
  }
  return j.dump();
}

namespace {

// JSON has no NaN or infinity: ToJson writes a non-finite value (a diverged evaluation's loss, say)
// as null, and a checkpoint holding such a record must still resume, so null reads back as NaN.
double Real(const nlohmann::json& j, const char* key) {
  const nlohmann::json& value = j.at(key);
  return value.is_null() ? std::numeric_limits<double>::quiet_NaN() : value.get<double>();
}

}  // namespace

EvalRecord EvalRecordFromJson(const std::string& line) {
  try {
    const nlohmann::json j = nlohmann::json::parse(line);
    EvalRecord r;
    r.megabatch = j.at("megabatch").get<uint64_t>();
    r.epoch = Real(j, "epoch");
    r.train_time_s = Real(j, "train_time_s");
    r.wall_time_s = Real(j, "wall_time_s");
    r.eval_time_s = Real(j, "eval_time_s");
    r.train_samples = j.at("train_samples").get<uint64_t>();
    r.train_loss = Real(j, "train_loss");
    if (j.contains("test_rows")) {
      r.test.rows = j.at("test_rows").get<uint64_t>();
      r.test.metrics.p1 = Real(j, "p1");
      r.test.metrics.p3 = Real(j, "p3");
      r.test.metrics.p5 = Real(j, "p5");
      r.test.metrics.ndcg3 = Real(j, "ndcg3");
      r.test.metrics.ndcg5 = Real(j, "ndcg5");
      r.test.metrics.propensity_scored = j.contains("psp1");
      if (r.test.metrics.propensity_scored) {
        r.test.metrics.psp1 = Real(j, "psp1");
        r.test.metrics.psp3 = Real(j, "psp3");
        r.test.metrics.psp5 = Real(j, "psp5");
        r.test.metrics.psndcg3 = Real(j, "psndcg3");
        r.test.metrics.psndcg5 = Real(j, "psndcg5");
      }
      r.test.loss = Real(j, "loss");
    }
    r.perturbed = j.at("perturbed").get<bool>();
    r.rollbacks = j.at("rollbacks").get<uint32_t>();
    if (j.contains("lr_scale")) r.lr_scale = Real(j, "lr_scale");  // absent in older checkpoints
    for (const nlohmann::json& d : j.at("devices")) {
      DeviceRecord device;
      device.id = d.at("id").get<std::string>();
      device.batch = d.at("batch").get<uint32_t>();
      device.lr = Real(d, "lr");
      device.updates = d.at("updates").get<uint64_t>();
      device.rows = d.at("rows").get<uint64_t>();
      device.weight = Real(d, "weight");
      device.busy_s = Real(d, "busy_s");
      device.idle_s = Real(d, "idle_s");
      device.dropped = d.at("dropped").get<bool>();
      if (device.dropped) device.fault = d.at("fault").get<std::string>();
      r.devices.push_back(device);
    }
    return r;
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument(std::string("bad metrics record: ") + e.what());
  }
}

std::string MetricsLog::PartialPathFor(const std::string& path) { return path + ".partial"; }

MetricsLog::MetricsLog(std::string path) : path_(std::move(path)) {
  if (path_.empty()) return;
  // A symlink is followed (the file it leads to is written); a device or FIFO is written into
  // directly, with no FILE.partial and no rename, so that the node is never replaced.
  const data::OutputTarget target = data::ResolveOutputTarget(path_);
  stream_ = target.stream;
  path_ = target.path;
  const std::string written = WrittenPath();
  // Opened for appending: the path is proved writable now, and a run refused before it trains
  // leaves an earlier run's FILE.partial as it was. Begin or Restart empties it.
  created_ = !stream_ && ::access(written.c_str(), F_OK) != 0;
  file_ = std::fopen(written.c_str(), "a");
  if (file_ == nullptr)
    throw std::runtime_error(written + ": cannot create metrics file: " + std::strerror(errno));
  // Two runs given one --metrics would interleave their lines: the second is refused.
  if (::flock(::fileno(file_), LOCK_EX | LOCK_NB) != 0) {
    std::fclose(file_);
    file_ = nullptr;
    created_ = false;
    throw std::runtime_error(written + " is being written by another run; give each run its own metrics file");
  }
}

std::string MetricsLog::WrittenPath() const { return stream_ ? path_ : PartialPathFor(path_); }

MetricsLog::~MetricsLog() {
  if (file_ == nullptr) return;
  // Removed before the lock goes with the descriptor, so that it is never another run's file.
  if (!started_ && created_) std::remove(WrittenPath().c_str());  // made only to probe the path
  std::fclose(file_);
}

void MetricsLog::Begin() { Restart({}); }

void MetricsLog::Restart(const std::vector<EvalRecord>& records) {
  if (file_ == nullptr) return;
  started_ = true;
  // Emptied in place, on the descriptor that holds the lock: reopening the file would close that
  // descriptor and release the lock, and a second run could then take the file over.
  // A stream cannot take back what it was sent: a resumed run's records follow the earlier ones.
  if (std::fflush(file_) != 0 || (!stream_ && ::ftruncate(::fileno(file_), 0) != 0))
    throw std::runtime_error(WrittenPath() + ": cannot empty metrics file: " + std::strerror(errno));
  std::rewind(file_);  // opened for appending, so writes go to the (new) end anyway
  appended_ = 0;
  for (const EvalRecord& record : records) Append(record);
}

bool MetricsLog::Append(const EvalRecord& record) {
  if (file_ == nullptr) return true;
  if (!error_.empty()) return false;
  if (!started_) Begin();
  const std::string line = ToJson(record) + "\n";
  if (std::fputs(line.c_str(), file_) < 0 || std::fflush(file_) != 0) {
    // The run's model and checkpoint matter more than its log: it trains on (train_run.cc).
    error_ = WrittenPath() + ": write failed at evaluation " + std::to_string(appended_ + 1) + ": " +
             std::strerror(errno);
    return false;
  }
  ++appended_;
  return true;
}

void MetricsLog::Finish() {
  if (file_ == nullptr) return;
  const std::string partial = WrittenPath();
  if (!error_.empty()) {  // left as it is, with the lines written before the failure
    std::fclose(file_);
    file_ = nullptr;
    throw std::runtime_error(error_ + "; the metrics stop before it" +
                             (stream_ ? std::string() : ", in " + partial));
  }
  // Renamed while the lock is still held, so that no other run can take the file over in between.
  const bool failed = std::fflush(file_) != 0 || std::ferror(file_) != 0 ||
                      (!stream_ && std::rename(partial.c_str(), path_.c_str()) != 0);
  const int error = errno;
  std::fclose(file_);
  file_ = nullptr;
  if (failed) throw std::runtime_error(partial + ": cannot finish metrics file: " + std::strerror(error));
}

}  // namespace xmlt::run
