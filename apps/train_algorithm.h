// --algo and the devices it trains on: the plan's engine, its schedule, merge and device list from
// --algo, with --schedule, --merge and --devices where given, and under MPI the run spread over
// every rank.
#pragma once

#include "apps/train_flags.h"
#include "apps/train_plan.h"
#include "ranks/rank_group.h"

namespace xmlt::apps {

// --algo single and slide train one device; the others several.
bool OneDevice(const TrainFlags& f);

// --algo presets set how batches are dispatched and merged; --schedule, --merge and
// --local-momentum given explicitly override them, so any combination can be swept. Decides the
// plan's engine (and --algo slide's plain SGD, a local momentum of 0).
void ApplyAlgorithm(const TrainFlags& f, TrainPlan* plan);

// Under an MPI launcher one run spans every rank: --devices names each rank's own devices, the run
// has all of them, rank after rank (--speed and --hetero cover them all, in that order), and rank
// 0 alone writes the metrics, the model, the checkpoints and the summary (the plan's outputs are
// none on the other ranks).
void SpreadOverRanks(const TrainFlags& f, ranks::RankGroup* ranks, TrainPlan* plan);

}  // namespace xmlt::apps
