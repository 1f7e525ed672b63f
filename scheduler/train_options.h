// The knobs of a training run, as plain values (the CLI fills them; defaults live here).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/device_spec.h"
#include "engine/heterogeneity.h"
#include "engine/sampled_output.h"
#include "kernels/output_math.h"
#include "kernels/propensity.h"
#include "merge/collective.h"
#include "merge/merger.h"
#include "scheduler/lr_schedule.h"

namespace xmlt::scheduler {

// Evaluate after every epoch (default), only at the end, or every N mega-batches.
struct EvalSchedule {
  enum class Kind { kEachEpoch, kEnd, kEveryMegaBatches } kind = Kind::kEachEpoch;
  uint32_t mega_batches = 0;
};

struct TrainOptions {
  double epochs = 20;            // passes over the training rows (fractions allowed)
  uint32_t batch = 128;          // rows per batch
  float lr = 0.3f;               // learning rate for a batch of `batch` rows
  LrSchedule lr_schedule = LrSchedule::kConstant;  // a factor on lr over the run (lr_schedule.h)
  float local_momentum = 0.9f;   // heavy-ball momentum of each replica's SGD
  float weight_decay = 0;        // L2 weight decay of each replica's step (engine/step_settings.h)
  float dropout = 0;             // dropout on the hidden activations in training, in [0, 1)
  float input_lr = 0;            // > 0: the first layer's weights step with Adagrad at this rate for
                                 // lr (each step's rate in proportion); 0: with the other layers' rule
  std::vector<uint32_t> hidden{128};
  uint32_t mega_batch = 100;     // batches per mega-batch (the unit of --eval-every)
  // The run's first mega-batches grow from one batch per device, doubling, up to mega_batch
  // (run/mega_batch_work.h says why).
  bool mega_batch_warmup = false;
  EvalSchedule eval;
  uint64_t eval_rows = 0;        // evaluate on a fixed seeded sample of this many test rows; 0 = all
  bool final_eval_full = true;   // the run's last evaluation on the whole test set regardless
  // --propensity's A and B: the PSP@k of every evaluation depend on them (kernels/propensity.h).
  kernels::PropensityModel propensity;
  kernels::OutputMath math = kernels::OutputMath::kFp32;  // the output layer's training products
  // --optimizer-state bf16: the CPU dense step keeps its momentum and Adagrad's squares in bf16
  // (engine/step_settings.h); GPUs and the sampled step keep fp32 whatever this says.
  bool bf16_optimizer_state = false;
  // --weights bf16: the CPU dense step keeps the weights themselves in bf16, with no fp32 copy
  // (engine/step_settings.h): one CPU device with the copy merge (--algo single) and bf16 products.
  bool bf16_weights = false;
  double divergence_factor = 100;  // a batch loss above this x the first batch's diverged; 0 = off
  uint64_t seed = 1;             // initialization and shuffling
};

// The devices and how batches are dispatched, sized and merged (--algo and the presets set these),
// as typed values: the command line parses its flags once, at its edge.
struct SchedulerOptions {
  // dynamic: the next batch to whichever device is free; static: equal shares per mega-batch;
  // sync: every round each device takes --batch / n rows from the same model, merged every round.
  enum class Schedule { kDynamic, kStatic, kSync } schedule = Schedule::kDynamic;
  bool scale_batches = true;     // Algorithm 1 after every mega-batch (dynamic dispatch only)
  enum class Merge { kNormalized, kAverage, kAdasum, kCrossbow, kGradient, kCopy } merge = Merge::kNormalized;
  merge::CollectiveKind collective = merge::CollectiveKind::kPartitionedSum;
  // Where the merges run when every device is a GPU (merge/gpu/): auto: on the GPUs with every
  // device a GPU on one rank and a ring or nccl collective, on the host mirrors otherwise; host:
  // always on the host mirrors (the path mixed CPU+GPU lists take); gpus: on the GPUs, refused
  // where that is not possible.
  enum class MergeOn { kAuto, kHost, kGpus } merge_on = MergeOn::kAuto;
  std::vector<engine::DeviceSpec> devices = engine::ParseDeviceList("cpu:4");
  double batch_min = 0;          // b_min; 0 = batch / 8
  double beta = 0;               // Algorithm 1's beta; 0 = b_min / 2
  // The merge's own settings, as the merges take them (merge/merger.h): the global momentum gamma
  // and its mode (nesterov: replicas start from the look-ahead), the normalized merge's
  // perturbation, and the elastic force's pull (average: > 0 turns on EASGD's; crossbow: 0 = 1/n).
  merge::MergeOptions merge_rule;
  engine::HeterogeneitySpec heterogeneity;  // --speed (one per device, or none) and --hetero
  engine::SampledOutputOptions sampled_output;  // CPU devices train with SLIDE's output layer (--algo slide)
  enum class Clock { kWall, kVirtual } clock = Clock::kVirtual;
  double row_cost_s = 0;         // virtual clock: seconds per row; 0 = the cost model's (or measured)
  double merge_cost_s = 0;       // virtual clock: seconds per parameter and replica of one merge;
                                 // 0 = the cost model's (or measured)
  // Costs not given come from the cost model (virtual_clock_costs.h), the same for every run of a
  // model on the same data; measured (--clock-costs measured) they are timed on the run's own
  // first mega-batch and merge, and differ from run to run with the machine's load.
  bool measure_clock_costs = false;
  // Several processes (MPI ranks, each with its own devices): `devices` lists every device of every
  // rank, rank after rank, and device_rank[i] is the rank that owns device i. Empty: one process
  // owns them all. The group the ranks run in is no option: the run is handed it beside these
  // (run/multi_device_run.h), and every rank's scheduler runs the same plan there.
  std::vector<int> device_rank;
};

// A setting no run can use, under the name the options give it ("batch", "pert_threshold"); the
// command line says which flag that is (apps/setting_flags.h).
class OptionError : public std::invalid_argument {
 public:
  OptionError(const std::string& setting, const std::string& problem)
      : std::invalid_argument(setting + " " + problem), setting_(setting), problem_(problem) {}
  const std::string& setting() const { return setting_; }
  const std::string& problem() const { return problem_; }

