// How the learning rate changes over a run (--lr-schedule): a factor on every device's rate, a
// function of the rows the run has trained out of the rows it trains in all, so that a resumed run
// follows the schedule of the uninterrupted one.
#pragma once

#include <cstdint>
#include <string>

namespace xmlt::scheduler {

enum class LrSchedule {
  kConstant,  // the factor is 1 throughout
  kCosine,    // 0.5 (1 + cos(pi * progress)): 1 at the start, 0 at the end
};

// "constant" or "cosine"; throws std::invalid_argument naming --lr-schedule for anything else.
LrSchedule ParseLrSchedule(const std::string& text);
const char* LrScheduleName(LrSchedule schedule);

// The factor on the learning rate once `rows_done` of the run's `total_rows` are trained
// (progress = rows_done / total_rows, clamped to [0, 1]; a run of 0 rows is at its start).
double LrScale(LrSchedule schedule, uint64_t rows_done, uint64_t total_rows);

}  // namespace xmlt::scheduler
