// The training progress line; see progress_line.h.
#include "apps/progress_line.h"

#include <cmath>
#include <cstdio>

namespace xmlt::apps {

std::string Duration(double seconds) {
  const uint64_t whole = seconds > 0 && std::isfinite(seconds) ? uint64_t(std::llround(seconds)) : 0;
  char text[48];
  if (whole >= 3600) {
    std::snprintf(text, sizeof text, "%llu:%02u:%02u", static_cast<unsigned long long>(whole / 3600),
                  unsigned(whole / 60 % 60), unsigned(whole % 60));
  } else {
    std::snprintf(text, sizeof text, "%u:%02u", unsigned(whole / 60), unsigned(whole % 60));
  }
  return text;
}

std::string ProgressLine(uint64_t done, uint64_t total, double loss, double elapsed_s) {
  const double share = total > 0 ? double(done) / double(total) : 0.0;
  const std::string left =
      done > 0 ? Duration(elapsed_s * double(total > done ? total - done : 0) / double(done)) : std::string("?");
  char text[160];
  std::snprintf(text, sizeof text, "%5.1f%%  batch loss %.4f  %s elapsed, %s left", 100.0 * share, loss,
                Duration(elapsed_s).c_str(), left.c_str());
  return text;
}

}  // namespace xmlt::apps
