// Shuffled epochs of labeled rows; see epoch_sampler.h.
#include "scheduler/epoch_sampler.h"

#include <algorithm>
#include <stdexcept>

namespace xmlt::scheduler {

EpochSampler::EpochSampler(const data::Dataset& train, uint64_t seed)
    : rng_(seed ^ 0x9e3779b97f4a7c15ULL) {
  // Rows without labels carry no training signal under the uniform-target loss.
  order_.reserve(train.num_rows());
  for (uint64_t r = 0; r < train.num_rows(); ++r)
    if (train.labels.RowSize(r) > 0) order_.push_back(r);
  if (order_.empty()) throw std::invalid_argument(train.source + ": no training row has a label");
  cursor_ = order_.size();  // the first Take shuffles
}

size_t EpochSampler::Take(size_t max, uint64_t* out) {
  if (cursor_ == order_.size()) {
    std::shuffle(order_.begin(), order_.end(), rng_);
    cursor_ = 0;
  }
  const size_t count = std::min(max, order_.size() - cursor_);
  std::copy(order_.begin() + cursor_, order_.begin() + cursor_ + count, out);
  cursor_ += count;
  return count;
}

}  // namespace xmlt::scheduler
