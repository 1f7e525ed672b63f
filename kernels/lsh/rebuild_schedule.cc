// SLIDE's decaying rebuild schedule; see rebuild_schedule.h.
#include "kernels/lsh/rebuild_schedule.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace xmlt::kernels::lsh {

RebuildSchedule::RebuildSchedule(uint64_t first, double growth) : first_(first), growth_(growth) {
  if (first == 0) throw std::invalid_argument("the first table rebuild must come after at least one update");
  if (!(growth >= 1.0) || !std::isfinite(growth)) throw std::invalid_argument("the rebuild gap's growth must be >= 1");
}

uint64_t RebuildSchedule::NextAfter(uint64_t updates) const {
  // Walks the points; the gaps grow geometrically, so a run of n updates passes O(log n) of them
  // (O(n / first) when growth is 1).
  uint64_t point = first_, gap = first_;
  while (point <= updates) {
    gap = std::max<uint64_t>(1, uint64_t(std::llround(double(gap) * growth_)));
    point += gap;
  }
  return point;
}

bool RebuildSchedule::DueAfter(uint64_t updates) const {
  return updates > 0 && NextAfter(updates - 1) == updates;
}

}  // namespace xmlt::kernels::lsh
