// Flags that only part of an algorithm reads; see algorithm_flags.h.
#include "apps/algorithm_flags.h"

#include <stdexcept>
#include <string>

namespace xmlt::apps {

namespace {

using Engine = scheduler::SchedulerOptions;

// The run as the user chose it: "--algo elastic", "--algo adaptive --merge average".
std::string ChosenRun(const TrainFlags& f) {
  std::string run = "--algo " + f.algo;
  if (f.given("--schedule")) run += " --schedule " + f.schedule;
  if (f.given("--merge")) run += " --merge " + f.merge;
  return run;
}

void Refuse(const TrainFlags& f, const char* flag, const std::string& reader, const std::string& choose) {
  throw std::invalid_argument(std::string(flag) + " applies to " + reader + " and " + ChosenRun(f) +
                              " would ignore it: drop it, or choose " + choose);
}

}  // namespace

void RefuseFlagsTheAlgorithmIgnores(const TrainFlags& f, const scheduler::SchedulerOptions& scheduling) {
  // Algorithm 1 rescales the batches after each mega-batch of dynamic dispatch only (loop_records.cc).
  if (scheduling.schedule != Engine::Schedule::kDynamic)
    for (const char* flag : {"--batch-min", "--beta"})
      if (f.given(flag))
        Refuse(f, flag, "Algorithm 1's batch sizes, which only dynamic dispatch rescales",
               "--algo adaptive (or --schedule dynamic)");
  // The perturbation is Algorithm 2's, the normalized merge's (normalized_merger.cc).
  if (scheduling.merge != Engine::Merge::kNormalized)
    for (const char* flag : {"--pert-thr", "--pert-delta", "--pert-weights"})
      if (f.given(flag))
        Refuse(f, flag, "the normalized merge's perturbation (Algorithm 2)", "--algo adaptive (or --merge normalized)");
  // Sync dispatch merges every round: its mega-batch only sets when it evaluates, so there is no
  // merge to warm up (training_loop.cc).
  if (f.given("--mega-batch-warmup") && scheduling.schedule == Engine::Schedule::kSync)
    Refuse(f, "--mega-batch-warmup", "the merges after a mega-batch of dynamic or static dispatch",
           "--algo adaptive, elastic or adasum (or --schedule dynamic or static)");
  // The elastic force is EASGD's (the average merge) and CROSSBOW's (merge_factory.cc).
  if (f.given("--elastic-alpha") && scheduling.merge != Engine::Merge::kAverage && scheduling.merge != Engine::Merge::kCrossbow)
    Refuse(f, "--elastic-alpha", "the elastic force of the average merge (EASGD) and of crossbow",
           "--algo elastic or crossbow (or --merge average)");
}

}  // namespace xmlt::apps
