// Line-by-line check of --config files; see config_check.h.
#include "apps/config_check.h"

#include <CLI/CLI.hpp>
#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>

#include "data/input_error.h"

namespace xmlt::apps {
namespace {

std::string Trim(const std::string& text) {
  const size_t first = text.find_first_not_of(" \t\r");
  if (first == std::string::npos) return "";
  return text.substr(first, text.find_last_not_of(" \t\r") - first + 1);
}

const CLI::Option* OptionOf(const CLI::App& app, std::string key) {
  if (const CLI::Option* option = app.get_option_no_throw("--" + key)) return option;
  std::replace(key.begin(), key.end(), '_', '-');  // CLI11 accepts pert_thr for --pert-thr
  return app.get_option_no_throw("--" + key);
}

// An option that may be given several times (--inject-fault): on several lines, or as a list.
bool Repeatable(const CLI::Option* option) { return option != nullptr && option->get_items_expected_max() > 1; }

}  // namespace

void CheckConfigFile(const std::string& path, const CLI::App& app) {
  // Before opening it: a FIFO would wait for a writer forever.
  struct stat info {};
  if (::stat(path.c_str(), &info) == 0 && !S_ISREG(info.st_mode)) throw data::InputError(path, 0, "not a regular file");
  std::ifstream in(path, std::ios::binary);
  if (!in) return;  // CLI11 reports a missing file itself
  std::stringstream buffer;
  buffer << in.rdbuf();
  std::string text = buffer.str();
  if (text.compare(0, 3, "\xEF\xBB\xBF") == 0) text.erase(0, 3);  // a UTF-8 byte order mark, as data files may have
  for (const unsigned char c : text)
    if (c == 0 || (c < 0x20 && c != '\n' && c != '\r' && c != '\t'))
      throw data::InputError(path, 0, "binary data, not a TOML/INI config file");
  const CLI::App* section = &app;
  std::string section_name;
  std::map<std::string, uint64_t> seen;  // "section.key" -> line, for duplicates
  std::istringstream lines(text);
  std::string raw;
  uint64_t number = 0;
  while (std::getline(lines, raw)) {
    ++number;
    const std::string line = Trim(raw);
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    if (line[0] == '[') {
      if (line.back() != ']') throw data::InputError(path, number, "section header '" + line + "' has no closing ']'");
      section_name = Trim(line.substr(1, line.size() - 2));
      const CLI::App* sub = nullptr;
      for (const CLI::App* candidate : app.get_subcommands({}))
        if (candidate->get_name() == section_name) sub = candidate;
      if (sub == nullptr) throw data::InputError(path, number, "unknown section [" + section_name + "]");
      section = sub;
      continue;
    }
    const size_t equals = line.find('=');
    if (equals == std::string::npos)
      throw data::InputError(path, number, "'" + line + "' is not 'key = value'");
    std::string key = Trim(line.substr(0, equals));
    if (key.size() >= 2 && (key.front() == '"' || key.front() == '\'') && key.back() == key.front())
      key = key.substr(1, key.size() - 2);
    if (key.empty()) throw data::InputError(path, number, "'" + line + "' has no key before '='");
    const std::string where = section_name.empty() ? std::string() : " in [" + section_name + "]";
    const CLI::Option* option = OptionOf(*section, key);
    if (option == nullptr) option = OptionOf(app, key);
    if (option == nullptr) throw data::InputError(path, number, "unknown key '" + key + "'" + where);
    if (Repeatable(option)) continue;  // config_reader.h gathers its lines
    std::string canonical = key;
    std::replace(canonical.begin(), canonical.end(), '_', '-');
    const auto [earlier, fresh] = seen.emplace(section_name + "." + canonical, number);
    if (!fresh)
      throw data::InputError(path, number, "key '" + key + "'" + where + " given again (first on line " +
                                               std::to_string(earlier->second) + ")");
    const std::string value = Trim(line.substr(equals + 1));
    if (!value.empty() && value.front() == '[')
      throw data::InputError(path, number, "key '" + key + "'" + where + " has a list value; it takes one value");
  }
}

}  // namespace xmlt::apps
