// How `xmltrain train`'s flags become its plan; see plan_around_loading.h.
#include "apps/plan_around_loading.h"

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
nlohmann::json RankSettings(const TrainFlags& f, const TrainPlan& plan, const TrainingData& data) {
  nlohmann::json settings =
      run::RunFingerprint(OptionsWithGivenInputRate(f, plan), plan.scheduling, plan.shape, data.train, data.test.get());
  settings["lr"] = f.lr;  // as given: 'auto' has no value yet, and the scaling is the same on every rank
  settings["epochs"] = plan.options.epochs;
  settings["eval_every"] = f.eval_every;
  settings["checkpoint_every"] = plan.control.checkpoint_every;
  settings["max_rollbacks"] = plan.control.max_rollbacks;
  settings["resume"] = !plan.control.resume_dir.empty();
  settings["inject_fault"] = f.faults;
  settings["propensity"] = f.propensity;  // the ranks add up each other's weighted evaluation sums
  return settings;
}

}  // namespace

TrainPlan PlanBeforeLoading(const TrainFlags& f, ranks::RankGroup* ranks) {
  TrainPlan plan = PlanAsGiven(f);
  ApplyAlgorithm(f, &plan);
  SpreadOverRanks(f, ranks, &plan);
  PlanStepDefaults(f, &plan);
  CheckFlagsBeforeLoading(f, plan);
  CheckGpusExist(plan, ranks->rank());
  // A bad XMLT_CPU_ISA (unknown, or more than this CPU runs) is refused before any loading.
  try {
    kernels::cpu::ActiveCpuIsa();
  } catch (const std::runtime_error& e) {
    throw std::invalid_argument(e.what());
  }
  run::RunControl& control = plan.control;
  for (const std::string& fault : f.faults) control.faults.push_back(ParseFaultInjection(fault));
  // Checked now, not once the data is loaded; and before the folder lock, which would create it.
  if (!control.resume_dir.empty() && !std::filesystem::exists(run::CheckpointPath(control.resume_dir)))
    throw std::invalid_argument("--resume " + control.resume_dir +
                                ": no checkpoint here (resume from the folder the run wrote its checkpoints to)");
  // A resumed run keeps checkpointing where it resumed from unless told otherwise.
  if (!control.resume_dir.empty() && control.checkpoint_dir.empty()) control.checkpoint_dir = control.resume_dir;
  if (control.checkpoint_every > 0 && control.checkpoint_dir.empty())
    throw std::invalid_argument("--checkpoint-every needs --checkpoint-dir (or --resume, which checkpoints there)");
  if (f.hidden != "auto") ParseHidden(f.hidden);  // refused now; decided with the shape (PlanShape)
  scheduler::TrainOptions& options = plan.options;
  options.eval = ParseEvalEvery(f.eval_every);
  if (f.final_eval != "full" && f.final_eval != "sample")
    throw std::invalid_argument("--final-eval must be 'full' or 'sample', not '" + f.final_eval + "'");
  options.final_eval_full = f.final_eval == "full";
  if (!options.final_eval_full && options.eval_rows == 0)
    throw std::invalid_argument("--final-eval sample scores the --eval-rows sample; give --eval-rows N");
  if (f.given("--propensity") && f.test.empty())
    throw std::invalid_argument("--propensity weighs the PSP@k of the --test evaluations; give --test");
  const bool sampled_output = f.algo == "slide" || (f.cpu_output == "sampled" && f.algo != "single");
  options.math = PlanOutputMath(f, plan, sampled_output);
  options.bf16_optimizer_state = PlanBf16OptimizerState(f, plan, sampled_output);
  options.bf16_weights = PlanBf16Weights(f, &plan, sampled_output);
  options.propensity = ParsePropensity(f.propensity);
  GivenLearningRate(f);  // refused now; decided after loading (ScaleLearningRate)
  options.lr_schedule = scheduler::ParseLrSchedule(f.lr_schedule);
  PlanRankerOptions(f, &plan);
  return plan;
}

void PlanAfterLoading(const TrainFlags& f, ranks::RankGroup* ranks, const TrainingData& data, TrainPlan* plan) {
  ApplyPreset(f, data.train.num_rows(), plan);
  ApplySampledOutputPreset(f, plan->shape.num_labels, ranks->rank() == 0, plan);
  // Before anything is trained, the ranks compare what each is about to train.
  if (ranks->size() > 1) CheckRanksAgree(ranks, RankSettings(f, *plan, data));
  plan->planned_host_bytes =
      CheckMemoryPlan(f, *plan, data.train, ranks->rank(), PlannedRankerMemory(*plan, data, ranks->rank() == 0));
}

}  // namespace xmlt::apps
