// The shortlist ranker in a train run; see train_ranker.h.
#include "apps/train_ranker.h"

#include <atomic>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <stdexcept>
#include <string>

#include "apps/propensity_flag.h"
#include "apps/shortest_text.h"
#include "data/row_subset.h"
#include "engine/device_spec.h"
#include "run/final_evaluation.h"
#include "run/fold_blend_choice.h"
#include "run/multi_device_run.h"
#include "run/ranker_plan.h"
#include "scheduler/memory_limit.h"
#include "scheduler/train_options.h"

namespace xmlt::apps {
namespace {

// A number in [0, 1] for --ranker-blend, or std::invalid_argument. Read as a double: a weight too
// small for a float (1e-50) is a weight of 0, not a number out of range.
float ParseBlend(const std::string& text) {
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  const bool number = !text.empty() && !std::isspace(static_cast<unsigned char>(text[0])) && *end == '\0';
  if (!number || !(value >= 0.0 && value <= 1.0))
    throw std::invalid_argument("--ranker-blend must be 'auto' or a number in [0, 1], not '" + text + "'");
  return float(value);
}

}  // namespace

void PlanRankerOptions(const TrainFlags& f, TrainPlan* plan) {
  if (f.ranker != "auto" && f.ranker != "off")
    throw std::invalid_argument("--ranker must be auto or off, not '" + f.ranker + "'");
  run::RankerOptions& o = plan->ranker;
  o.enabled = f.ranker == "auto" && !(f.preset == "paper" && !f.given("--ranker"));
  o.blend = f.ranker_blend == "auto" ? -1.0f : ParseBlend(f.ranker_blend);
  if (!(o.holdout > 0 && o.holdout <= 0.5))
    throw std::invalid_argument("--ranker-holdout must be in (0, 0.5], not " + ShortestText(o.holdout));
  if (o.shortlist < 5 || o.shortlist > kernels::kMaxShortlist)
    throw std::invalid_argument("--ranker-shortlist must be 5 to " + std::to_string(kernels::kMaxShortlist) + ", not " +
                                std::to_string(o.shortlist));
  if (o.passes == 0) throw std::invalid_argument("--ranker-passes must be 1 or more");
  const bool tuned = f.given("--ranker-blend") || f.given("--ranker-holdout") || f.given("--ranker-shortlist") ||
                     f.given("--ranker-passes");
  if (!o.enabled && tuned) {
    // Say what turned the ranker off, the preset when the user did not.
    const std::string why = f.given("--ranker") ? "--ranker off turned it off"
                                                : "--preset paper turned it off (the paper's MLP alone); give "
                                                  "--ranker auto with the preset to train the ranker";
    throw std::invalid_argument("--ranker-blend, -holdout, -shortlist and -passes need --ranker auto: " + why);
  }
  if (f.given("--ranker-holdout") && !o.choose_blend())
    throw std::invalid_argument("--ranker-holdout is where --ranker-blend auto chooses: a fixed blend holds no rows out");
}

namespace {

std::string MiB(uint64_t bytes) { return std::to_string((bytes + (1 << 20) - 1) >> 20) + " MiB"; }

// Whether rank 0's ranker fits (1) or not (0), for every rank: the held-out rows must be the same.
bool AgreeOnRank0(ranks::RankGroup* ranks, bool fits) {
  if (ranks == nullptr || ranks->size() < 2) return fits;
  float value = fits ? 1.0f : 0.0f;
  ranks->Broadcast(&value, 1, 0);
  return value != 0.0f;
}

}  // namespace

void HoldOutRankerRows(TrainingData* data, ranks::RankGroup* ranks, TrainPlan* plan) {
  run::RankerOptions& o = plan->ranker;
  if (!o.enabled) return;
  const bool writer = ranks == nullptr || ranks->rank() == 0;
  const uint64_t rows = data->train.num_rows(), held_out = run::HoldoutRows(o, rows);
  if (held_out == 0 && o.choose_blend() && run::BlendFolds(o, rows) == 0) {  // the same on every rank
    if (writer)
      std::cerr << "note: no ranker: " << rows << " training rows are fewer than the " << run::kMinFoldRows
                << " its blend is chosen on\n";
    o.enabled = false;
    return;
  }
  // Rank 0 fits the ranker: its memory decides.
  const uint64_t available = writer ? scheduler::AvailableMemory() : 0;
  const run::RankerPlan fit = writer ? run::PlanRanker(o, plan->shape, data->train, available) : run::RankerPlan{};
  if (!AgreeOnRank0(ranks, fit.fits())) {
    if (writer) {
      std::cerr << "warning: no ranker: ";
      if (fit.verdict == run::RankerPlan::Verdict::kTooManyPairs)
        std::cerr << "the training rows hold " << fit.pairs << " (feature, label) pairs, more than its "
                  << run::kMaxRankerPairs;
      else
        std::cerr << "its stage after training would need " << MiB(fit.memory.total()) << " of host memory for "
                  << fit.pairs << " (feature, label) pairs, and " << MiB(available) << " are available"
                  << (available == scheduler::MemoryLimitFromEnvironment() ? " (XMLT_MEMORY_LIMIT)" : "");
      std::cerr << "; decided before training: the MLP alone is trained on every row (--ranker off says so)\n";
    }
    o.enabled = false;
    return;
  }
  data->ranker_pairs = fit.pairs;
  if (held_out == 0) return;  // a fixed blend, or one chosen by folds before training
  const run::HoldoutSplit split = run::SplitHoldout(rows, held_out, plan->options.seed);
  data->holdout = std::make_unique<data::Dataset>(data::SelectRows(data->train, split.held_out));
  data->train = data::SelectRows(data->train, split.kept);
}

scheduler::RankerMemory PlannedRankerMemory(const TrainPlan& plan, const TrainingData& data, bool here) {
  if (!plan.ranker.enabled || !here) return {};
  const uint64_t rows = data.train.num_rows();
  // By folds, every row is scored out of its fold, as held-out rows are.
  const bool by_folds = !data.holdout && run::BlendFolds(plan.ranker, rows) > 0;
  const uint64_t scored = data.holdout ? data.holdout->num_rows() : by_folds ? rows : 0;
  return run::RankerStageMemory(plan.ranker, plan.shape, data.train, rows, scored, data.ranker_pairs, by_folds);
}

namespace {

// The blend chosen by folds of `data.train` (run/fold_blend_choice.h), each fold's MLP trained as
// the run trained its own. nullopt, said when `say`, when a fold's MLP diverged or a stop ended it
// (`*stopped_out` then set when it was the stage's stop).
std::optional<run::FoldBlendChoice> ChooseBlendByFolds(const TrainPlan& plan, const TrainingData& data, bool say,
                                                       const std::function<bool()>& stopped,
                                                       const std::atomic<int>* stop_signal, bool* stopped_out) {
  scheduler::SchedulerOptions scheduling = plan.scheduling;
  if (scheduler::RankCount(scheduling) > 1) {
    // The other ranks' part has ended: rank 0 trains the folds alone, on its host.
    scheduling.devices = engine::ParseDeviceList("cpu:" + std::to_string(scheduling.devices.size()));
    scheduling.device_rank.clear();
    scheduling.merge_on = scheduler::SchedulerOptions::MergeOn::kAuto;
  }
  scheduler::TrainOptions options = plan.options;
  options.eval = scheduler::EvalSchedule{scheduler::EvalSchedule::Kind::kEnd, 0};
  options.eval_rows = 0;
  run::RunControl control;
  control.max_rollbacks = plan.control.max_rollbacks;
  control.stop_signal = stop_signal;
  bool diverged = false;
  const auto train_mlp = [&](const data::Dataset& rows) -> std::optional<kernels::Model<float>> {
    kernels::Model<float> model = kernels::InitModel<float>(plan.shape, plan.options.seed);
    try {
      if (run::RunMultiDevice(rows, nullptr, options, scheduling, &model, {}, control).stopped_by_signal != 0)
        return std::nullopt;
    } catch (const run::RunStopped&) {
      diverged = true;  // past its rollbacks, or out of devices: no choice
      return std::nullopt;
    }
    return model;
  };
  const uint64_t rows = data.train.num_rows();
  if (say)
    std::cerr << "ranker: " << rows << " training rows are too few to hold a share out; its blend is chosen by "
              << run::kBlendFolds << " folds (the MLP and the ranker trained on the other folds)\n";
  run::FoldBlendChoice choice = run::ChooseBlendByFolds(data.train, plan.ranker, plan.options.seed, train_mlp,
                                                        /*scoring=*/true, stopped);
  if (!choice.stopped) return choice;
  *stopped_out = stopped && stopped();
  if (say && !*stopped_out)
    std::cerr << "ranker: " << (diverged ? "a fold's MLP diverged" : "a fold's training was stopped")
              << ": no blend could be chosen, the MLP alone is kept\n";
  return std::nullopt;
}

// The devices that score the shortlists: rank 0's, which runs the stage (the only rank of one
// process), in the run's math.
run::ShortlistDevices ShortlistDevicesOf(const TrainPlan& plan) {
  run::ShortlistDevices where;
  where.math = plan.options.math;
  const scheduler::SchedulerOptions& scheduling = plan.scheduling;
  for (size_t d = 0; d < scheduling.devices.size(); ++d)
    if (scheduling.device_rank.empty() || scheduling.device_rank[d] == 0) where.devices.push_back(scheduling.devices[d]);
  return where;
}

}  // namespace

RankerOutcome FitRanker(const TrainPlan& plan, const TrainingData& data, kernels::Model<float> mlp, bool say,
                        const std::function<bool()>& stopped, const std::atomic<int>* stop_signal) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  RankerOutcome outcome;
  outcome.model.mlp = std::move(mlp);
  if (!plan.ranker.enabled) return outcome;
  std::optional<run::FoldBlendChoice> folds;
  if (!data.holdout && run::BlendFolds(plan.ranker, data.train.num_rows()) > 0) {
    bool stopped_in_folds = false;
    folds = ChooseBlendByFolds(plan, data, say, stopped, stop_signal, &stopped_in_folds);
    if (stopped_in_folds) {
      outcome.stopped = true;
      return outcome;
    }
    if (!folds) {  // no choice: the MLP alone
      outcome.seconds = std::chrono::duration<double>(Clock::now() - start).count();
      return outcome;
    }
  }
  run::RankerStageResult stage =
      run::TrainShortlistRanker(outcome.model.mlp, data.train, data.holdout.get(), plan.ranker, stopped,
                                folds ? &folds->choice : nullptr, ShortlistDevicesOf(plan));
  if (folds) {
    stage.report.folds = folds->folds;
    stage.report.choice_seconds += folds->seconds;
  }
  if (stage.stopped) {
    outcome.stopped = true;
    return outcome;
  }
  outcome.model.ranker = stage.ranker;
  outcome.report = std::move(stage.report);
  if (data.test && outcome.model.ranker)
    outcome.test = run::EvaluateFinalModel(outcome.model, *data.test, plan.options);
  outcome.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  if (say) {
    const run::RankerStageReport& r = outcome.report;
    for (const std::string& fault : r.device_faults)
      std::cerr << "warning: ranker: device " << fault << "; the host scored its share of the shortlists\n";
    char line[512];
    const kernels::ShortlistRanker* ranker = outcome.model.ranker.get();
    int used = std::snprintf(line, sizeof line, "ranker: %llu pairs, %.1f passes a label (%u at most), blend %s %.1f",
                             static_cast<unsigned long long>(r.pairs), r.solver.mean_passes, r.solver.most_passes,
                             kernels::BlendFormName(ranker ? ranker->form : kernels::BlendForm::kArithmetic),
                             ranker ? double(ranker->blend) : 0.0);
    if (!r.choice.trials.empty() && r.folds > 0) {
      used += std::snprintf(line + used, sizeof line - size_t(used),
                            " chosen by %u folds of the training rows (P@1 %.4f out of fold, the MLP alone %.4f)",
                            r.folds, r.choice.trials[r.choice.chosen].metrics.p1, r.choice.trials.front().metrics.p1);
    } else if (!r.choice.trials.empty()) {
      used += std::snprintf(line + used, sizeof line - size_t(used),
                            " chosen on %llu held-out rows (P@1 %.4f, the MLP alone %.4f)",
                            static_cast<unsigned long long>(r.holdout_rows), r.choice.trials[r.choice.chosen].metrics.p1,
                            r.choice.trials.front().metrics.p1);
    }
    if (outcome.test)
      used += std::snprintf(line + used, sizeof line - size_t(used), "; test P@1 %.4f  P@3 %.4f  P@5 %.4f",
                            outcome.test->metrics.p1, outcome.test->metrics.p3, outcome.test->metrics.p5);
    std::snprintf(line + used, sizeof line - size_t(used), "; %.1f s", outcome.seconds);
    std::cerr << line << (outcome.model.ranker ? "" : " (the MLP alone is kept)");
    if (r.labels_skipped > 0)
      std::cerr << "; chosen once the labels the held-out rows read were solved: " << r.labels_skipped
                << " other labels left unsolved";
    std::cerr << "\n";
  }
  return outcome;
}

