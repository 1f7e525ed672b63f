// --lr auto: the learning rate found the way the Adaptive SGD paper finds it (section 5.1: "gridding
// its range in powers of 10 and selecting the value that achieves the best accuracy"), made cheap
// enough to run before every training run: each candidate trains a fresh copy of the run's initial
// model on one device (LrSearchDevice) for a bounded number of batches of the training rows, and is
// scored on a seeded held-out slice of the training rows (never on the test set).
//
// The pick is one grid step below the candidate with the best held-out P@1. A short run favours
// large steps, which then cost accuracy over a whole run (on Delicious the short-run winner
// diverged); one step down came close to the best fixed rate on every set tried, the one where the
// winner itself was the best included (measured: docs/experiments/defaults.md).
#pragma once

#include <cstdint>
#include <vector>

#include "data/dataset.h"
#include "engine/device_spec.h"
#include "kernels/model.h"
#include "scheduler/train_options.h"

namespace xmlt::run {

struct LrCandidate {
  double lr = 0;
  double heldout_p1 = 0;    // P@1 on the held-out slice after the candidate's batches
  double heldout_loss = 0;  // its mean cross-entropy there (infinity when the candidate diverged)
  bool diverged = false;
};

struct LrSearchResult {
  std::vector<LrCandidate> candidates;  // in grid order
  double winner = 0;                    // the best held-out P@1; ties go to the lower loss
  double picked = 0;                    // the grid value below the winner (the winner if lowest)
  uint64_t search_rows = 0, heldout_rows = 0;
  uint64_t batches_per_candidate = 0;
  double seconds = 0;
  bool sampled = false;  // the candidates trained with SLIDE's sampled step
};

// Powers of 10 and their halves, 0.005 to 5: the range in which the defaults' batch of 128 rows
// trains this model family.
std::vector<double> LrSearchGrid();

// The rows the search trains on and the held-out rows it scores on: a seeded shuffle of 0..rows-1
// cut after the held-out tenth (at least 1 row, at most 5,000). Throws std::invalid_argument with
// fewer than 2 rows.
struct LrSearchSplit {
  std::vector<uint64_t> heldout, search;
};
LrSearchSplit SplitForLrSearch(uint64_t rows, uint64_t seed);

// Where a run on `devices` searches: its first GPU when every device is a GPU, so that the search
// sees the arithmetic the run trains with (--math tf32 included) at the GPU's speed; the CPU
// otherwise, and in a run of several ranks, whose ranks must all pick the same rate and may not
// all have that GPU.
engine::DeviceSpec LrSearchDevice(const std::vector<engine::DeviceSpec>& devices, int ranks);

// The held-out slice is SplitForLrSearch's; the batches per candidate: two passes over the
// remaining rows, at most 100 batches; each candidate trains on `device`, with SLIDE's sampled
// output layer when `sampled.enabled` (--algo slide: the search steps as the run will). Throws
// std::invalid_argument with fewer than 2 training rows. Only a divergence puts a candidate out: a
// candidate whose run fails otherwise (a device error: out of memory, a lost GPU) ends the search
// with a std::runtime_error naming the device, the rate and the error.
LrSearchResult SearchLearningRate(const data::Dataset& train, const kernels::ModelShape& shape,
                                  const scheduler::TrainOptions& options, const engine::DeviceSpec& device = {},
                                  const engine::SampledOutputOptions& sampled = {});

}  // namespace xmlt::run
