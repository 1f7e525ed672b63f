// The knobs of a training run, as plain values (the CLI fills them; defaults live here).
#pragma once

#include <cstdint>
#include <vector>

namespace xmlt::scheduler {

// Evaluate after every epoch (default), only at the end, or every N mega-batches.
struct EvalSchedule {
  enum class Kind { kEachEpoch, kEnd, kEveryMegaBatches } kind = Kind::kEachEpoch;
  uint32_t mega_batches = 0;
};

struct TrainOptions {
  double epochs = 20;            // passes over the training rows (fractions allowed)
  uint32_t batch = 128;          // rows per batch
  float lr = 0.3f;               // learning rate for a batch of `batch` rows
  float local_momentum = 0.9f;   // heavy-ball momentum of each replica's SGD
  std::vector<uint32_t> hidden{128};
  uint32_t mega_batch = 100;     // batches per mega-batch (the unit of --eval-every)
  EvalSchedule eval;
  uint64_t seed = 1;             // initialization and shuffling
};

}  // namespace xmlt::scheduler
