// The progress line `xmltrain train` rewrites on a terminal's stderr as it trains (and Python's
// train() without tqdm, python/xmltrain/_progress.py, in the same words).
#pragma once

#include <cstdint>
#include <string>

namespace xmlt::apps {

// "42.0%  batch loss 0.1234  0:42 elapsed, 0:58 left": the time left is the time elapsed scaled by
// the rows still to train ("?" before the first).
std::string ProgressLine(uint64_t done, uint64_t total, double loss, double elapsed_s);

// "0:07", "12:34" or "1:02:03".
std::string Duration(double seconds);

}  // namespace xmlt::apps
