// Setting names to flags; see setting_flags.h.
#include "apps/setting_flags.h"

#include <map>

namespace xmlt::apps {

std::string FlagOf(const std::string& setting) {
  static const std::map<std::string, std::string> flags = {
      {"model", "model (--hidden, and the data's features and labels)"},
      {"normalize", "--normalize"},
      {"batch", "--batch"},
      {"lr", "--lr"},
      {"lr_schedule", "--lr-schedule"},
      {"local_momentum", "--local-momentum"},
      {"weight_decay", "--weight-decay"},
      {"dropout", "--dropout"},
      {"input_adagrad_lr", "--input-optimizer and --input-lr"},
      {"propensity", "--propensity"},
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
      {"sampled_output", "--algo slide or --cpu-output sampled, and the --slide-* knobs"},
      {"devices", "--devices"},
      {"schedule", "--schedule"},
      {"merge", "--merge"},
      {"collective", "--collective"},
      {"merge_on", "--merge-on"},
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
      {"clock_costs", "--clock-costs"},
      {"merge_cost", "--merge-cost"},
      {"batch_min", "--batch-min"},
      {"beta", "--beta"},
      {"epochs", "--epochs"},
      {"eval_every", "--eval-every"},
      {"inject_fault", "--inject-fault"},
      {"checkpoint_every", "--checkpoint-every"},
      {"max_rollbacks", "--max-rollbacks"},
      {"resume", "--resume (given or not)"},
  };
  const auto it = flags.find(setting);
  return it == flags.end() ? setting : it->second;
}

std::string DescribeInFlags(const run::RunMismatch& mismatch) {
  std::string text = mismatch.file() +
                     ": this run's settings differ from the checkpointed run's (give the same flags; only --epochs, "
                     "--eval-every and a lower --lr may change (without --lr a resume goes on at the checkpoint's rate), "
                     "and on other --devices or ranks also --speed, --lr, --mega-batch and --collective):";
  for (const run::SettingDifference& d : mismatch.differences()) {
    text += "\n  " + FlagOf(d.name) + ": checkpoint " + d.checkpoint + ", now " + d.now;
    if (d.name == "schedule" || d.name == "merge") text += " (set by --algo)";
  }
  return text;
}

std::string DescribeInFlags(const scheduler::OptionError& error) { return FlagOf(error.setting()) + " " + error.problem(); }

std::string DescribeInFlags(const run::RunStopped& stopped) {
  const std::string& dir = stopped.checkpoint_dir();
  if (stopped.why() == run::RunStopped::Why::kDiverged)
    return std::string(stopped.what()) + " (--max-rollbacks); " +
           (dir.empty() ? std::string("lower --lr") : "--resume " + dir + " with a lower --lr");
  return std::string(stopped.what()) +
         (dir.empty() ? std::string(" (no --checkpoint-dir: progress is lost)") : "; resume with --resume " + dir);
}

}  // namespace xmlt::apps
