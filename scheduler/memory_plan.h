// What a run will allocate, worked out before anything is allocated, so that a model or batch
// too large for the machine fails at once with the numbers instead of minutes later (or with the
// kernel's out-of-memory killer).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/device.h"
#include "kernels/model.h"
#include "scheduler/train_options.h"

namespace xmlt::scheduler {

struct DeviceMemory {
  std::string id;
  bool gpu = false;
  int ordinal = 0;  // the GPU, when gpu
  uint64_t params = 0, momentum = 0, workspace = 0, batch = 0;  // bytes on the device
  uint64_t evaluation = 0;   // scoring its share of the test set (host memory for now)
  uint64_t host_mirror = 0;  // a GPU replica's copy in host memory, where host merges run
  uint64_t merge = 0;        // merges on the GPUs: their buffers, on the first replica of each GPU
  uint64_t total() const { return params + momentum + workspace + batch + merge; }  // evaluation excluded
};

// The shortlist ranker's stage after training (run/ranker_stage.h), on the host, once training's
// memory is freed: what it holds besides the data, worked out from counts alone.
struct RankerMemoryShape {
  uint64_t rows = 0;                        // the training rows it fits on
  uint64_t feature_nnz = 0, label_nnz = 0;  // of those rows
  uint64_t holdout_rows = 0;                // the rows its blend is chosen on
  uint32_t shortlist = 0;                   // the MLP's labels per row, at most the labels
  uint64_t pairs = 0;    // its (feature, label) pairs: a bound (run::RankerPairBound) or the count
  uint64_t threads = 1;  // the solver's, each with its own scratch
};

struct RankerMemory {
  uint64_t pairs = 0;       // the pairs planned for
  uint64_t mlp = 0;         // the trained MLP's parameters
  uint64_t forward = 0;     // a forward pass of the MLP over a chunk of rows (the shortlists, the choice)
  uint64_t shortlists = 0;  // every training row's shortlist of label ids
  uint64_t model = 0;       // the pairs (a label id and a weight each), feature offsets, biases
  uint64_t dense = 0;       // the dense lookups of the features that met the most labels
  uint64_t build = 0;       // building the pairs: each feature's rows and the counters, then freed
  uint64_t solver = 0;      // the solver's instances (a row and a sign each) and every thread's scratch
  uint64_t holdout = 0;     // the held-out rows' shortlists: ids, probabilities and linear scores
  // The blend chosen by folds (run/fold_blend_choice.h): each fold's MLP trains as the run did,
  // beside the run's trained MLP, and its ranker is then fitted beside both.
  bool by_folds = false;
  // The peak: the MLP and the shortlists throughout, then the largest of the shortlists' forward
  // pass, the build, the solve and the choice on the held-out rows. 0 without a ranker.
  uint64_t total() const;
};

RankerMemory PlanRankerMemory(const kernels::ModelShape& shape, const RankerMemoryShape& ranker);

struct MemoryPlan {
  std::vector<DeviceMemory> devices;
  // The engine's copies of the model in host memory, each named by its purpose:
  uint64_t global_model = 0;    // w: what the merges make, and what evaluations and checkpoints read
  uint64_t previous_model = 0;  // w_p, for the global momentum (0 where the run keeps none)
  uint64_t rollback = 0;        // the trusted and the latest state's w (lent: RollbackLendsGlobalModel), to roll back a divergence
  uint64_t scheduler = 0;   // the row arena and sampler (and across ranks, the sum's scratch)
  uint64_t checkpoint = 0;  // transient copies while a checkpoint is written or read (PlanMemory says which)
  RankerMemory ranker;      // the ranker's stage after training (none: zeros)
  uint64_t training_total() const;  // everything in host memory while training (CPU devices included)
  uint64_t host_total() const;      // the larger of training_total and the ranker's stage (with its folds)
  std::string ToString() const;  // per-device and host lines, in MiB
};

// The plan of this process, across ranks rank `rank` (device_rank's numbering; 0 in one process).
MemoryPlan PlanMemory(const kernels::ModelShape& shape, const TrainOptions& options, const SchedulerOptions& scheduling,
                      const engine::DeviceLimits& limits, uint64_t training_rows, bool checkpoints, int rank = 0);

// Throws std::runtime_error with the plan when it needs more than `host_available` bytes of host
// memory (0 = unknown: not checked) or more than a GPU's free memory (gpu_free[ordinal]; 0 = not
// checked).
void CheckMemoryFits(const MemoryPlan& plan, uint64_t host_available, const std::vector<uint64_t>& gpu_free);

}  // namespace xmlt::scheduler
