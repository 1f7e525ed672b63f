// The rows a run deals out: the epoch sampler's, and before them the rows of failed batches
// returned to the queue; taken into one arena of row ids per mega-batch, allocated once, which the
// batches point into until their results are back.
#pragma once

#include <cstdint>
#include <vector>

#include "data/dataset.h"
#include "scheduler/epoch_sampler.h"

namespace xmlt::scheduler {

class RowQueue {
 public:
  RowQueue(const data::Dataset& train, uint64_t seed) : sampler_(train, seed) {}

  void SizeArena(size_t rows) { arena_.resize(rows); }
  size_t arena_size() const { return arena_.size(); }
  uint64_t* arena(size_t offset = 0) { return arena_.data() + offset; }

  // Up to `want` rows into the arena at `offset`: returned rows first (each batch entirely from
  // them or entirely new), then the epoch's. Returns how many; fewer at the end of an epoch.
  size_t Take(size_t want, size_t offset);
  // Throws std::logic_error unless `rows` more rows fit the arena at `offset`: a mega-batch's rows
  // never outgrow it.
  void CheckFits(size_t offset, size_t rows) const;
  // The arena's rows [begin, end) go back to the queue, to be trained first.
  void Return(size_t begin, size_t end);
  // Rows until the sampler's epoch ends (returned rows included): where a mega-batch ends at the
  // latest.
  uint64_t ToEpochEnd() const;
  uint64_t rows_per_epoch() const { return sampler_.rows_per_epoch(); }

  // For checkpoints and rollbacks.
  EpochSampler& sampler() { return sampler_; }
  const EpochSampler& sampler() const { return sampler_; }
  std::vector<uint64_t>& returned() { return returned_; }
  const std::vector<uint64_t>& returned() const { return returned_; }

 private:
  EpochSampler sampler_;
  std::vector<uint64_t> returned_;  // rows of failed batches, trained before new ones
  std::vector<uint64_t> arena_;     // the rows of the current mega-batch
};

}  // namespace xmlt::scheduler