void AddRankerSummary(const TrainPlan& plan, const RankerOutcome& outcome, nlohmann::json* summary) {
  if (!plan.ranker.enabled) {
    (*summary)["ranker"] = {{"fitted", false}};
    return;
  }
  const run::RankerStageReport& r = outcome.report;
  nlohmann::json trials = nlohmann::json::array();
  for (const run::BlendTrial& t : r.choice.trials) {
    nlohmann::json trial = {
        {"form", kernels::BlendFormName(t.form)}, {"blend", t.blend}, {"mean_precision", t.mean_precision}};
    trial.update(TopKMetricsJson(t.metrics));
    trials.push_back(trial);
  }
  (*summary)["ranker"] = {
      {"fitted", true},
      {"used", outcome.model.ranker != nullptr},
      {"blend", outcome.model.ranker ? outcome.model.ranker->blend : 0.0f},
      {"blend_form",
       kernels::BlendFormName(outcome.model.ranker ? outcome.model.ranker->form : kernels::BlendForm::kArithmetic)},
      {"blend_chosen", plan.ranker.choose_blend()},
      {"holdout_rows", r.holdout_rows},
      {"blend_folds", r.folds},
      {"trials", trials},
      {"shortlist", plan.ranker.shortlist},
      {"pairs", r.pairs},
      {"dense_features", r.dense_features},
      {"instances", r.solver.instances},
      {"mean_passes", r.solver.mean_passes},
      {"most_passes", r.solver.most_passes},
      {"labels_at_pass_limit", r.solver.labels_at_limit},
      {"labels_skipped", r.labels_skipped},
      {"device_faults", r.device_faults},
      {"shortlist_s", r.shortlist_seconds},
      {"build_s", r.build_seconds},
      {"train_s", r.train_seconds},
      {"choice_s", r.choice_seconds},
      {"time_s", outcome.seconds}};
  if (summary->contains("wall_time_s")) (*summary)["wall_time_s"] = (*summary)["wall_time_s"].get<double>() + outcome.seconds;
  if (!outcome.test) return;
  // The final model's figures: the MLP's last evaluation moves to "mlp".
  nlohmann::json mlp;
  for (const char* key : {"p1", "p3", "p5", "ndcg3", "ndcg5", "psp1", "psp3", "psp5", "psndcg3", "psndcg5"})
    if (summary->contains(key)) mlp[key] = (*summary)[key];
  (*summary)["mlp"] = mlp;
  summary->update(TopKMetricsJson(outcome.test->metrics));
}

}  // namespace xmlt::apps
