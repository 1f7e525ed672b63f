// What `xmltrain train` says; see train_report.h.
#include "apps/train_report.h"

#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>

#include "apps/propensity_flag.h"
#include "apps/stdout_check.h"

namespace xmlt::apps {

void PrintEval(const run::EvalRecord& r) {
  char line[512];
  int used = std::snprintf(line, sizeof line, "epoch %6.2f  megabatch %4llu  train %7.2fs  loss %.4f", r.epoch,
                           static_cast<unsigned long long>(r.megabatch), r.train_time_s, r.train_loss);
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

nlohmann::json TrainSummary(const kernels::ModelShape& shape, const run::TrainResult& result, double load_seconds,
                            bool has_test) {
  const run::EvalRecord& last = result.last;
  nlohmann::json summary = {
      {"summary", true},
      {"model_shape", shape.ToString()},
      {"epochs", last.epoch},
      {"batches", result.batches},
      {"train_samples", last.train_samples},
      {"train_time_s", last.train_time_s},
      {"samples_per_s", last.train_time_s > 0 ? double(last.train_samples) / last.train_time_s : 0.0},
      {"wall_time_s", last.wall_time_s},
      {"load_time_s", load_seconds},
      {"train_loss", last.train_loss},
      {"rollbacks", result.rollbacks}};
  if (has_test) {
    summary.update(RankingJson(last.test.metrics));
    summary.update({{"loss", last.test.loss},
                    {"best_p1", result.best.test.metrics.p1},
                    {"best_epoch", result.best.epoch}});
  }
  return summary;
}

}  // namespace xmlt::apps
