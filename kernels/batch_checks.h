// What a batch must be before device kernels index it unchecked (the CUDA backend stages nothing
// else): CSR offsets of rows + 1 entries that start at 0, never decrease and end at the entry
// count; as many values as feature ids; every id within the model; and each row's labels strictly
// increasing, as SparseBatch promises, so that no label appears twice in a row (the softmax's
// gradient writes each label of a row from its own thread, and two writes of one entry would race).
#pragma once

#include <cstdint>
#include <string>

#include "data/sparse_batch.h"

namespace xmlt::kernels {

// Throws std::invalid_argument "<who>: <problem>" naming the row or id at fault.
void CheckBatchForModel(const data::SparseBatch& batch, uint64_t num_features, uint64_t num_labels,
                        const std::string& who);

}  // namespace xmlt::kernels
