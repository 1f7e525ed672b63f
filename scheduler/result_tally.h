// How the results of a mega-batch count once they are back: a failed device is dropped (a lost GPU
// context with every logical device of its GPU) and all of its batches' rows go back to the queue;
// the others' losses are watched in plan order and their counts added up; and how long it took.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "engine/worker.h"
#include "scheduler/device_pool.h"

namespace xmlt::scheduler {

// Counts the results of `plan` (results[k] is batch k's) into `run`.
void TallyResults(DevicePool& pool, const std::vector<Assignment>& plan,
                  const std::vector<engine::BatchResult>& results, MegaBatchRun* run);

// Counts a planned run's results into `run` and times it: on the wall clock as it took since
// `start` (across ranks the slowest rank's time), on the virtual clock from the rows, the
// slowdowns and the row cost (calibrated on the first mega-batch with work done, unless given).
void Conclude(DevicePool& pool, const std::vector<Assignment>& plan, const std::vector<engine::BatchResult>& results,
              std::chrono::steady_clock::time_point start, MegaBatchRun* run);

// A lost context takes every logical device of its GPU with it: drops the devices that share
// device `failed`'s (already dropped) context.
void DropContextSharers(DevicePool& pool, size_t failed);

}  // namespace xmlt::scheduler
