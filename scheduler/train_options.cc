// Validation of the training options; see train_options.h.
#include "scheduler/train_options.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>

#include "engine/evaluator.h"

namespace xmlt::scheduler {

void ValidateTrainOptions(const TrainOptions& options) {
  if (options.batch == 0) throw OptionError("batch", "must be positive");
  if (!(options.epochs > 0) || !std::isfinite(options.epochs))
    throw OptionError("epochs", "must be a positive number");
  if (!(options.lr > 0) || !std::isfinite(options.lr)) throw OptionError("lr", "must be positive");
  if (options.mega_batch == 0) throw OptionError("mega_batch", "must be positive");
  if (!(options.divergence_factor == 0 || options.divergence_factor > 1) || !std::isfinite(options.divergence_factor))
    throw OptionError("divergence_factor", "must be 0 (off) or above 1");
  if (!(options.local_momentum >= 0 && options.local_momentum < 1))
    throw OptionError("local_momentum", "must be in [0, 1)");
  if (!(options.weight_decay >= 0) || !std::isfinite(options.weight_decay))
    throw OptionError("weight_decay", "must be a finite number >= 0");
  if (!(options.dropout >= 0 && options.dropout < 1)) throw OptionError("dropout", "must be in [0, 1)");
  if (!(options.input_lr >= 0) || !std::isfinite(options.input_lr))
    throw OptionError("input_lr", "must be a finite number >= 0");
  if (options.eval.kind == EvalSchedule::Kind::kEveryMegaBatches && options.eval.mega_batches == 0)
    throw OptionError("eval_every", "must be at least one mega-batch");
}

void ValidateBf16Weights(const TrainOptions& options, const SchedulerOptions& scheduling) {
  if (options.bf16_weights && (!MergesBf16Weights(scheduling) || options.math != kernels::OutputMath::kBf16))
    throw OptionError("weights", "bf16 is for devices of the dense step whose merges run on the host, with the "
                                 "output products in bf16");
}

bool MergesBf16Weights(const SchedulerOptions& scheduling) {
  // A GPU replica in bf16 is merged through its bf16 host mirror: the GPU merges read fp32 in place.
  return !scheduling.devices.empty() && !scheduling.sampled_output.enabled && !MergesOnGpus(scheduling);
}

void ValidateSchedulerOptions(const SchedulerOptions& scheduling) {
  // Written so that NaN fails every check.
  const merge::MergeOptions& rule = scheduling.merge_rule;
  if (!(rule.momentum >= 0 && rule.momentum < 1)) throw OptionError("momentum", "must be in [0, 1)");
  if (!(rule.pert_threshold >= 0)) throw OptionError("pert_threshold", "must be >= 0");
  if (!(rule.pert_delta >= 0 && rule.pert_delta < 1)) throw OptionError("pert_delta", "must be in [0, 1)");
  if (!(scheduling.batch_min >= 0)) throw OptionError("batch_min", "must be >= 0");
  if (!(scheduling.beta >= 0)) throw OptionError("beta", "must be >= 0");
  if (!(scheduling.row_cost_s >= 0) || !std::isfinite(scheduling.row_cost_s))
    throw OptionError("row_cost", "must be >= 0");
  if (!(scheduling.merge_cost_s >= 0) || !std::isfinite(scheduling.merge_cost_s))
    throw OptionError("merge_cost", "must be >= 0");
  if (!(rule.elastic_alpha >= 0 && rule.elastic_alpha <= 1))
    throw OptionError("elastic_alpha", "must be in [0, 1]");
  using Merge = SchedulerOptions::Merge;
  const bool one_step_merge = scheduling.merge == Merge::kGradient || scheduling.merge == Merge::kCrossbow;
  if (one_step_merge != (scheduling.schedule == SchedulerOptions::Schedule::kSync))
    throw OptionError("merge", "gradient and crossbow combine one step per device and need the sync schedule, "
                               "and the sync schedule needs one of them");
  const bool elastic_force = MergesByElasticForce(scheduling);
  if (scheduling.devices.empty()) throw OptionError("devices", "lists no device");
  if (scheduling.merge == Merge::kCopy && scheduling.devices.size() != 1)
    throw OptionError("devices", "must be one device for the copy merge (single)");
  if (!scheduling.heterogeneity.speed.empty() && scheduling.heterogeneity.speed.size() != scheduling.devices.size())
    throw OptionError("speed", "has " + std::to_string(scheduling.heterogeneity.speed.size()) + " values for " +
                                   std::to_string(scheduling.devices.size()) + " devices");
  if (elastic_force && rule.momentum_mode == merge::MomentumMode::kNesterov)
    throw OptionError("momentum_mode", "nesterov does not apply to elastic-force merges (EASGD, CROSSBOW)");
  if (!scheduling.device_rank.empty() && scheduling.device_rank.size() != scheduling.devices.size())
    throw OptionError("devices", "has " + std::to_string(scheduling.device_rank.size()) + " owning ranks for " +
                                     std::to_string(scheduling.devices.size()) + " devices");
  const bool gpus_only = std::all_of(scheduling.devices.begin(), scheduling.devices.end(),
                                     [](const engine::DeviceSpec& d) { return d.kind == engine::DeviceKind::kCuda; });
  const bool one_rank = RankCount(scheduling) <= 1;
  const bool nccl = scheduling.collective == merge::CollectiveKind::kNccl;
  using MergeOn = SchedulerOptions::MergeOn;
  if (scheduling.merge_on == MergeOn::kGpus && !gpus_only)
    throw OptionError("merge_on", "gpus needs every device to be a GPU");
  if (scheduling.merge_on == MergeOn::kGpus && !one_rank && !nccl)
    throw OptionError("merge_on", "gpus across ranks runs the nccl collective, not " +
                                      std::string(merge::CollectiveName(scheduling.collective)));
  if (scheduling.merge_on == MergeOn::kGpus && scheduling.collective != merge::CollectiveKind::kPartitionedSum && !nccl)
    throw OptionError("merge_on", "gpus runs the ring or nccl collective, not " +
                                      std::string(merge::CollectiveName(scheduling.collective)));
  // Across ranks NCCL carries the hierarchical merge only: Adasum and the elastic force read every
  // replica, which the ranks exchange through host mirrors.
  if (nccl && !one_rank && !MergesByWeightedSum(scheduling))
    throw OptionError("collective", "nccl across ranks carries the weighted-sum merges (adaptive, elastic without "
                                    "an elastic force, sync): this merge needs every replica on every rank");
  if (nccl && !MergesOnGpus(scheduling))
    throw OptionError("collective", "nccl merges replicas on GPUs: it needs every device of every rank to be a GPU, "
                                    "and merges on the GPUs (not --merge-on host)");
}

int RankCount(const SchedulerOptions& scheduling) {
  return scheduling.device_rank.empty() ? 1 : *std::max_element(scheduling.device_rank.begin(), scheduling.device_rank.end()) + 1;
}

bool MergesOnGpus(const SchedulerOptions& scheduling) {
  const bool gpus_only = std::all_of(scheduling.devices.begin(), scheduling.devices.end(),
                                     [](const engine::DeviceSpec& d) { return d.kind == engine::DeviceKind::kCuda; });
  const bool one_rank = RankCount(scheduling) <= 1;
  // Across ranks only NCCL spans the processes, and only for the weighted sums (ValidateEngine).
  const bool gpu_collective =
      scheduling.collective == merge::CollectiveKind::kNccl ||
      (one_rank && scheduling.collective == merge::CollectiveKind::kPartitionedSum);
  const bool across_ranks_ok = one_rank || MergesByWeightedSum(scheduling);
  return scheduling.merge_on != SchedulerOptions::MergeOn::kHost && gpus_only && gpu_collective && across_ranks_ok;
}

bool KeepsPreviousModel(const SchedulerOptions& scheduling) {
  return !(scheduling.merge == SchedulerOptions::Merge::kCopy && !MergesOnGpus(scheduling));
}

bool RollbackLendsGlobalModel(const SchedulerOptions& scheduling) {
  return !KeepsPreviousModel(scheduling) && scheduling.schedule != SchedulerOptions::Schedule::kSync &&
         scheduling.devices.size() == 1 && scheduling.devices[0].kind == engine::DeviceKind::kCpu;
}

std::vector<uint64_t> EvalSample(uint64_t test_rows, const TrainOptions& options) {
  // Its own stream of the seed: the sample must not move when the shuffling's use of it changes.
  return engine::SampleEvalRows(test_rows, options.eval_rows, options.seed ^ 0x6576616c2d726f77ull);
}

bool MergesByWeightedSum(const SchedulerOptions& scheduling) {
  using Merge = SchedulerOptions::Merge;
  return scheduling.merge == Merge::kNormalized || scheduling.merge == Merge::kGradient ||
         (scheduling.merge == Merge::kAverage && scheduling.merge_rule.elastic_alpha <= 0);
}

bool MergesByElasticForce(const SchedulerOptions& scheduling) {
  using Merge = SchedulerOptions::Merge;
  return scheduling.merge == Merge::kCrossbow || (scheduling.merge == Merge::kAverage && scheduling.merge_rule.elastic_alpha > 0);
}

uint64_t TotalTrainingRows(const TrainOptions& options, uint64_t rows_per_epoch,
                           const std::string& source) {
  const double requested = options.epochs * double(rows_per_epoch);
  if (requested > 1e15) throw OptionError("epochs", "is too large");
  const uint64_t total = uint64_t(std::llround(requested));
  if (total == 0) {
    std::ostringstream text;  // 1e-09, where to_string would say 0.000000
    text << options.epochs << " is less than one row of " << source << " (" << rows_per_epoch << " rows an epoch)";
    throw OptionError("epochs", text.str());
  }
  return total;
}

}  // namespace xmlt::scheduler
