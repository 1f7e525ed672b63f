// The ranker's shortlists (the MLP's top k labels of every training row) scored by the run's own
// devices, in parallel, after training: each device takes a contiguous near-equal share of the
// rows, in device order. The CPU devices' shares are scored together on the host's cores, which
// they share, and each GPU's on that GPU (engine/shortlist_scorer.h). The lists do not depend on
// the thread count; they do on the device list, since a GPU and the host round the products apart.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "engine/device_spec.h"
#include "kernels/model.h"
#include "kernels/output_math.h"

namespace xmlt::run {

// Where the shortlists are scored: this rank's devices and the run's --math (the host computes in
// bf16 when that is bf16, else fp32). No devices: the host, in fp32.
struct ShortlistDevices {
  std::vector<engine::DeviceSpec> devices;
  kernels::OutputMath math = kernels::OutputMath::kFp32;
};

// Rows x k labels, best first. A stop (`stopped` true) between chunks leaves the rest zeros, for
// the caller to drop. A GPU that fails (it cannot be set up, or a fault while it scores) does not
// end the stage after a whole training run: once every share has ended, the host scores that
// GPU's shares again, and `faults` (when given) gets a line naming the device and the error. An
// error of the host's own share is rethrown.
std::vector<uint32_t> ShortlistsOnDevices(const ShortlistDevices& where, const kernels::Model<float>& mlp,
                                          const data::Dataset& train, uint32_t k,
                                          const std::function<bool()>& stopped = {},
                                          std::vector<std::string>* faults = nullptr);

}  // namespace xmlt::run
