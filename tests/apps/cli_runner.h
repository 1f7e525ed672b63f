// Runs the xmltrain command line in-process for the tests, capturing its exit code and output.
#pragma once

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "apps/cli.h"

namespace xmlt::apps::testing {

struct CliResult {
  int code = -1;
  std::string out, err;
};

inline CliResult Cli(std::vector<std::string> args) {
  args.insert(args.begin(), "xmltrain");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  CliResult result;
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  result.code = RunCli(int(args.size()), argv.data());
  result.out = ::testing::internal::GetCapturedStdout();
  result.err = ::testing::internal::GetCapturedStderr();
  return result;
}

// The non-empty lines of a text.
inline std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) lines.push_back(line);
  return lines;
}

}  // namespace xmlt::apps::testing
