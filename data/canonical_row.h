// The readers' form of a row, whichever way the row came in (a line of text, text_rows.cc; CSR
// arrays from memory, memory_dataset.cc): feature ids ascending and unique, the values of a repeated
// feature id summed in input order; label ids ascending and unique, a repeated label kept once.
// Training on a row must not depend on how it came in, so both paths call these: one spelling of the rules.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace xmlt::data {

struct FeatureEntry {
  uint32_t id;
  float value;
};

struct SummedFeatures {
  size_t size = 0;            // the row's entries after summing: [begin, begin + size)
  bool summed = false;        // at least one repeated id was summed (a warning for the text readers)
  bool out_of_range = false;  // a sum left the float range: the row is refused, the entries are left half-done
  uint32_t out_of_range_id = 0;  // the id whose values did, as stored (zero-based)
};

// Sorts [begin, end) by id and sums the values of repeated ids in place. Stable, so repeated ids
// are summed in input order and the float result is the same however the row was handed in. Each
// value was checked alone; a sum that leaves the float range stops here, since an infinite value
// would poison training. A row already ascending and unique is left untouched.
SummedFeatures SortAndSumFeatures(FeatureEntry* begin, FeatureEntry* end);

// Sorts [begin, end) and keeps each id once; returns how many ids remain from `begin`.
size_t SortAndDedupLabels(uint32_t* begin, uint32_t* end);

// The problem both paths report when SortAndSumFeatures refuses a row; `shown_id` is the id as the
// input spells it (one-based in a one-based file). Each caller says where (file and line, or row).
std::string RepeatedFeatureSumProblem(uint64_t shown_id);

}  // namespace xmlt::data