 private:
  std::string setting_, problem_;
};

// How many ranks the run spans: device_rank's owners (every rank owns devices), 1 without it.
int RankCount(const SchedulerOptions& scheduling);

// Throw OptionError for values no run can use.
void ValidateTrainOptions(const TrainOptions& options);
void ValidateSchedulerOptions(const SchedulerOptions& scheduling);
// bf16_weights where MergesBf16Weights is false or the products are not in bf16.
void ValidateBf16Weights(const TrainOptions& options, const SchedulerOptions& scheduling);
// Whether the run's devices can keep their weights in bf16 with no fp32 copy: every device of the
// dense step (CPUs, and GPUs through bf16 host mirrors), on any number of ranks, with the merges on
// the host. Every host merge takes bf16 replicas (the copy merge of one device as a stream, the
// others block by block: merge/replica_blocks.h); across ranks the rank sum adds fp32 partial sums
// a chunk at a time, and the mirrors of other ranks' replicas are bf16. The GPU merges
// (MergesOnGpus) read fp32 replicas in place.
bool MergesBf16Weights(const SchedulerOptions& scheduling);

// The test rows every evaluation of the run scores but, with final_eval_full, the last: a sample
// of --eval-rows rows drawn from the run's seed, or all of them.
std::vector<uint64_t> EvalSample(uint64_t test_rows, const TrainOptions& options);

// Rows a run trains on: epochs x rows with labels, rounded; throws when that is 0 or absurd.
uint64_t TotalTrainingRows(const TrainOptions& options, uint64_t rows_per_epoch,
                           const std::string& source);

// The merges that are one weighted sum of the replicas (plus the global momentum): normalized,
// average without an elastic force, gradient. Across ranks they run hierarchically, on the rank
// sum collective, and never read the mirrors of the other ranks' replicas.
bool MergesByWeightedSum(const SchedulerOptions& scheduling);

// The merges that pull each replica toward the center by an elastic force instead of replacing it:
// CROSSBOW, and the average with a pull strength (EASGD).
bool MergesByElasticForce(const SchedulerOptions& scheduling);

// Whether a run's merges run on the GPUs (merge_on above): decided once from the device list, since
// the devices that drop out of a run leave GPUs only where there were GPUs only. Across ranks only
// with --collective nccl and a weighted-sum merge (one communicator over every rank's GPUs).
bool MergesOnGpus(const SchedulerOptions& scheduling);

// Whether the run keeps w_p, the global model's previous value, beside w: every merge does but
// the one-replica copy on the host (--algo single on a CPU), whose w is its replica's and which has
// no global momentum to take from w - w_p. A copy of the model less there (memory_plan.cc).
bool KeepsPreviousModel(const SchedulerOptions& scheduling);

// Whether the latest rollback state lends w from the global model instead of holding a copy
// (run/rollback.h): where the merge copies the one CPU replica over w once a mega-batch, not every
// round, the mega-batch is known sound before that merge, which then trusts the state by taking
// w's buffer. One copy of the model for rollbacks instead of two (memory_plan.cc).
bool RollbackLendsGlobalModel(const SchedulerOptions& scheduling);

}  // namespace xmlt::scheduler
