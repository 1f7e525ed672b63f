// The virtual clock's default costs: what a row and a merge cost on a nominal device, from the
// model's shape and the training data alone. Measured on the run's own first mega-batch instead,
// they depended on the moment (identical runs on a busy machine reported different virtual
// times), and two algorithms compared on the virtual clock compared two clocks. With the model
// every run of a model on the same data charges rows and merges alike, on any machine.
//
// Nominal device: 10 GFLOP/s for the step's products and 10 GB/s for a merge's memory traffic,
// about what one core of the CPUs this engine is tested on reaches, as the costs measured on a
// first mega-batch showed (measured: docs/devices.md, "Clocks"). Only ratios between virtual times
// mean anything; absolute virtual seconds are the nominal device's.
#pragma once

#include "data/dataset.h"
#include "engine/sampled_output.h"
#include "kernels/model.h"

namespace xmlt::scheduler {

inline constexpr double kNominalFlopsPerSecond = 1e10;
inline constexpr double kNominalBytesPerSecond = 1e10;

struct ClockCosts {
  double row_cost_s = 0;    // one training row's forward and backward pass and update
  double merge_cost_s = 0;  // one parameter of one replica in one merge
};

// `sampled`: every device trains with the sampled output layer (SLIDE), whose products span the
// active labels (at least `min_active`) rather than all of them.
ClockCosts ModelClockCosts(const kernels::ModelShape& shape, const data::Dataset& train,
                           const engine::SampledOutputOptions& sampled, bool every_device_sampled);

}  // namespace xmlt::scheduler
