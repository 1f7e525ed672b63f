// Emulated heterogeneity: parsing of --speed and --hetero, and the per-batch slowdown factors of
// Algorithm 12 (CVB gamma model, DANA paper appendix A.4) with mu_mach = 1, times each speed_i.
#include "engine/heterogeneity.h"

#include <charconv>
#include <cmath>
#include <sstream>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

namespace xmlt::engine {
namespace {

constexpr char kSpace[] = " \t\r\n";
constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ULL;

std::string Trim(const std::string& s) {
  const size_t first = s.find_first_not_of(kSpace);
  if (first == std::string::npos) return "";
  const size_t last = s.find_last_not_of(kSpace);
  return s.substr(first, last - first + 1);
}

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    const size_t at = s.find(sep, start);
    parts.push_back(
        Trim(s.substr(start, at == std::string::npos ? std::string::npos : at - start)));
    if (at == std::string::npos) return parts;
    start = at + 1;
  }
}

// The whole of `text` as a finite double; from_chars, unlike strtod, ignores the C locale.
bool ParseDouble(const std::string& text, double* value) {
  if (text.empty()) return false;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, *value);
  return ec == std::errc() && ptr == end && std::isfinite(*value);
}

// One step of splitmix64: a bijective, well-mixed map, so nearby seeds and device numbers still
// give unrelated Mersenne Twister states.
uint64_t SplitMix64(uint64_t x) {
  uint64_t z = x + kGolden;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// Depends on the seed and the device only, so a device's stream is the same whatever the number
// of devices and whatever the others draw.
uint64_t DeviceSeed(uint64_t seed, size_t device) {
  return SplitMix64(SplitMix64(seed) + static_cast<uint64_t>(device));
}

void CheckVariation(const char* name, double v, const std::string& context) {
  if (!std::isfinite(v) || v < 0 || v > kMaxVariation) {
    throw std::invalid_argument(context + ": " + name + " must be in [0, " +
                                std::to_string(kMaxVariation) + "], got " + std::to_string(v));
  }
}

void CheckSpeed(double s, size_t index, const std::string& context) {
  if (!std::isfinite(s) || s <= 0) {
    throw std::invalid_argument(context + ": speed " + std::to_string(index) +
                                " must be finite and > 0, got " + std::to_string(s));
  }
}

}  // namespace

std::vector<double> ParseSpeeds(const std::string& text) {
  std::vector<double> speeds;
  if (Trim(text).empty()) return speeds;
  for (const std::string& item : Split(text, ',')) {
    double value = 0;
    if (item.empty()) {
      throw std::invalid_argument("--speed: empty item in \"" + text + "\"");
    }
    if (!ParseDouble(item, &value)) {
      throw std::invalid_argument("--speed: \"" + item + "\" is not a finite number");
    }
    if (value <= 0) {
      throw std::invalid_argument("--speed: \"" + item + "\" must be > 0");
    }
    speeds.push_back(value);
  }
  return speeds;
}

HeterogeneitySpec ParseHetero(const std::string& text) {
  HeterogeneitySpec spec;
  const std::string t = Trim(text);
  if (t.empty() || t == "none") return spec;
  const std::string kUsage = " (expected none, cvb or cvb:vmach=V,vtask=T)";
  const size_t colon = t.find(':');
  if (Trim(t.substr(0, colon)) != "cvb") {
    throw std::invalid_argument("--hetero: unknown model \"" + t + "\"" + kUsage);
  }
  spec.cvb = true;
  if (colon == std::string::npos) return spec;
  bool seen_vmach = false, seen_vtask = false;
  for (const std::string& item : Split(t.substr(colon + 1), ',')) {
    const size_t eq = item.find('=');
    if (item.empty() || eq == std::string::npos) {
      throw std::invalid_argument("--hetero: bad parameter \"" + item + "\" in \"" + t + "\"" +
                                  kUsage);
    }
    const std::string key = Trim(item.substr(0, eq));
    const std::string raw = Trim(item.substr(eq + 1));
    double value = 0;
    if (!ParseDouble(raw, &value)) {
      throw std::invalid_argument("--hetero: \"" + item + "\": value \"" + raw +
                                  "\" is not a finite number");
    }
    bool* seen = nullptr;
    double* target = nullptr;
    if (key == "vmach") {
      seen = &seen_vmach;
      target = &spec.vmach;
    } else if (key == "vtask") {
      seen = &seen_vtask;
      target = &spec.vtask;
    } else {
      throw std::invalid_argument("--hetero: unknown key \"" + key + "\" in \"" + item +
                                  "\" (known: vmach, vtask)");
    }
    if (*seen)
      throw std::invalid_argument("--hetero: \"" + key + "\" given twice in \"" + t + "\"");
    *seen = true;
    CheckVariation(key.c_str(), value, "--hetero \"" + item + "\"");
    *target = value;
  }
  return spec;
}

