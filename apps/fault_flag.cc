// --inject-fault parsing; see fault_flag.h.
#include "apps/fault_flag.h"

#include <sstream>
#include <stdexcept>

namespace xmlt::apps {
namespace {

uint64_t ParseCount(const std::string& key, const std::string& value) {
  size_t used = 0;
  unsigned long long number = 0;
  try {
    number = std::stoull(value, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != value.size() || value[0] == '-')
    throw std::invalid_argument("--inject-fault: " + key + "='" + value + "' is not a non-negative integer");
  return number;
}

}  // namespace

scheduler::FaultInjection ParseFaultInjection(const std::string& text) {
  using scheduler::FaultInjection;
  FaultInjection fault;
  bool has_device = false, has_megabatch = false, has_kind = false;
  std::stringstream stream(text);
  std::string item;
  while (std::getline(stream, item, ',')) {
    const size_t eq = item.find('=');
    const std::string key = item.substr(0, eq), value = eq == std::string::npos ? "" : item.substr(eq + 1);
    if (key == "device" && !has_device) {
      fault.device = size_t(ParseCount(key, value));
      has_device = true;
    } else if (key == "megabatch" && !has_megabatch) {
      fault.megabatch = ParseCount(key, value);
      has_megabatch = true;
    } else if (key == "kind" && !has_kind &&
               (value == "fail" || value == "nan" || value == "exit" || value == "lost")) {
      fault.kind = value == "nan"    ? FaultInjection::Kind::kNaN
                   : value == "exit" ? FaultInjection::Kind::kExit
                   : value == "lost" ? FaultInjection::Kind::kLost
                                     : FaultInjection::Kind::kFail;
      has_kind = true;
    } else {
      throw std::invalid_argument("--inject-fault takes device=I,megabatch=K[,kind=fail|nan|exit|lost], not '" + text + "'");
    }
  }
  if (!has_device || !has_megabatch || fault.megabatch == 0)
    throw std::invalid_argument("--inject-fault takes device=I,megabatch=K[,kind=fail|nan|exit|lost] with K >= 1, not '" +
                                text + "'");
  return fault;
}

}  // namespace xmlt::apps
