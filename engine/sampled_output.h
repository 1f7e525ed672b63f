// The settings of SLIDE's sampled output layer (kernels/lsh/sampled_step.h): which hash family and
// how many tables, how large an active set, how often the tables are rebuilt. A CPU device trains
// with it under --algo slide, or as a device of a multi-device run (--cpu-output sampled).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace xmlt::engine {

struct SampledOutputOptions {
  bool enabled = false;
  std::string hash = "dwta";   // "dwta" or "simhash"
  size_t k = 8, l = 50;        // codes per key, tables
  int bucket_bits = 18;        // at most 2^bucket_bits buckets a table
  size_t bucket_cap = 128;     // labels taken from one bucket
  size_t min_active = 1000;    // random labels pad an active set to this size
  uint64_t first_rebuild = 50;  // updates before the tables are rehashed the first time
  double rebuild_growth = 1.1;  // each gap between rehashes this much longer than the last
  bool weight_padding = true;   // the padding labels weighted by the labels each stands for (see below)
  uint64_t seed = 1;
  bool report_active_sets = false;  // the device says on stderr, when done, how large its active sets were

  // Bytes the tables take for `labels` labels (codes, bucket offsets, sorted ids).
  uint64_t TableBytes(uint64_t labels) const;
  // SLIDE's published settings by the output layer's size: DWTA with K=8, L=50 for Amazon-670K's
  // 670,091 labels; SimHash with K=9, L=50 for Delicious-200K's 205,443 and anything smaller.
  static SampledOutputOptions PresetFor(uint64_t labels);
  // Whether the padding is weighted by default: where the labels are at most kMaxWeightedRatio
  // times the active set's minimum. Each drawn label's weight is log(left out / drawn), and its
  // variance grows with that ratio: weighted runs beat SLIDE's softmax at 4.9x (Delicious, 983
  // labels, 200 active) and held at 6.8x (EURLEX57K), and collapsed at 670x (the Amazon-670K shape,
  // 1,000 active), where the unweighted one learned (measured: docs/benchmarks/slide.md).
  static constexpr uint64_t kMaxWeightedRatio = 64;
  static bool WeightPaddingFor(uint64_t labels, uint64_t min_active);
};

}  // namespace xmlt::engine
