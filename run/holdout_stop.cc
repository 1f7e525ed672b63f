#include "run/holdout_stop.h"

#include <algorithm>

namespace xmlt::run {

bool HoldoutStops(const std::vector<HoldoutScore>& scores, const HoldoutStopRule& rule) {
  if (rule.patience == 0 || scores.size() < size_t(rule.patience) + 1) return false;
  const size_t first_waiting = scores.size() - rule.patience;
  double best = scores[0].score;
  for (size_t i = 1; i < first_waiting; ++i) best = std::max(best, scores[i].score);
  for (size_t i = first_waiting; i < scores.size(); ++i) {
    if (scores[i].score > best + rule.min_gain) return false;
    best = std::max(best, scores[i].score);
  }
  return true;
}

}  // namespace xmlt::run
