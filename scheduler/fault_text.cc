// A device's fault as text; see fault_text.h.
#include "scheduler/fault_text.h"

#include <stdexcept>

namespace xmlt::scheduler {

std::string FaultText(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    return *e.what() != 0 ? e.what() : "error without a message";
  } catch (...) {
    return "unknown error";
  }
}

}  // namespace xmlt::scheduler
