// Evaluation across the devices of a run: every surviving device scores its own contiguous share
// of the rows at once, and the shares are summed in device order.
#pragma once

#include <optional>
#include <vector>

#include "data/dataset.h"
#include "engine/evaluator.h"
#include "kernels/model.h"
#include "scheduler/device_pool.h"

namespace xmlt::run {

// Scores `model` on `rows` of `test` (call between mega-batches). A device whose share fails is
// dropped as in training (a lost context with every logical device of its GPU) and the evaluation
// is scored again on the devices left: an error in evaluation does not end the run while a device
// remains. With none left it returns nothing, every device dropped with its fault: the run stops
// as when its last device fails in training, checkpoint first. Across ranks the ranks would have
// to agree on the new device set first, so there the first error still ends the run.
std::optional<engine::Evaluation> EvaluateOnDevices(scheduler::DevicePool& pool, const kernels::Model<float>& model,
                                                    const data::Dataset& test, const std::vector<uint64_t>& rows);

}  // namespace xmlt::run
