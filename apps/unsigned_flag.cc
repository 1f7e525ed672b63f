// The check of unsigned integer flags; see unsigned_flag.h.
#include "apps/unsigned_flag.h"

#include <CLI/CLI.hpp>

#include <cerrno>
#include <cstdlib>
#include <string>

namespace xmlt::apps {

const CLI::Validator kUnsignedValue(
    [](std::string& value) {
      const size_t first = value.find_first_not_of(" \t");
      if (first != std::string::npos && value[first] == '-') return std::string("must not be negative");
      errno = 0;
      char* end = nullptr;
      std::strtoull(value.c_str(), &end, 0);
      if (errno == ERANGE) return value + " is beyond 18446744073709551615, the largest it can be";
      return std::string();  // CLI11's conversion refuses what is not a number
    },
    "", "");

}  // namespace xmlt::apps
