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

struct MemoryPlan {
  std::vector<DeviceMemory> devices;
  uint64_t global = 0;      // the global model, its previous value and the rollback copy
  uint64_t scheduler = 0;   // the row arena and sampler (and across ranks, the sum's scratch)
  uint64_t checkpoint = 0;  // transient copies while a checkpoint is written or read
  uint64_t host_total() const;  // everything in host memory (CPU devices included)
  std::string ToString() const;  // per-device and host lines, in MiB
};

MemoryPlan PlanMemory(const kernels::ModelShape& shape, const TrainOptions& options, const EngineOptions& engine,
                      const engine::DeviceLimits& limits, uint64_t training_rows, bool checkpoints);

// Throws std::runtime_error with the plan when it needs more than `host_available` bytes of host
// memory (0 = unknown: not checked) or more than a GPU's free memory (gpu_free[ordinal]; 0 = not
// checked).
void CheckMemoryFits(const MemoryPlan& plan, uint64_t host_available, const std::vector<uint64_t>& gpu_free);

}  // namespace xmlt::scheduler