SlowdownModel::SlowdownModel(const HeterogeneitySpec& spec, size_t num_devices, uint64_t seed)
    : spec_(spec) {
  const std::string context = "SlowdownModel";
  if (num_devices == 0) throw std::invalid_argument(context + ": no devices");
  if (!spec.speed.empty() && spec.speed.size() != num_devices) {
    throw std::invalid_argument(context + ": " + std::to_string(spec.speed.size()) +
                                " speeds given for " + std::to_string(num_devices) + " devices");
  }
  for (size_t i = 0; i < spec.speed.size(); ++i) CheckSpeed(spec.speed[i], i, context);
  if (spec.cvb) {
    CheckVariation("vmach", spec.vmach, context);
    CheckVariation("vtask", spec.vtask, context);
  }

  means_.resize(num_devices);
  rngs_.reserve(num_devices);
  task_.reserve(num_devices);
  for (size_t i = 0; i < num_devices; ++i) {
    rngs_.emplace_back(DeviceSeed(seed, i));
    const double speed = spec.speed.empty() ? 1.0 : spec.speed[i];
    double p = 1.0;  // mu_mach; also the V_mach = 0 limit
    if (spec.cvb && spec.vmach > 0) {
      // p_j ~ G(alpha_mach, beta_mach), beta_mach = mu_mach / alpha_mach: the first draw of the
      // device's own stream, so it too is independent of the other devices.
      const double alpha_mach = 1.0 / (spec.vmach * spec.vmach);
      p = std::gamma_distribution<double>(alpha_mach, 1.0 / alpha_mach)(rngs_.back());
    }
    means_[i] = speed * p;
    if (spec.cvb && spec.vtask > 0) {
      const double alpha_task = 1.0 / (spec.vtask * spec.vtask);
      task_.emplace_back(alpha_task, p / alpha_task);  // beta_task[j] = p[j] / alpha_task
    } else {
      task_.emplace_back();  // never drawn from
    }
  }
}

double SlowdownModel::NextFactor(size_t device) {
  if (device >= means_.size()) {
    throw std::out_of_range("SlowdownModel: device " + std::to_string(device) + " of " +
                            std::to_string(means_.size()));
  }
  // Without a per-batch spread the factor is the device's mean exactly: speed_i without CVB.
  if (!spec_.cvb || spec_.vtask == 0) return means_[device];
  const double speed = spec_.speed.empty() ? 1.0 : spec_.speed[device];
  return speed * task_[device](rngs_[device]);
}

double SlowdownModel::DeviceMean(size_t device) const { return means_.at(device); }

std::string SlowdownModel::SaveState() const {
  std::ostringstream out;
  out << rngs_.size();
  for (size_t i = 0; i < rngs_.size(); ++i) out << ' ' << rngs_[i] << ' ' << task_[i];
  return out.str();
}

void SlowdownModel::RestoreState(const std::string& state) {
  std::istringstream in(state);
  size_t count = 0;
  in >> count;
  if (!in || count != rngs_.size())
    throw std::invalid_argument("slowdown state is for a different number of devices");
  std::vector<std::mt19937_64> rngs(count);
  std::vector<std::gamma_distribution<double>> task(count);
  for (size_t i = 0; i < count; ++i) in >> rngs[i] >> task[i];
  if (!in) throw std::invalid_argument("slowdown state is malformed");
  rngs_ = std::move(rngs);
  task_ = std::move(task);
}

}  // namespace xmlt::engine
