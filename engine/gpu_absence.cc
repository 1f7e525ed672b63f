// The words for a machine without a usable GPU; see gpu_absence.h.
#include "engine/gpu_absence.h"

#include <unistd.h>

namespace xmlt::engine {

bool NvidiaDriverPresent() {
  return ::access("/proc/driver/nvidia/version", F_OK) == 0 || ::access("/dev/nvidiactl", F_OK) == 0;
}

std::string NoGpuText(bool no_device, const std::string& runtime_message, bool driver_present) {
  if (no_device || !driver_present) return "no GPU found";
  return "no CUDA devices (" + runtime_message + ")";
}

}  // namespace xmlt::engine
