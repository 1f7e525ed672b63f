// Scaling each row's feature vector to unit L2 norm. Raw XML features range from binary indicators
// (Bibtex) to term counts in the tens (Amazon-670K); unit rows make one learning rate fit all.
#pragma once

#include "data/dataset.h"

namespace xmlt::data {

// A dataset sharing `dataset`'s ids and labels with normalized feature values (rows without
// features stay empty).
Dataset NormalizeRowsL2(const Dataset& dataset);

}  // namespace xmlt::data
