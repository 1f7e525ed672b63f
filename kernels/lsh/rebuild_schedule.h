// When SLIDE rebuilds its hash tables: the weights move fast early in training and slowly later,
// so the tables are rebuilt after `first` updates, then after gaps that each grow by `growth`
// (SLIDE's exponentially decaying rebuild rate; its paper starts at 50 updates). A function of the
// update count alone, so that a resumed run rebuilds where the uninterrupted one did.
#pragma once

#include <cstdint>

namespace xmlt::kernels::lsh {

class RebuildSchedule {
 public:
  // Throws std::invalid_argument for first = 0 or growth < 1.
  explicit RebuildSchedule(uint64_t first = 50, double growth = 1.1);
  // Whether the tables are rebuilt after update number `updates` (1-based): the points are
  // first, first + round(first * growth), ..., each gap round(previous gap * growth), at least 1.
  bool DueAfter(uint64_t updates) const;
  // The first rebuild point after `updates`.
  uint64_t NextAfter(uint64_t updates) const;

 private:
  uint64_t first_;
  double growth_;
};

}  // namespace xmlt::kernels::lsh
