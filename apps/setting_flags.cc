// Setting names to flags; see setting_flags.h.
#include "apps/setting_flags.h"

#include <map>
#include <nlohmann/json.hpp>

namespace xmlt::apps {

std::string FlagOf(const std::string& setting) {
  static const std::map<std::string, std::string> flags = {
      {"model", "model (--hidden, and the data's features and labels)"},
      {"normalize", "--normalize"},
      {"batch", "--batch"},
      {"lr", "--lr"},
      {"lr_scaling", "--lr-scaling"},
      {"lr_schedule", "--lr-schedule"},
      {"local_momentum", "--local-momentum"},
      {"weight_decay", "--weight-decay"},
      {"dropout", "--dropout"},
      {"input_adagrad_lr", "--input-optimizer and --input-lr"},
      {"propensity", "--propensity"},
      {"mega_batch", "--mega-batch"},
      {"mega_batch_warmup", "--mega-batch-warmup (preset)"},
      {"seed", "--seed"},
      {"train_rows", "--train (rows)"},
      {"train_checksum", "--train (checksum)"},
      {"test_rows", "--test (rows)"},
      {"test_checksum", "--test (checksum)"},
      {"eval_rows", "--eval-rows"},
      {"final_eval", "--final-eval"},
      {"math", "--math"},
      {"optimizer_state", "--optimizer-state"},
      {"weights", "--weights"},
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
      {"ranker", "--ranker"},
      {"ranker_blend", "--ranker-blend"},
      {"ranker_holdout", "--ranker-holdout"},
  };
  const auto it = flags.find(setting);
  return it == flags.end() ? setting : it->second;
}

namespace {

// The flags behind the fields of the "sampled_output" setting.
std::string SampledOutputFlagOf(const std::string& field) {
  static const std::map<std::string, std::string> flags = {
      {"hash", "--slide-hash"},
      {"k", "--slide-k"},
      {"l", "--slide-l"},
      {"bucket_bits", "--slide-k and --slide-hash (bits of a table key)"},
      {"bucket_cap", "--slide-bucket"},
      {"min_active", "--slide-min-active"},
      {"first_rebuild", "--slide-rehash-first"},
      {"rebuild_growth", "--slide-rehash-growth"},
      {"weight_padding", "--slide-weight-padding"},
      {"seed", "--seed"},
  };
  const auto it = flags.find(field);
  return it == flags.end() ? "--slide-* (" + field + ")" : it->second;
}

// What decides a setting when its own flag is not given, said after it.
std::string SetBy(const std::string& setting) {
  if (setting == "schedule" || setting == "merge") return " (set by --algo)";
  if (setting == "momentum" || setting == "local_momentum" || setting == "mega_batch" || setting == "pert_weights" ||
      setting == "lr_scaling")
    return " (set by --preset unless given)";
  if (setting == "ranker") return " (off by default with --preset paper)";
  if (setting == "train_checksum") return " (the rows read from --train and --train-labels, with --one-based)";
  if (setting == "test_checksum") return " (the rows read from --test and --test-labels, with --one-based)";
  if (setting == "input_adagrad_lr") return " (damped by --momentum on several devices)";
  return "";
}

std::string WithNote(const std::string& value, const std::string& note) {
  return note.empty() ? value : value + " (" + note + ")";
}

}  // namespace

std::string DescribeInFlags(const run::RunMismatch& mismatch) {
  std::string text = mismatch.file() +
                     ": this run's settings differ from the checkpointed run's (give the same flags; "
                     "docs/long-runs.md lists those a resume may change: --epochs, --eval-every, a lower --lr "
                     "(without --lr a resume goes on at the checkpoint's rate), the outputs, and on other --devices "
                     "or ranks also --speed, --lr, --mega-batch, --collective, --lr-scaling and --merge-on):";
  for (const run::SettingDifference& d : mismatch.differences()) {
    // SLIDE's settings are one object: each field that differs, under its own flag.
    const nlohmann::json checkpoint = nlohmann::json::parse(d.checkpoint, nullptr, false);
    const nlohmann::json now = nlohmann::json::parse(d.now, nullptr, false);
    if (d.name == "sampled_output" && checkpoint.is_object() && now.is_object()) {
      for (const auto& [field, value] : now.items())
        if (checkpoint.value(field, nlohmann::json()) != value)
          text += "\n  " + SampledOutputFlagOf(field) + ": checkpoint " +
                  (checkpoint.contains(field) ? checkpoint.at(field).dump() : "(not set)") + ", now " + value.dump();
      continue;
    }
    text += "\n  " + FlagOf(d.name) + ": checkpoint " + WithNote(d.checkpoint, d.checkpoint_note) + ", now " +
            WithNote(d.now, d.now_note) + SetBy(d.name);
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
