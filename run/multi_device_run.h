// Training on several devices: one manager thread per device, a central scheduler that cuts
// mega-batches into batches and dispatches them (dynamically to whichever device is free, or
// statically in equal shares), merges the replicas after each mega-batch, rescales batch sizes
// and learning rates (Algorithm 1), and evaluates on the schedule. Adaptive SGD and elastic SGD
// are two settings of SchedulerOptions.
//
// Reliability (RunControl): the whole state is checkpointed between mega-batches and a resumed run
// continues exactly (with the virtual clock and fixed --row-cost / --merge-cost, its metrics equal
// an uninterrupted run's, wall times aside); a stop signal ends the run at the next mega-batch
// boundary after a checkpoint. The run's end usually cuts a mega-batch: the end checkpoint keeps
// it open (before its merge), so that a run extended with more epochs is the longer run. A
// divergence (non-finite or exploding loss, non-finite merged model) rolls back to the last state
// whose next mega-batch was sound, with the learning rates halved; a failing device is dropped and
// the merge goes on over the others.
#pragma once

#include "data/dataset.h"
#include "kernels/model.h"
#include "ranks/rank_group.h"
#include "run/run_control.h"
#include "run/train_result.h"
#include "scheduler/train_options.h"

namespace xmlt::run {

// Trains `model` (the initial global model) in place; records carry per-device statistics. Across
// ranks (scheduling.device_rank names the owners) every rank calls it with the group they run in,
// `ranks`; null: one process owns every device.
TrainResult RunMultiDevice(const data::Dataset& train, const data::Dataset* test,
                           const scheduler::TrainOptions& options, const scheduler::SchedulerOptions& scheduling,
                           kernels::Model<float>* model, const TrainCallbacks& callbacks = {},
                           const RunControl& control = {}, ranks::RankGroup* ranks = nullptr);

}  // namespace xmlt::run
