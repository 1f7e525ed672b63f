// A mega-batch as the training loop has trained it so far, and how it is kept open in a
// checkpoint when a stop or the run's end cuts it.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>

#include "merge/merger.h"
#include "scheduler/device_pool.h"

namespace xmlt::run {

// Whole, unless the run's end or a stop cut it (planned < mega_batch_rows): then the checkpoint
// keeps it open, and a resumed or extended run completes it.
struct MegaBatchWork {
  scheduler::MegaBatchRun run;
  merge::MergeOutcome merged;  // the last merge's outcome
  double merge_s = 0;          // measured time of the merges
  uint64_t merges = 0;
  uint64_t planned = 0;          // rows dealt out of the mega-batch so far
  uint64_t mega_batch_rows = 0;  // rows of the whole mega-batch
  bool cut_by_end = false;       // the run ended inside it
  bool stopped = false;          // a stop signal ended it early
  bool open() const { return mega_batch_rows > 0; }
};

// The checkpoint's "open_mega_batch".
nlohmann::json OpenMegaBatchToJson(const MegaBatchWork& work);
// `empty` is the pool's empty run, which sizes the per-device counts; throws std::invalid_argument
// (or nlohmann's exceptions) for counts of another shape.
MegaBatchWork OpenMegaBatchFromJson(const nlohmann::json& json, scheduler::MegaBatchRun empty);

// A mega-batch ends at the end of an epoch at the latest, so that evaluations fall on epoch ends
// and a run of whole epochs ends with a whole mega-batch; and it runs on to the epoch's end rather
// than leave less than half a mega-batch there, which would be merged (and rescaled on) alone.
inline uint64_t MegaBatchRowsHere(uint64_t mega_batch_rows, uint64_t rows_to_epoch_end) {
  return rows_to_epoch_end <= mega_batch_rows + mega_batch_rows / 2 ? rows_to_epoch_end : mega_batch_rows;
}

// With --mega-batch-warmup, mega-batch `index` (1-based) of a run holds at most `first_rows` (one
// batch per device) times 2^(index - 1) rows. Early in training the loss surface bends within a few
// steps, and replicas that each took a few steps from one start average to much less than their
// sum: four devices merging every half epoch from the start were well behind one device after
// the first epoch of Bibtex (measured: docs/experiments/multi-device-scaling.md).
// Merging often while the model moves fast, then rarely, costs log2(mega-batch / devices) merges
// more in a run.
inline uint64_t WarmUpMegaBatchRows(uint64_t full_rows, uint64_t first_rows, uint64_t index) {
  if (index == 0 || index > 63 || first_rows == 0) return full_rows;
  const uint64_t doublings = index - 1;
  // first_rows << doublings, unless that passes full_rows (compared without overflowing).
  return first_rows > (full_rows >> doublings) ? full_rows : first_rows << doublings;
}

}  // namespace xmlt::run
