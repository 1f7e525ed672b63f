// When `xmltrain train`'s flags become the run's settings; see settle_around_loading.h.
#include "apps/settle_around_loading.h"

#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>

#include "apps/fault_flag.h"
#include "apps/propensity_flag.h"
#include "apps/rank_agreement.h"
#include "apps/resume_settings.h"
#include "apps/train_algorithm.h"
#include "apps/train_flag_checks.h"
#include "apps/train_learning_rate.h"
#include "apps/train_presets.h"
#include "apps/train_ranker.h"
#include "apps/train_settings.h"
#include "kernels/cpu/cpu_isa.h"
#include "run/checkpoint_file.h"
#include "run/run_progress.h"
#include "scheduler/lr_schedule.h"

namespace xmlt::apps {
namespace {

// What the ranks compare before anything is trained: the run's fingerprint, and the flags that
// steer the loop.
nlohmann::json RankSettings(const TrainFlags& f, const TrainingData& data) {
  nlohmann::json settings =
      run::RunFingerprint(OptionsWithGivenInputRate(f), f.engine, data.shape, data.train, data.test.get());
  settings["lr"] = f.lr;  // as given: 'auto' has no value yet, and the scaling is the same on every rank
  settings["epochs"] = f.options.epochs;
  settings["eval_every"] = f.eval_every;
  settings["checkpoint_every"] = f.control.checkpoint_every;
  settings["max_rollbacks"] = f.control.max_rollbacks;
  settings["resume"] = !f.control.resume_dir.empty();
  settings["inject_fault"] = f.faults;
  settings["propensity"] = f.propensity;  // the ranks add up each other's weighted evaluation sums
  return settings;
}

}  // namespace

void SettleBeforeLoading(TrainFlags& f, ranks::RankGroup* ranks) {
  ApplyAlgorithm(f);
  SpreadOverRanks(f, ranks);
  CheckFlagsBeforeLoading(f);
  CheckGpusExist(f, ranks->rank());
  // A bad XMLT_CPU_ISA (unknown, or more than this CPU runs) is refused before any loading.
  try {
    kernels::cpu::ActiveCpuIsa();
  } catch (const std::runtime_error& e) {
    throw std::invalid_argument(e.what());
  }
  for (const std::string& fault : f.faults) f.control.faults.push_back(ParseFaultInjection(fault));
  // Checked now, not once the data is loaded; and before the folder lock, which would create it.
  if (!f.control.resume_dir.empty() && !std::filesystem::exists(run::CheckpointPath(f.control.resume_dir)))
    throw std::invalid_argument("--resume " + f.control.resume_dir +
                                ": no checkpoint here (resume from the folder the run wrote its checkpoints to)");
  // A resumed run keeps checkpointing where it resumed from unless told otherwise.
  if (!f.control.resume_dir.empty() && f.control.checkpoint_dir.empty())
    f.control.checkpoint_dir = f.control.resume_dir;
  if (f.control.checkpoint_every > 0 && f.control.checkpoint_dir.empty())
    throw std::invalid_argument("--checkpoint-every needs --checkpoint-dir (or --resume, which checkpoints there)");
  if (f.hidden != "auto") ParseHidden(f.hidden);  // refused now; written with the shape (SettleShape)
  f.options.eval = ParseEvalEvery(f.eval_every);
  if (f.final_eval != "full" && f.final_eval != "sample")
    throw std::invalid_argument("--final-eval must be 'full' or 'sample', not '" + f.final_eval + "'");
  f.options.final_eval_full = f.final_eval == "full";
  if (!f.options.final_eval_full && f.options.eval_rows == 0)
    throw std::invalid_argument("--final-eval sample scores the --eval-rows sample; give --eval-rows N");
  if (f.given("--propensity") && f.test.empty())
    throw std::invalid_argument("--propensity weighs the PSP@k of the --test evaluations; give --test");
  const bool sampled_output = f.algo == "slide" || (f.cpu_output == "sampled" && f.algo != "single");
  f.options.math = SettleOutputMath(f, sampled_output);
  f.options.propensity = ParsePropensity(f.propensity);
  GivenLearningRate(f);  // refused now; written after loading (ScaleLearningRate)
  f.options.lr_schedule = scheduler::ParseLrSchedule(f.lr_schedule);
  SettleRankerFlags(f);
}

AfterLoading SettleAfterLoading(TrainFlags& f, ranks::RankGroup* ranks, const TrainingData& data) {
  AfterLoading settled;
  settled.lr_scaling = ApplyPreset(f, data.train.num_rows());
  ApplySampledOutputPreset(f, data.shape.num_labels, ranks->rank() == 0);
  // Before anything is trained, the ranks compare what each is about to train.
  if (ranks->size() > 1) CheckRanksAgree(ranks, RankSettings(f, data));
  settled.planned_host_bytes =
      CheckMemoryPlan(f, data.shape, data.train, ranks->rank(), PlannedRankerMemory(f, data, ranks->rank() == 0));
  return settled;
}

}  // namespace xmlt::apps
