// Hands out training rows in shuffled epochs: only rows with labels, each epoch a fresh
// permutation, and the tail of an epoch handed out as a shorter batch rather than dropped.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "data/dataset.h"

namespace xmlt::scheduler {

class EpochSampler {
 public:
  EpochSampler(const data::Dataset& train, uint64_t seed);  // throws if no row has a label

  // Copies up to `max` rows of the current epoch to `out` and returns how many; when the epoch is
  // exhausted, the next call starts a new, reshuffled one.
  size_t Take(size_t max, uint64_t* out);

  uint64_t rows_per_epoch() const { return order_.size(); }

  // Where the sampler stands, for checkpoints: the epoch's row order, the position in it, and
  // the generator's state (as text). Restore checks that the order is a permutation of this
  // dataset's labeled rows and throws std::invalid_argument otherwise.
  const std::vector<uint64_t>& order() const { return order_; }
  uint64_t cursor() const { return cursor_; }
  std::string GeneratorState() const;
  void Restore(std::vector<uint64_t> order, uint64_t cursor, const std::string& generator_state);

 private:
  std::vector<uint64_t> order_;
  size_t cursor_;
  std::mt19937_64 rng_;
};

}  // namespace xmlt::scheduler
