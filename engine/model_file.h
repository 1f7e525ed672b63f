// The model file: a versioned binary (magic, version, shape, float parameters) closed by an
// XXH3-64 checksum of everything before it. Written atomically; sizes are validated against the
// file's length before anything is allocated from them.
#pragma once

#include <string>

#include "kernels/model.h"

namespace xmlt::engine {

void SaveModel(const kernels::Model<float>& model, const std::string& path);

// Throws data::InputError naming the file for a missing, truncated, corrupt or foreign file.
kernels::Model<float> LoadModel(const std::string& path);

}  // namespace xmlt::engine
