// The one exception type for bad user input (files, flags): the CLI turns it into exit code 2
// with a message of the form "FILE:LINE: problem".
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace xmlt::data {

class InputError : public std::runtime_error {
 public:
  // line 0 means the problem concerns the whole file (missing, empty, bad header, checksum).
  InputError(std::string file, uint64_t line, const std::string& problem)
      : std::runtime_error(Format(file, line, problem)), file_(std::move(file)), line_(line) {}

  const std::string& file() const { return file_; }
  uint64_t line() const { return line_; }

 private:
  static std::string Format(const std::string& file, uint64_t line, const std::string& problem) {
    return line == 0 ? file + ": " + problem : file + ":" + std::to_string(line) + ": " + problem;
  }
  std::string file_;
  uint64_t line_;
};

}  // namespace xmlt::data
