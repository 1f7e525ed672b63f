// A dataset made of some rows of another, in the order given: held-out slices and search sets.
#pragma once

#include <cstdint>
#include <vector>

#include "data/dataset.h"

namespace xmlt::data {

// Rows `rows` of `dataset` (each < num_rows, repeats allowed), with its shape and source; throws
// std::out_of_range for a row past the end.
Dataset SelectRows(const Dataset& dataset, const std::vector<uint64_t>& rows);

}  // namespace xmlt::data
