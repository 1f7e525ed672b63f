// What `xmltrain train` says; see train_report.h.
#include "apps/train_report.h"

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>

#include "apps/propensity_flag.h"
#include "apps/stdout_check.h"
#include "engine/device_query.h"
#include "kernels/cpu/bf16_gemm.h"
#include "kernels/cpu/cpu_isa.h"
#include "kernels/output_math.h"
#include "scheduler/train_options.h"

namespace xmlt::apps {
namespace {

// The summary's figures (`has_test`: with the last evaluation's test metrics).
nlohmann::json SummaryFigures(const kernels::ModelShape& shape, const run::TrainResult& result, double load_seconds,
                              bool has_test, bool virtual_clock) {
  const run::EvalRecord& last = result.last;
  const auto per_second = [&](double seconds) { return seconds > 0 ? double(last.train_samples) / seconds : 0.0; };
  nlohmann::json summary = {
      {"summary", true},
      {"model_shape", shape.ToString()},
      {"epochs", last.epoch},
      {"batches", result.batches},
      {"train_samples", last.train_samples},
      {"clock", virtual_clock ? "virtual" : "wall"},
      {"train_time_s", last.train_time_s},
      // Each rate names its clock. The wall clock times training alone; on the virtual clock the
      // wall rate is over the wall time since training began, evaluations included.
      {"samples_per_wall_s", per_second(virtual_clock ? last.wall_time_s : last.train_time_s)},
      {"wall_time_s", last.wall_time_s},
      {"load_time_s", load_seconds},
      {"train_loss", last.train_loss},
      {"rollbacks", result.rollbacks},
      {"planned_epochs", result.planned_epochs}};
  // The held-out rows ended the MLP's training before its planned epochs (run/holdout_stop.h).
  if (result.stopped_by_holdout_epoch > 0) summary["stopped_by_holdout_epoch"] = result.stopped_by_holdout_epoch;
  if (virtual_clock) summary["samples_per_virtual_s"] = per_second(last.train_time_s);
  if (has_test) {
    summary.update(TopKMetricsJson(last.test.metrics));
    // The best of the MLP's evaluations during training; p1.. are the final model's (with the
    // shortlist ranker when it has one), which no evaluation during training saw.
    summary.update({{"loss", last.test.loss},
                    {"mlp_best_p1", result.best.test.metrics.p1},
                    {"mlp_best_epoch", result.best.epoch}});
  }
  return summary;
}

}  // namespace

void PrintEval(const run::EvalRecord& r, bool virtual_clock) {
  char line[512];
  int used = std::snprintf(line, sizeof line, "epoch %6.2f  megabatch %4llu  train %7.2f %s s  loss %.4f", r.epoch,
                           static_cast<unsigned long long>(r.megabatch), r.train_time_s,
                           virtual_clock ? "virtual" : "wall", r.train_loss);
  if (r.test.rows > 0) {
    used += std::snprintf(line + used, sizeof line - size_t(used),
                          "  test loss %.4f  P@1 %.4f  P@3 %.4f  P@5 %.4f  nDCG@3 %.4f  nDCG@5 %.4f", r.test.loss,
                          r.test.metrics.p1, r.test.metrics.p3, r.test.metrics.p5, r.test.metrics.ndcg3,
                          r.test.metrics.ndcg5);
    if (r.test.metrics.propensity_scored)
      used += std::snprintf(line + used, sizeof line - size_t(used), "  PSP@1 %.4f  PSP@5 %.4f", r.test.metrics.psp1,
                            r.test.metrics.psp5);
  }
  WriteStdout(std::string(line) + "\n");
}

nlohmann::json ReportLrSearch(const run::LrSearchResult& search, const engine::DeviceSpec& device, bool say) {
  std::ostringstream grid;
  nlohmann::json candidates = nlohmann::json::array();
  for (const run::LrCandidate& c : search.candidates) {
    grid << " " << c.lr << ":" << (c.diverged ? std::string("diverged") : std::to_string(c.heldout_p1).substr(0, 5));
    candidates.push_back({{"lr", c.lr}, {"heldout_p1", c.heldout_p1},
                          {"heldout_loss", c.diverged ? nlohmann::json(nullptr) : nlohmann::json(c.heldout_loss)},
                          {"diverged", c.diverged}});
  }
  // One step below the short runs' best, unless the best is the smallest candidate.
  std::ostringstream why;
  if (search.picked == search.winner) {
    why << "the short runs' best and the smallest candidate";
  } else {
    why << "one step below the short runs' best " << search.winner;
  }
  if (say)
    std::cerr << "--lr auto: picked " << search.picked << ", " << why.str() << " (held-out P@1 per candidate:"
              << grid.str() << "; " << search.batches_per_candidate << " batches each on " << search.search_rows
              << " rows, " << search.heldout_rows << " held out, on " << device.id
              << (search.sampled ? " with the sampled step" : "") << ", " << search.seconds
              << " s)\n";
  return {{"picked", search.picked},
          {"winner", search.winner},
          {"candidates", candidates},
          {"batches_per_candidate", search.batches_per_candidate},
          {"search_rows", search.search_rows},
          {"heldout_rows", search.heldout_rows},
          {"device", device.id},
          {"step", search.sampled ? "sampled" : "dense"},
          {"seconds", search.seconds}};
}

void SayModelAndStep(const TrainFlags& f, const TrainPlan& plan, const TrainingData& data, size_t ranks) {
  const kernels::ModelShape& shape = plan.shape;
  std::cerr << "model " << shape.ToString() << " (" << shape.NumParameters() << " parameters), "
            << data.train.num_rows() << " training rows, loaded in " << data.load_seconds << " s; planned host memory "
            << ((plan.planned_host_bytes + (1 << 20) - 1) >> 20) << " MiB"
            << (ranks > 1 ? " on rank 0 (the most of any rank: it alone writes checkpoints)" : "") << "; training on "
            << engine::DeviceListText(plan.scheduling.devices) << " (" << engine::CudaDeviceSummary()
            << (ranks > 1 ? " on rank 0; " + std::to_string(ranks) + " ranks" : std::string()) << ")\n";
  const bool cpu_devices =
      std::any_of(plan.scheduling.devices.begin(), plan.scheduling.devices.end(),
                  [](const engine::DeviceSpec& spec) { return spec.kind == engine::DeviceKind::kCpu; });
  std::cerr << "step: SGD at lr " << plan.options.lr << " (" << f.lr_schedule << "), local momentum "
            << plan.options.local_momentum << "; first layer "
            << (plan.options.input_lr > 0 ? "Adagrad at " + std::to_string(plan.options.input_lr)
                                          : std::string("the same"))
            << "; dropout " << plan.options.dropout << "; weight decay " << plan.options.weight_decay
            << "; output products in " << kernels::OutputMathName(plan.options.math)
            << (plan.options.math == kernels::OutputMath::kBf16 && cpu_devices ? " (" + kernels::cpu::Bf16Isa() + ")"
                                                                               : "")
            << (plan.options.bf16_optimizer_state ? "; optimizer state in bf16" : "")
            << (plan.options.bf16_weights ? "; weights in bf16" : "") << "\n";
}

nlohmann::json TrainSummary(const TrainFlags& f, const TrainPlan& plan, const TrainingData& data,
                            const run::TrainResult& result, const nlohmann::json& lr_search) {
  nlohmann::json summary = SummaryFigures(plan.shape, result, data.load_seconds, data.test != nullptr,
                                          plan.scheduling.clock == scheduler::SchedulerOptions::Clock::kVirtual);
  // What the virtual clock charged, and where that came from: its times compare only between
  // runs that charged the same.
  if (plan.scheduling.clock == scheduler::SchedulerOptions::Clock::kVirtual)
    summary["virtual_clock"] = {{"row_cost_s", result.row_cost_s},
                                {"merge_cost_s", result.merge_cost_s},
                                {"costs", plan.scheduling.row_cost_s > 0 && plan.scheduling.merge_cost_s > 0 ? "given"
                                          : plan.scheduling.measure_clock_costs                          ? "measured"
                                                                                                     : "model"}};
  if (!plan.model_out.empty()) summary["model"] = plan.model_out;
  if (!result.checkpoint.empty()) summary["checkpoint"] = result.checkpoint;
  if (!result.end_checkpoint_error.empty()) summary["checkpoint_error"] = result.end_checkpoint_error;
  if (!lr_search.is_null()) summary["lr_search"] = lr_search;
  summary["merge_on"] = scheduler::MergesOnGpus(plan.scheduling) ? "gpus" : "host";
  // The CPU step's vector kernels: XMLT_CPU_ISA's, or the widest this CPU runs.
  summary["cpu_isa"] = kernels::cpu::CpuIsaName(kernels::cpu::ActiveCpuIsa());
  // Which devices stepped with the sampled output layer, and so without local momentum.
  if (f.algo != "slide" && plan.scheduling.sampled_output.enabled) {
    summary["cpu_output"] = "sampled";
    nlohmann::json sampled = nlohmann::json::array();
    for (const engine::DeviceSpec& spec : plan.scheduling.devices)
      if (spec.kind == engine::DeviceKind::kCpu) sampled.push_back(spec.id);
    summary["sampled_devices"] = sampled;
  }
  return summary;
}

}  // namespace xmlt::apps
