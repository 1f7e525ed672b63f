// The MLP's top k labels of training rows on one device, for the ranker's shortlists
// (run/device_shortlists.h): the host's cores for CPU devices, the GPU for a CUDA device.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "data/dataset.h"
#include "engine/device_spec.h"
#include "kernels/model.h"
#include "kernels/output_math.h"

namespace xmlt::engine {

class ShortlistScorer {
 public:
  virtual ~ShortlistScorer() = default;
  // Writes count x k labels of the given rows into `top` (best first, ties to the lower id), chunk
  // by chunk; once `stopped` (when given) is true between two chunks, the rest is left as it was.
  virtual void Score(const data::Dataset& dataset, const uint64_t* rows, size_t count, uint32_t* top,
                     const std::function<bool()>& stopped) = 0;
};

// The host's scorer, for CPU devices: TopLabelsOfRows in bf16 when `math` is, else fp32.
std::unique_ptr<ShortlistScorer> MakeHostShortlistScorer(const kernels::Model<float>& mlp, uint32_t k,
                                                         kernels::OutputMath math);

// A scorer of `mlp`'s top k on the device `spec` names (engine/device_factory.cc), its products in `math`: on a CPU device the
// host's cores (TopLabelsOfRows; fp32 unless math is bf16), on a GPU the forward pass and the
// top-k kernel there (a copy of the model in its memory, chunks bounded by `dataset`'s largest
// rows). Throws std::invalid_argument for a device this build cannot run.
std::unique_ptr<ShortlistScorer> MakeShortlistScorer(const DeviceSpec& spec, const kernels::Model<float>& mlp,
                                                     uint32_t k, kernels::OutputMath math,
                                                     const data::Dataset& dataset);

}  // namespace xmlt::engine
