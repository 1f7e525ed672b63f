// A device's fault as text, from the error its batch or job failed with.
#pragma once

#include <exception>
#include <string>

namespace xmlt::scheduler {

// The error's message; never empty, since an empty fault text would read as a healthy device.
std::string FaultText(const std::exception_ptr& error);

}  // namespace xmlt::scheduler
