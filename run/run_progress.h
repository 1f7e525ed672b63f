// A run's bookkeeping between mega-batches (counters, clocks, what each device did since the last
// evaluation, every evaluation so far) and the options a checkpoint must be resumed with: the
// scalar half of a checkpoint, as JSON. Shared by the single- and the multi-device loops.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "data/input_error.h"
#include "kernels/model.h"
#include "run/holdout_stop.h"
#include "run/metrics_log.h"
#include "run/train_result.h"
#include "scheduler/train_options.h"

namespace xmlt::run {

struct RunProgress {
  uint64_t rows_done = 0, megabatches = 0, batches = 0;
  double train_seconds = 0;   // the training clock (virtual or wall)
  double wall_seconds = 0;    // wall time of earlier processes of this run (resumed runs add theirs)
  double loss_sum = 0;        // sum of batch mean losses since the last evaluation
  uint64_t loss_batches = 0;
  double merge_cost_s = 0;    // the virtual clock's merge cost, once calibrated
  uint32_t rollbacks = 0;
  bool last_perturbed = false;  // whether the last merge was perturbed (the next record says so)
  std::vector<DeviceRecord> since_eval;  // one per device
  std::vector<EvalRecord> evals;         // every evaluation so far
  std::vector<HoldoutScore> holdout_scores;  // the held-out rows' score at each watched epoch's end
  uint64_t stopped_by_holdout_at = 0;        // rows trained when the held-out rows ended the run (0: they did not)
};

nlohmann::json ProgressToJson(const RunProgress& progress);
RunProgress ProgressFromJson(const nlohmann::json& json);  // throws nlohmann::json::exception

// last and best of the evaluations so far (the best by P@1, the earliest on ties, among those on
// as many test rows as the last: not a --eval-rows sample against the whole test set).
TrainResult ResultOf(const RunProgress& progress);

// What a resumed run must share with the run that wrote the checkpoint, keyed by setting names
// (the command line maps them to its flags): model shape, devices, algorithm settings, batch,
// learning rate, seed, and checksums of the training data and of the test data (`test` may be
// null: no test set). The epochs and the evaluation schedule may change.
nlohmann::json RunFingerprint(const scheduler::TrainOptions& options, const scheduler::SchedulerOptions& scheduling,
                              const kernels::ModelShape& shape, const data::Dataset& train,
                              const data::Dataset* test);

// Throws data::InputError (naming `source`) when a resumed run asks for fewer training rows
// (--epochs) than the checkpoint has already trained.
void CheckEpochsCoverProgress(uint64_t total_rows, uint64_t rows_done, uint64_t rows_per_epoch,
                              const std::string& source);

// A resumed run may lower --lr (after a divergence stop): true when `now_lr` is below the
// checkpointed run's; the run then restarts its learning rates from it, rollback halvings dropped.
bool ResumeLowersLr(const nlohmann::json& saved, double now_lr);

// A setting of the run fingerprint (by its name there, e.g. "batch", "pert_threshold") whose
// value differs between a checkpoint and the run resuming from it, both as JSON text, with each
// side's note on it (the fingerprint's "notes"), if any.
struct SettingDifference {
  std::string name, checkpoint, now;
  std::string checkpoint_note, now_note;
};

// A resume refused for its settings; the command line names the flags behind them.
class RunMismatch : public data::InputError {
 public:
  RunMismatch(const std::string& source, std::vector<SettingDifference> differences);
  const std::vector<SettingDifference>& differences() const { return differences_; }

 private:
  std::vector<SettingDifference> differences_;
};

// Throws RunMismatch (naming `source`) listing every setting whose value differs (a lower
// learning rate excepted, and the settings named in `may_differ`). The settings named in
// `recorded_later` are compared only when `saved` holds one of them: a checkpoint written before
// they were recorded has none. "notes" is never compared: its entries are shown beside the values.
void CheckSameRun(const nlohmann::json& saved, const nlohmann::json& now, const std::string& source,
                  const std::vector<std::string>& may_differ = {},
                  const std::vector<std::string>& recorded_later = {});

// The loop's fingerprint with the settings and notes of `outer_settings` and `notes`
// (RunControl's) added.
nlohmann::json WithOuterSettings(nlohmann::json fingerprint, const nlohmann::json& outer_settings,
                                 const nlohmann::json& notes);

// Whether a checkpoint was written by a run over other devices (another number of ranks, or
// other devices on them): resuming it re-plans the devices (an elastic restart).
bool OtherDevices(const nlohmann::json& saved, const nlohmann::json& now);

// The settings an elastic restart may change with the devices: the device list, their speeds,
// the learning rate and the mega-batch (whose defaults follow the number of devices), the
// collective, how the rate scales with the devices and where merges run.
const std::vector<std::string>& DeviceDependentSettings();

// The checkpoint's header JSON ("run", "progress" and the loop's own parts) from a reader, with
// a clear error when it is not JSON.
nlohmann::json ParseCheckpointMeta(const std::string& text, const std::string& source);

}  // namespace xmlt::run
