// The readers' form of a row; see canonical_row.h.
#include "data/canonical_row.h"

#include <algorithm>
#include <cmath>

namespace xmlt::data {

SummedFeatures SortAndSumFeatures(FeatureEntry* begin, FeatureEntry* end) {
  SummedFeatures result;
  result.size = static_cast<size_t>(end - begin);
  // Most rows come sorted: checking is cheaper than sorting.
  bool sorted = true;
  for (size_t i = 1; i < result.size; ++i) {
    if (begin[i].id <= begin[i - 1].id) {
      sorted = false;
      break;
    }
  }
  if (sorted) return result;
  std::stable_sort(begin, end, [](const FeatureEntry& a, const FeatureEntry& b) { return a.id < b.id; });
  FeatureEntry* kept = begin;
  for (const FeatureEntry* e = begin; e < end; ++e) {
    if (kept > begin && (kept - 1)->id == e->id) {
      (kept - 1)->value += e->value;
      if (!std::isfinite((kept - 1)->value)) {
        result.out_of_range = true;
        result.out_of_range_id = e->id;
        return result;
      }
      result.summed = true;
    } else {
      *kept++ = *e;
    }
  }
  result.size = static_cast<size_t>(kept - begin);
  return result;
}

size_t SortAndDedupLabels(uint32_t* begin, uint32_t* end) {
  if (!std::is_sorted(begin, end) || std::adjacent_find(begin, end) != end) {
    std::sort(begin, end);
    end = std::unique(begin, end);
  }
  return static_cast<size_t>(end - begin);
}

std::string RepeatedFeatureSumProblem(uint64_t shown_id) {
  return "the values of repeated feature id " + std::to_string(shown_id) + " sum beyond float range";
}

}  // namespace xmlt::data
