// --algo and the devices it trains on, into the engine's options; see train_algorithm.h.
#include "apps/train_algorithm.h"

#include <stdexcept>
#include <string>
#include <string_view>

#include "engine/device_spec.h"
#include "engine/heterogeneity.h"
#include "merge/collective.h"
#include "run/one_device_run.h"

namespace xmlt::apps {

namespace {

using Scheduling = scheduler::SchedulerOptions;

// How each multi-device --algo dispatches batches and merges the replicas, as CreateMerger is a
// table of merges; --schedule and --merge given explicitly override either, so any combination can
// be swept. single and slide train one device and have neither.
struct AlgorithmPreset {
  std::string_view name, schedule, merge;
};
constexpr AlgorithmPreset kMultiDeviceAlgorithms[] = {
    {"adaptive", "dynamic", "normalized"},  // Adaptive SGD: Algorithm 1's dispatch and merge
    {"elastic", "static", "average"},
    {"adasum", "static", "adasum"},
    {"sync", "sync", "gradient"},  // the presets set the local momentum (ApplyPreset)
    {"crossbow", "sync", "crossbow"},
};

template <typename Value>
struct Named {
  std::string_view name;
  Value value;
};
constexpr Named<Scheduling::Schedule> kSchedules[] = {
    {"dynamic", Scheduling::Schedule::kDynamic}, {"static", Scheduling::Schedule::kStatic}, {"sync", Scheduling::Schedule::kSync}};
constexpr Named<Scheduling::Clock> kClocks[] = {{"wall", Scheduling::Clock::kWall}, {"virtual", Scheduling::Clock::kVirtual}};
constexpr Named<Scheduling::MergeOn> kMergePlaces[] = {
    {"auto", Scheduling::MergeOn::kAuto}, {"host", Scheduling::MergeOn::kHost}, {"gpus", Scheduling::MergeOn::kGpus}};
constexpr Named<Scheduling::Merge> kMerges[] = {{"normalized", Scheduling::Merge::kNormalized},
                                            {"average", Scheduling::Merge::kAverage},
                                            {"adasum", Scheduling::Merge::kAdasum},
                                            {"crossbow", Scheduling::Merge::kCrossbow},
                                            {"gradient", Scheduling::Merge::kGradient}};

// The row of `table` called `name`, or null.
template <typename Row, size_t N>
const Row* Find(const Row (&table)[N], std::string_view name) {
  for (const Row& row : table)
    if (row.name == name) return &row;
  return nullptr;
}

}  // namespace

bool OneDevice(const TrainFlags& f) { return f.algo == "single" || f.algo == "slide"; }

// --algo presets set how batches are dispatched and merged; --schedule, --merge and
// --local-momentum given explicitly override them, so any combination can be swept.
void ApplyAlgorithm(const TrainFlags& f, TrainPlan* plan) {
  plan->scheduling.devices = engine::ParseDeviceList(f.devices);
  plan->scheduling.heterogeneity = engine::ParseHetero(f.hetero);
  plan->scheduling.heterogeneity.speed = engine::ParseSpeeds(f.speed);
  try {
    plan->scheduling.collective = merge::ParseCollectiveKind(f.collective);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string("--collective: ") + e.what());
  }
  const auto* clock = Find(kClocks, f.clock);
  if (clock == nullptr) throw std::invalid_argument("--clock must be wall or virtual");
  plan->scheduling.clock = clock->value;
  if (f.clock_costs != "model" && f.clock_costs != "measured")
    throw std::invalid_argument("--clock-costs must be model or measured, not '" + f.clock_costs + "'");
  if (f.given("--clock-costs") && f.clock == "wall")
    throw std::invalid_argument("--clock-costs is for the virtual clock; --clock wall measures real time");
  plan->scheduling.measure_clock_costs = f.clock_costs == "measured";
  if (f.momentum_mode == "heavy" || f.momentum_mode == "nesterov") {
    plan->scheduling.merge_rule.momentum_mode =
        f.momentum_mode == "nesterov" ? merge::MomentumMode::kNesterov : merge::MomentumMode::kHeavy;
  } else {
    throw std::invalid_argument("--momentum-mode must be heavy or nesterov");
  }
  const auto* merge_on = Find(kMergePlaces, f.merge_on);
  if (merge_on == nullptr) throw std::invalid_argument("--merge-on must be auto, host or gpus");
  plan->scheduling.merge_on = merge_on->value;
  if (f.algo == "slide") {
    // SLIDE: one CPU device whose threads share its model, with the sampled output layer; plain
    // SGD (its step has no momentum buffer to update sparsely).
    if (f.given("--devices") &&
        (plan->scheduling.devices.size() != 1 || plan->scheduling.devices[0].kind != engine::DeviceKind::kCpu))
      throw std::invalid_argument("--algo slide trains on one CPU device, whose threads share the model (--threads); "
                                  "not on " + f.devices);
    if (f.given("--merge-on"))
      throw std::invalid_argument("--merge-on: --algo slide trains one CPU device and has no merge; drop it");
    plan->scheduling = run::SingleDeviceScheduling(engine::DeviceSpec{});
    plan->scheduling.sampled_output = GivenSampledOutput(f);
    plan->scheduling.sampled_output.enabled = true;
    if (!f.given("--local-momentum")) plan->options.local_momentum = 0;
    return;  // its --lr default, 1, is GivenLearningRate's
  }
  if (f.algo == "single") {
    // The engine with one device, of any kind: the CPU unless --devices names another.
    if (f.given("--devices") && plan->scheduling.devices.size() != 1)
      throw std::invalid_argument("--algo single trains on one device; use --algo adaptive, elastic, adasum, "
                                  "sync or crossbow for " + f.devices);
    const Scheduling::MergeOn place = plan->scheduling.merge_on;
    plan->scheduling = run::SingleDeviceScheduling(f.given("--devices") ? plan->scheduling.devices[0] : engine::DeviceSpec{});
    // Its one replica becomes the global model after every mega-batch, on the GPU or on the host.
    plan->scheduling.merge_on = place;
    if (place == Scheduling::MergeOn::kGpus && plan->scheduling.devices[0].kind != engine::DeviceKind::kCuda)
      throw std::invalid_argument("--merge-on gpus needs a GPU; --algo single trains on " + plan->scheduling.devices[0].id);
    return;
  }
  const AlgorithmPreset* preset = Find(kMultiDeviceAlgorithms, f.algo);
  if (preset == nullptr)
    throw std::invalid_argument("--algo must be single, slide, adaptive, elastic, adasum, sync or crossbow");
  const std::string_view schedule = f.given("--schedule") ? std::string_view(f.schedule) : preset->schedule;
  const std::string_view merge = f.given("--merge") ? std::string_view(f.merge) : preset->merge;

