// The model file: a versioned binary (magic, version, shape, float parameters; version 2 adds the
// shortlist ranker: its shortlist, blend form and weight, pairs and weights) closed by an XXH3-64 checksum of
// everything before it. An MLP alone is written as version 1, which older builds read. Written
// atomically; sizes are validated against the file's length before anything is allocated from
// them.
#pragma once

#include <string>

#include "engine/trained_model.h"
#include "kernels/model.h"

namespace xmlt::engine {

void SaveModel(const TrainedModel& model, const std::string& path);
// The MLP alone.
void SaveModel(const kernels::Model<float>& model, const std::string& path);

// Throws data::InputError naming the file for a missing, truncated, corrupt or foreign file. A
// ranker comes back with its dense lookups rebuilt (kRankerDenseLookupBytes); the file holds only
// its pairs, weights and biases.
TrainedModel LoadModel(const std::string& path);

}  // namespace xmlt::engine
