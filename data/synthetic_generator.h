// Synthetic extreme multi-label data with the shapes of real sets: power-law feature and label
// frequencies, and labels produced by a hidden sparse teacher so that accuracy means something.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "data/dataset.h"

namespace xmlt::data {

// The most rows of either set: more is a typo (ValidateConfig refuses it).
inline constexpr uint64_t kMaxGeneratedRows = uint64_t{1} << 40;

struct GeneratorConfig {
  uint64_t train_rows = 10000;
  uint64_t test_rows = 2000;
  uint64_t features = 5000;
  uint64_t labels = 500;
  double nnz_per_row = 40;    // mean non-zero features per row
  double labels_per_row = 3;  // mean labels per row
  uint64_t seed = 1;
};

// "amazon670k" and "delicious200k" (Table 1 of the Adaptive SGD paper) scaled by `scale` in rows,
// features and labels alike (per-row means are kept). Throws std::invalid_argument for other names.
GeneratorConfig PresetConfig(const std::string& name, double scale);

// The names PresetConfig accepts, for help texts and error messages.
std::vector<std::string> PresetNames();

// Throws std::invalid_argument naming the first field that is out of range (zero or non-finite
// sizes, ids that do not fit uint32, more non-zeros than memory can sensibly hold). Generate calls
// it before allocating anything.
void ValidateConfig(const GeneratorConfig& config);

struct GeneratedData {
  Dataset train;
  Dataset test;
};

// Deterministic for a config (same seed, same data, whatever the thread count).
GeneratedData Generate(const GeneratorConfig& config);

}  // namespace xmlt::data
