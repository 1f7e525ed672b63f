// The check of a rate held in a float; see float_rate_flag.h.
#include "apps/float_rate_flag.h"

#include <CLI/CLI.hpp>

#include <cstdlib>
#include <limits>
#include <string>

#include "apps/shortest_text.h"

namespace xmlt::apps {

const CLI::Validator kFloatRate(
    [](std::string& value) {
      char* end = nullptr;
      const double number = std::strtod(value.c_str(), &end);
      if (value.empty() || *end != '\0' || !(number > 0)) return std::string();  // the flag's own checks say it
      if (number < double(std::numeric_limits<float>::min()))
        return value + " is below the smallest positive number it can be (" +
               ShortestText(std::numeric_limits<float>::min()) + ")";
      if (number > double(std::numeric_limits<float>::max()))
        return value + " is beyond the largest number it can be (" + ShortestText(std::numeric_limits<float>::max()) +
               ")";
      return std::string();
    },
    "", "");

}  // namespace xmlt::apps
