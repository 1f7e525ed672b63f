// The learning-rate schedules; see lr_schedule.h.
#include "scheduler/lr_schedule.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace xmlt::scheduler {

LrSchedule ParseLrSchedule(const std::string& text) {
  if (text == "constant") return LrSchedule::kConstant;
  if (text == "cosine") return LrSchedule::kCosine;
  throw std::invalid_argument("--lr-schedule must be constant or cosine, not '" + text + "'");
}

const char* LrScheduleName(LrSchedule schedule) {
  return schedule == LrSchedule::kCosine ? "cosine" : "constant";
}

double LrScale(LrSchedule schedule, uint64_t rows_done, uint64_t total_rows) {
  if (schedule == LrSchedule::kConstant) return 1.0;
  const double progress = total_rows == 0 ? 0.0 : std::min(1.0, double(rows_done) / double(total_rows));
  return 0.5 * (1.0 + std::cos(M_PI * progress));
}

}  // namespace xmlt::scheduler
