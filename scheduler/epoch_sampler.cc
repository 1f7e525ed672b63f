// Shuffled epochs of labeled rows; see epoch_sampler.h.
#include "scheduler/epoch_sampler.h"

#include <algorithm>
#include <sstream>
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

std::string EpochSampler::GeneratorState() const {
  std::ostringstream out;
  out << rng_;
  return out.str();
}

void EpochSampler::Restore(std::vector<uint64_t> order, uint64_t cursor, const std::string& generator_state) {
  if (order.size() != order_.size())
    throw std::invalid_argument("sampler state has " + std::to_string(order.size()) + " rows; this dataset has " +
                                std::to_string(order_.size()) + " labeled rows");
  if (cursor > order.size()) throw std::invalid_argument("sampler position beyond its epoch");
  // A permutation of the same labeled rows: the saved order sorted must equal ours sorted (ours
  // may be in any epoch's order).
  std::vector<uint64_t> sorted_saved = order, sorted_ours = order_;
  std::sort(sorted_saved.begin(), sorted_saved.end());
  std::sort(sorted_ours.begin(), sorted_ours.end());
  if (sorted_saved != sorted_ours) throw std::invalid_argument("sampler state lists rows this dataset does not train on");
  std::istringstream in(generator_state);
  std::mt19937_64 rng;
  in >> rng;
  if (!in) throw std::invalid_argument("sampler generator state is malformed");
  order_ = std::move(order);
  cursor_ = cursor;
  rng_ = rng;
}

}  // namespace xmlt::scheduler
