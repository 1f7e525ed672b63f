// The --config reader; see config_reader.h.
#include "apps/config_reader.h"

#include <iterator>
#include <sstream>
#include <string>

namespace xmlt::apps {

std::vector<CLI::ConfigItem> ConfigReader::from_config(std::istream& input) const {
  std::string text(std::istreambuf_iterator<char>(input), {});
  constexpr std::string_view kByteOrderMark = "\xEF\xBB\xBF";
  if (text.compare(0, kByteOrderMark.size(), kByteOrderMark) == 0) text.erase(0, kByteOrderMark.size());
  std::istringstream stripped(text);
  std::vector<CLI::ConfigItem> items = CLI::ConfigTOML::from_config(stripped);
  // A key given again in its section: its values join the first one's. The check before parsing
  // (config_check.h) refuses that for options that take one value.
  std::vector<CLI::ConfigItem> gathered;
  for (CLI::ConfigItem& item : items) {
    bool joined = false;
    const bool section_marker = item.name == "++" || item.name == "--";  // CLI11's entering and leaving
    if (section_marker) {
      gathered.push_back(std::move(item));
      continue;
    }
    for (CLI::ConfigItem& earlier : gathered) {
      if (earlier.parents != item.parents || earlier.name != item.name) continue;
      earlier.inputs.insert(earlier.inputs.end(), item.inputs.begin(), item.inputs.end());
      joined = true;
      break;
    }
    if (!joined) gathered.push_back(std::move(item));
  }
  return gathered;
}

}  // namespace xmlt::apps
