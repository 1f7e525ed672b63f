// Metrics as JSON lines, one object per evaluation. The file is written as FILE.partial, each line
// flushed (so it can be followed while training), and renamed to FILE when the run completes. A
// symlink FILE is followed; a character device or FIFO is written directly (output_target.h).
// A write that fails (a full disk) does not stop the run: the log says so (error()), writes
// nothing more, and Finish fails, once the run has written its model and checkpoint.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "engine/evaluator.h"

namespace xmlt::run {

// What each device did since the previous evaluation (the record's `devices` array).
struct DeviceRecord {
  std::string id;         // "cpu:0"
  uint32_t batch = 0;     // current batch size
  double lr = 0;          // current learning rate
  uint64_t updates = 0;   // local steps
  uint64_t rows = 0;      // training rows processed
  double weight = 1;      // merge weight
  double busy_s = 0, idle_s = 0;
  bool dropped = false;   // the device failed and no longer trains
  std::string fault;      // why, when dropped
};

struct EvalRecord {
  uint64_t megabatch = 0;     // mega-batches completed
  double epoch = 0;           // training rows processed / training rows
  double train_time_s = 0;    // time spent training, evaluation and loading excluded
  double wall_time_s = 0;     // since training started, evaluation included
  double eval_time_s = 0;     // this evaluation's time
  double train_loss = 0;      // mean batch loss since the previous evaluation
  uint64_t train_samples = 0; // training rows processed so far
  engine::Evaluation test;    // P@k, nDCG@k and loss on the test set
  bool perturbed = false;     // whether the last merge added perturbation
  uint32_t rollbacks = 0;     // divergences rolled back so far
  double lr_scale = 1;        // --lr-schedule's factor on the devices' rates in the last mega-batch
  std::vector<DeviceRecord> devices;
};

std::string ToJson(const EvalRecord& record);
// The inverse of ToJson (checkpoints keep the records so far); throws std::invalid_argument.
EvalRecord EvalRecordFromJson(const std::string& line);

class MetricsLog {
 public:
  // Empty path: a log that discards records. Otherwise FILE.partial is opened without truncating
  // it (an error now if it cannot be written) and locked until Finish or destruction (an error now
  // if another run holds it); it is emptied when the run starts (Begin, Restart or the first
  // Append), so a run refused before that leaves an earlier FILE.partial intact.
  explicit MetricsLog(std::string path);
  // Starts FILE.partial afresh, so a resumed run's log holds exactly the checkpoint's records
  // followed by its own (records written after the checkpoint, before a crash, are dropped).
  void Restart(const std::vector<EvalRecord>& records);
  void Begin();  // a fresh run starts: FILE.partial emptied
  ~MetricsLog();                          // an unfinished log stays as FILE.partial
  MetricsLog(const MetricsLog&) = delete;
  MetricsLog& operator=(const MetricsLog&) = delete;

  // Writes the record's line. Returns false, and writes nothing from then on, once a write has
  // failed; error() says which and why.
  bool Append(const EvalRecord& record);
  // Renames FILE.partial to FILE. Throws std::runtime_error when it cannot, or when a write failed
  // before (FILE.partial then stays, holding the lines written until then).
  void Finish();
  // Why the metrics could not be written (the first failed write), empty while they could.
  const std::string& error() const { return error_; }

  // The name a log for `path` writes while the run goes on (no other output may have it).
  static std::string PartialPathFor(const std::string& path);

 private:
  std::string WrittenPath() const;  // FILE.partial, or FILE itself when it is a stream

  std::string path_;
  std::FILE* file_ = nullptr;
  bool created_ = false;  // FILE.partial did not exist before this log
  bool started_ = false;
  bool stream_ = false;   // FILE is a character device or FIFO
  uint64_t appended_ = 0; // records written since the log started
  std::string error_;     // the first failed write
};

}  // namespace xmlt::run
