// The flags of `xmltrain train` parsed from a list of arguments exactly as the command line parses
// them: the same options, defaults, checks and messages. The Python package turns its keywords
// into these arguments, so that a keyword means, and is refused, as its flag is.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "apps/train_flags.h"

namespace xmlt::apps {

class TrainArguments {
 public:
  // `args` as after `xmltrain train`, e.g. {"--train", "X", "--algo", "adaptive"}; --threads, the
  // command line's global option, is understood too. Throws CLI::ParseError (CLI::ExtrasError for
  // an unknown flag) with CLI11's message.
  explicit TrainArguments(const std::vector<std::string>& args);
  TrainArguments(const TrainArguments&) = delete;  // flags_ points into app_
  TrainArguments& operator=(const TrainArguments&) = delete;

  TrainFlags& flags() { return flags_; }
  int threads() const { return threads_; }  // 0: all cores

 private:
  CLI::App app_;
  TrainFlags flags_;
  int threads_ = 0;
};

}  // namespace xmlt::apps
