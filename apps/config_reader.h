// The --config file reader: CLI11's TOML/INI reader, with two differences a user expects from a
// config file as from a data file: a UTF-8 byte order mark at the start is skipped (editors write
// one), and a repeatable option (--inject-fault) given on several lines takes every value, as the
// flag given several times does (CLI11 alone keeps the first).
#pragma once

#include <CLI/CLI.hpp>
#include <istream>
#include <vector>

namespace xmlt::apps {

class ConfigReader : public CLI::ConfigTOML {
 public:
  std::vector<CLI::ConfigItem> from_config(std::istream& input) const override;
};

}  // namespace xmlt::apps
