// The virtual clock's cost model; see virtual_clock_costs.h.
#include "scheduler/virtual_clock_costs.h"

#include <algorithm>

namespace xmlt::scheduler {

ClockCosts ModelClockCosts(const kernels::ModelShape& shape, const data::Dataset& train,
                           const engine::SampledOutputOptions& sampled, bool every_device_sampled) {
  const double rows = double(std::max<uint64_t>(train.num_rows(), 1));
  const double entries_per_row = double(train.features.nnz()) / rows;
  // A multiply-add is 2 flops; each layer's products are the forward pass, the gradient of its
  // input and the update of its weights (the first layer's input gradient is not needed, and its
  // forward pass and update touch only the row's features).
  double flops = 2.0 * 2.0 * entries_per_row * double(shape.hidden.front());
  for (size_t i = 0; i + 1 < shape.hidden.size(); ++i)
    flops += 3.0 * 2.0 * double(shape.hidden[i]) * double(shape.hidden[i + 1]);
  const double outputs = every_device_sampled ? double(std::min<uint64_t>(shape.num_labels, sampled.min_active))
                                              : double(shape.num_labels);
  flops += 3.0 * 2.0 * double(shape.hidden.back()) * outputs;
  ClockCosts costs;
  costs.row_cost_s = flops / kNominalFlopsPerSecond;
  // A merge reads each replica's parameter and writes it back, and reads the global model's:
  // three 4-byte floats a parameter and replica.
  costs.merge_cost_s = 3.0 * 4.0 / kNominalBytesPerSecond;
  return costs;
}

}  // namespace xmlt::scheduler
