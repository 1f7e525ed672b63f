// The outputs of `xmltrain train`, claimed before loading; see train_outputs.h.
#include "apps/train_outputs.h"

#include <stdexcept>

#include "apps/checkpoint_folder.h"
#include "apps/output_paths.h"

namespace xmlt::apps {

std::unique_ptr<data::FolderLock> ClaimTrainOutputs(const TrainFlags& f, const TrainPlan& plan,
                                                    const TrainSession& session, bool writer) {
  // The checkpoint a run resumes from and the one it writes are no other output's to replace.
  // (Their temporary names, FILE.partial and FILE.tmp.PID, are the checkpoint's own only when
  // FILE is, which this refuses.)
  RefuseOutputsInCheckpointFolder("--resume", plan.control.resume_dir,
                                  {{"--model", plan.model_out}, {"--metrics", plan.metrics}});
  RefuseOutputsInCheckpointFolder("--checkpoint-dir", plan.control.checkpoint_dir,
                                  {{"--model", plan.model_out}, {"--metrics", plan.metrics}});
  // Output files are opened before the long work, so that a bad path fails now, not at the end.
  ProbeOutputFile("--model", plan.model_out);
  ProbeOutputFile("--metrics", plan.metrics);
  if (writer) ProbeOutputDir("--checkpoint-dir", plan.control.checkpoint_dir);
  // Every name an output writes is its own: no input, no other output, nor their temporary names.
  // (Data handed in from memory has no file to protect.)
  const std::string train_file = session.train ? std::string() : f.train;
  const std::string test_file = session.test ? std::string() : f.test;
  RefuseOutputsOverInputs({{"--train", train_file},
                           {"--train-labels", session.train ? std::string() : f.train_labels},
                           {"--test", test_file},
                           {"--test-labels", session.test ? std::string() : f.test_labels}},
                          {AtomicOutput("--model", plan.model_out), MetricsOutput("--metrics", plan.metrics)});
  // One run at a time writes a checkpoint folder (across ranks, rank 0).
  std::unique_ptr<data::FolderLock> checkpoint_lock;
  if (writer && !plan.control.checkpoint_dir.empty()) {
    try {
      checkpoint_lock = std::make_unique<data::FolderLock>(plan.control.checkpoint_dir);
    } catch (const std::runtime_error& e) {
      throw std::invalid_argument(std::string("--checkpoint-dir ") + e.what());
    }
    RefuseReplacingAnotherRunsCheckpoint(plan.control.checkpoint_dir, plan.control.resume_dir);
  }
  return checkpoint_lock;
}

std::unique_ptr<run::MetricsLog> OpenMetricsLog(const std::string& path) {
  // A metrics file another run is writing is a usage error, as a checkpoint folder in use is.
  try {
    return std::make_unique<run::MetricsLog>(path);
  } catch (const std::runtime_error& e) {
    throw std::invalid_argument(std::string("--metrics ") + e.what());
  }
}

}  // namespace xmlt::apps
