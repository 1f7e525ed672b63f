// The devices' part of a checkpoint: their scalar state as JSON (the meta's "pool"), their arrays
// as sections (the epoch's row order, returned rows, each alive device's replica and momentum).
// Written between mega-batches, after a merge: replicas are read from the devices' host params,
// the momentum streamed from where each device keeps it (engine::Device::StreamOptimizerState).
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

#include "run/checkpoint_file.h"
#include "scheduler/device_pool.h"

namespace xmlt::run {

nlohmann::json SavePoolMeta(const scheduler::DevicePool& pool);
// The sections read the pool's devices when `writer` writes them: the pool must not change until
// then. `extra_storage` holds the devices' other state (their SaveExtraState) until it is written.
void AddPoolSections(scheduler::DevicePool& pool, CheckpointWriter* writer,
                     std::vector<std::vector<uint8_t>>* extra_storage);

// Restores the pool from a checkpoint; throws data::InputError naming the file. The data's state
// (the epoch's order and position, returned rows, the row cost, the loss reference) always goes
// on. The same devices (`replan` false) go on as they were: batch sizes, learning rates, the
// dispatch plan, pending injected faults, replicas and momenta (a device dropped before the
// checkpoint is revived from `global`). Other devices (`replan`, an elastic restart) all start
// from `global` with no momentum and the initial batch size and learning rate, the dispatch plan
// afresh, and the old devices' injected faults dropped.
void RestorePool(scheduler::DevicePool& pool, const CheckpointReader& reader, const nlohmann::json& meta,
                 const std::vector<float>& global, bool replan);

// Every device's learning rate from `lr` for b_max rows, linearly scaled to its batch (a resume
// with a lower --lr: earlier rollback halvings are dropped).
void ResetLearningRates(scheduler::DevicePool& pool, double lr);

}  // namespace xmlt::run
