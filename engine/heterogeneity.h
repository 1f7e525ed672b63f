// Emulated heterogeneity, so the algorithms can be studied on any machine: each batch a device
// runs takes its nominal time multiplied by a slowdown factor. --speed gives each device a fixed
// relative slowness; --hetero cvb:vmach=V,vtask=T draws per-device means and per-batch times from
// the gamma model (CVB, Ali et al. 2000) of the DANA paper, appendix A.4, Algorithm 12.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace xmlt::engine {

struct HeterogeneitySpec {
  std::vector<double> speed;  // per device, >= 1 means slower; empty = all 1
  bool cvb = false;
  double vmach = 0.6;  // V_mach: spread of the devices' mean speeds
  double vtask = 0.1;  // V_task: spread of one device's batch times
};

// Largest V_mach / V_task accepted: beyond it gamma shapes (1/V^2) are so small that draws can
// underflow to a zero batch time. V = 0 means no spread (the gamma's limit: its mean, exactly).
inline constexpr double kMaxVariation = 4.0;

// "1,1.1,1.2,1.32" -> speeds; throws std::invalid_argument for non-positive or malformed values.
// Values must be finite and > 0; whitespace around items is ignored; an empty (or blank) text
// gives an empty vector, i.e. every device at speed 1.
std::vector<double> ParseSpeeds(const std::string& text);
// "cvb:vmach=0.6,vtask=0.1" (either key optional) or "none"; throws std::invalid_argument.
// "cvb" alone takes both defaults; an empty (or blank) text is "none"; each key at most once,
// values finite and in [0, kMaxVariation].
HeterogeneitySpec ParseHetero(const std::string& text);

class SlowdownModel {
 public:
  // `speed` must be empty or have one entry per device (std::invalid_argument otherwise), with
  // finite values > 0; num_devices must be > 0. The factors are deterministic for a seed with a
  // given standard library (std::gamma_distribution's algorithm is implementation-defined).
  SlowdownModel(const HeterogeneitySpec& spec, size_t num_devices, uint64_t seed);

  // The factor for the device's next batch: speed_i times, under CVB, a draw from
  // G(alpha_task, p_i / alpha_task) where p_i ~ G(alpha_mach, mu_mach / alpha_mach) was drawn once
  // per device with mu_mach = 1 (alpha = 1 / V^2). Each device has its own random stream, so the
  // sequence of factors a device sees does not depend on the other devices.
  // Throws std::out_of_range for a device >= num_devices().
  double NextFactor(size_t device);

  double DeviceMean(size_t device) const;  // speed_i * p_i: the device's expected factor

  // The random streams' state as text, for checkpoints; Restore needs a model built with the same
  // spec, device count and seed, and throws std::invalid_argument for malformed or foreign state.
  std::string SaveState() const;
  void RestoreState(const std::string& state);
  size_t num_devices() const { return means_.size(); }

 private:
  HeterogeneitySpec spec_;
  std::vector<double> means_;  // speed_i * p_i
  std::vector<std::mt19937_64> rngs_;
  // One per device, with the device's p_i fixed in its scale; kept rather than rebuilt per draw
  // because the distribution caches normal variates between calls.
  std::vector<std::gamma_distribution<double>> task_;
};

}  // namespace xmlt::engine
