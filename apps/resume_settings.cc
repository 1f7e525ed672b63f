// Setting names to flags for a refused --resume; see resume_settings.h.
#include "apps/resume_settings.h"

#include <map>

namespace xmlt::apps {
namespace {

std::string FlagOf(const std::string& setting) {
  static const std::map<std::string, std::string> flags = {
      {"model", "model (--hidden, and the data's features and labels)"},
      {"normalize", "--normalize"},
      {"batch", "--batch"},
      {"lr", "--lr"},
      {"local_momentum", "--local-momentum"},
      {"mega_batch", "--mega-batch"},
      {"seed", "--seed"},
      {"train_rows", "--train (rows)"},
      {"train_checksum", "--train (checksum)"},
      {"test_rows", "--test (rows)"},
      {"test_checksum", "--test (checksum)"},
      {"eval_rows", "--eval-rows"},
      {"final_eval", "--final-eval"},
      {"math", "--math"},
      {"divergence_factor", "--divergence-factor"},
      {"devices", "--devices"},
      {"schedule", "--schedule"},
      {"merge", "--merge"},
      {"collective", "--collective"},
      {"momentum_mode", "--momentum-mode"},
      {"elastic_alpha", "--elastic-alpha"},
      {"momentum", "--momentum"},
      {"pert_threshold", "--pert-thr"},
      {"pert_delta", "--pert-delta"},
      {"pert_weights", "--pert-weights"},
      {"speed", "--speed"},
      {"hetero", "--hetero"},
      {"clock", "--clock"},
      {"row_cost", "--row-cost"},
      {"merge_cost", "--merge-cost"},
      {"batch_min", "--batch-min"},
      {"beta", "--beta"},
  };
  const auto it = flags.find(setting);
  return it == flags.end() ? setting : it->second;
}

}  // namespace

std::string DescribeInFlags(const scheduler::RunMismatch& mismatch) {
  std::string text = mismatch.file() +
                     ": this run's settings differ from the checkpointed run's (give the same flags; only --epochs, "
                     "--eval-every and a lower --lr may change):";
  for (const scheduler::SettingDifference& d : mismatch.differences()) {
    text += "\n  " + FlagOf(d.name) + ": checkpoint " + d.checkpoint + ", now " + d.now;
    if (d.name == "schedule" || d.name == "merge") text += " (set by --algo)";
  }
  return text;
}

}  // namespace xmlt::apps
