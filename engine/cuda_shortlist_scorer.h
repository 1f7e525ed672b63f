// The shortlists' scorer on a GPU (engine/shortlist_scorer.h), built only with the CUDA backend.
#pragma once

#include <memory>

#include "engine/shortlist_scorer.h"

namespace xmlt::engine {

std::unique_ptr<ShortlistScorer> MakeCudaShortlistScorer(const DeviceSpec& spec, const kernels::Model<float>& mlp,
                                                         uint32_t k, kernels::OutputMath math,
                                                         const data::Dataset& dataset);

}  // namespace xmlt::engine
