// --algo and the devices it trains on, into the engine's options; see train_algorithm.h.
#include "apps/train_algorithm.h"

#include <stdexcept>
#include <string>

#include "engine/device_spec.h"
#include "engine/heterogeneity.h"
#include "merge/collective.h"
#include "run/trainer.h"

namespace xmlt::apps {

bool OneDevice(const TrainFlags& f) { return f.algo == "single" || f.algo == "slide"; }

// --algo presets set how batches are dispatched and merged; --schedule, --merge and
// --local-momentum given explicitly override them, so any combination can be swept.
void ApplyAlgorithm(TrainFlags& f) {
  f.engine.devices = engine::ParseDeviceList(f.devices);
  f.engine.heterogeneity = engine::ParseHetero(f.hetero);
  f.engine.heterogeneity.speed = engine::ParseSpeeds(f.speed);
  try {
    f.engine.collective = merge::ParseCollectiveKind(f.collective);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string("--collective: ") + e.what());
  }
  using Engine = scheduler::EngineOptions;
  if (f.clock == "wall") {
    f.engine.clock = Engine::Clock::kWall;
  } else if (f.clock == "virtual") {
    f.engine.clock = Engine::Clock::kVirtual;
  } else {
    throw std::invalid_argument("--clock must be wall or virtual");
  }
  if (f.clock_costs != "model" && f.clock_costs != "measured")
    throw std::invalid_argument("--clock-costs must be model or measured, not '" + f.clock_costs + "'");
  if (f.given("--clock-costs") && f.clock == "wall")
    throw std::invalid_argument("--clock-costs is for the virtual clock; --clock wall measures real time");
  f.engine.measure_clock_costs = f.clock_costs == "measured";
  if (f.momentum_mode == "heavy" || f.momentum_mode == "nesterov") {
    f.engine.nesterov = f.momentum_mode == "nesterov";
  } else {
    throw std::invalid_argument("--momentum-mode must be heavy or nesterov");
  }
  if (f.merge_on == "auto") {
    f.engine.merge_on = Engine::MergeOn::kAuto;
  } else if (f.merge_on == "host") {
    f.engine.merge_on = Engine::MergeOn::kHost;
  } else if (f.merge_on == "gpus") {
    f.engine.merge_on = Engine::MergeOn::kGpus;
  } else {
    throw std::invalid_argument("--merge-on must be auto, host or gpus");
  }
  std::string schedule, merge;
  if (f.algo == "slide") {
    // SLIDE: one CPU device whose threads share its model, with the sampled output layer; plain
    // SGD (its step has no momentum buffer to update sparsely).
    if (f.given("--devices") && (f.engine.devices.size() != 1 || f.engine.devices[0].kind != engine::DeviceKind::kCpu))
      throw std::invalid_argument("--algo slide trains on one CPU device, whose threads share the model (--threads); "
                                  "not on " + f.devices);
    if (f.given("--merge-on"))
      throw std::invalid_argument("--merge-on: --algo slide trains one CPU device and has no merge; drop it");
    f.engine = run::SingleDeviceEngine(engine::DeviceSpec{});
    f.engine.sampled_output = f.sampled_output;
    f.engine.sampled_output.enabled = true;
    if (!f.given("--local-momentum")) f.options.local_momentum = 0;
    return;  // its --lr default, 1, is GivenLearningRate's
  }
  if (f.algo == "single") {
    // The engine with one device, of any kind: the CPU unless --devices names another.
    if (f.given("--devices") && f.engine.devices.size() != 1)
      throw std::invalid_argument("--algo single trains on one device; use --algo adaptive, elastic, adasum, "
                                  "sync or crossbow for " + f.devices);
    const Engine::MergeOn merge_on = f.engine.merge_on;
    f.engine = run::SingleDeviceEngine(f.given("--devices") ? f.engine.devices[0] : engine::DeviceSpec{});
    // Its one replica becomes the global model after every mega-batch, on the GPU or on the host.
    f.engine.merge_on = merge_on;
    if (merge_on == Engine::MergeOn::kGpus && f.engine.devices[0].kind != engine::DeviceKind::kCuda)
      throw std::invalid_argument("--merge-on gpus needs a GPU; --algo single trains on " + f.engine.devices[0].id);
    return;
  } else if (f.algo == "adaptive") {
    schedule = "dynamic", merge = "normalized";
  } else if (f.algo == "elastic") {
    schedule = "static", merge = "average";
  } else if (f.algo == "adasum") {
    schedule = "static", merge = "adasum";
  } else if (f.algo == "sync") {
    schedule = "sync", merge = "gradient";  // the presets set the local momentum (ApplyPreset)
  } else if (f.algo == "crossbow") {
    schedule = "sync", merge = "crossbow";
  } else {
    throw std::invalid_argument("--algo must be single, slide, adaptive, elastic, adasum, sync or crossbow");
  }
  if (f.given("--schedule")) schedule = f.schedule;
  if (f.given("--merge")) merge = f.merge;

  if (schedule == "dynamic") {
    f.engine.schedule = Engine::Schedule::kDynamic;
  } else if (schedule == "static") {
    f.engine.schedule = Engine::Schedule::kStatic;
  } else if (schedule == "sync") {
    f.engine.schedule = Engine::Schedule::kSync;
  } else {
    throw std::invalid_argument("--schedule must be dynamic, static or sync");
  }
  f.engine.scale_batches = f.engine.schedule == Engine::Schedule::kDynamic;
  if (merge == "normalized") {
    f.engine.merge = Engine::Merge::kNormalized;
  } else if (merge == "average") {
    f.engine.merge = Engine::Merge::kAverage;
  } else if (merge == "adasum") {
    f.engine.merge = Engine::Merge::kAdasum;
  } else if (merge == "crossbow") {
    f.engine.merge = Engine::Merge::kCrossbow;
  } else if (merge == "gradient") {
    f.engine.merge = Engine::Merge::kGradient;
  } else {
    throw std::invalid_argument("--merge must be normalized, average, adasum, crossbow or gradient");
  }
  // The CPU devices of the list train with SLIDE's output layer (the device pool makes them); the
  // merges see the same parameters either way.
  if (f.cpu_output == "sampled") {
    f.engine.sampled_output = f.sampled_output;
    f.engine.sampled_output.enabled = true;
  }
}

// Under an MPI launcher one run spans every rank: --devices names each rank's own devices, the run
// has all of them, rank after rank (--speed and --hetero cover them all, in that order), and rank
// 0 alone writes the metrics, the model, the checkpoints and the summary.
void SpreadOverRanks(TrainFlags& f, ranks::RankGroup* ranks) {
  if (ranks->size() <= 1) return;
  // The default --algo is one device in one process; say so rather than count the ranks' devices.
  if (OneDevice(f))
    throw std::invalid_argument("--algo " + f.algo + " trains one device in one process; a run over " +
                                std::to_string(ranks->size()) +
                                " MPI ranks needs a multi-device --algo (adaptive, elastic, adasum, sync, crossbow)");
  f.engine.devices = engine::DevicesOfRanks(f.engine.devices, ranks->size(), &f.engine.device_rank);
  f.engine.ranks = ranks;
  if (ranks->rank() != 0) {
    f.model_out.clear();
    f.metrics.clear();
  }
}

}  // namespace xmlt::apps