  const auto* dispatch = Find(kSchedules, schedule);
  if (dispatch == nullptr) throw std::invalid_argument("--schedule must be dynamic, static or sync");
  plan->scheduling.schedule = dispatch->value;
  plan->scheduling.scale_batches = plan->scheduling.schedule == Scheduling::Schedule::kDynamic;
  const auto* rule = Find(kMerges, merge);
  if (rule == nullptr)
    throw std::invalid_argument("--merge must be normalized, average, adasum, crossbow or gradient");
  plan->scheduling.merge = rule->value;
  // The CPU devices of the list train with SLIDE's output layer (the device pool makes them); the
  // merges see the same parameters either way.
  if (f.cpu_output == "sampled") {
    plan->scheduling.sampled_output = GivenSampledOutput(f);
    plan->scheduling.sampled_output.enabled = true;
  }
}

// Under an MPI launcher one run spans every rank: --devices names each rank's own devices, the run
// has all of them, rank after rank (--speed and --hetero cover them all, in that order), and rank
// 0 alone writes the metrics, the model, the checkpoints and the summary.
void SpreadOverRanks(const TrainFlags& f, ranks::RankGroup* ranks, TrainPlan* plan) {
  if (ranks->size() <= 1) return;
  // The default --algo is one device in one process; say so rather than count the ranks' devices.
  if (OneDevice(f))
    throw std::invalid_argument("--algo " + f.algo + " trains one device in one process; a run over " +
                                std::to_string(ranks->size()) +
                                " MPI ranks needs a multi-device --algo (adaptive, elastic, adasum, sync, crossbow)");
  plan->scheduling.devices = engine::DevicesOfRanks(plan->scheduling.devices, ranks->size(), &plan->scheduling.device_rank);
  if (ranks->rank() != 0) {
    plan->model_out.clear();
    plan->metrics.clear();
  }
}

}  // namespace xmlt::apps
