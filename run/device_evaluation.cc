// Evaluation across the devices of a run; see device_evaluation.h.
#include "run/device_evaluation.h"

#include <exception>
#include <future>

#include "base/near_equal_pieces.h"
#include "kernels/context_lost.h"
#include "scheduler/fault_text.h"
#include "scheduler/rank_exchange.h"
#include "scheduler/result_tally.h"

namespace xmlt::run {

std::optional<engine::Evaluation> EvaluateOnDevices(scheduler::DevicePool& pool, const kernels::Model<float>& model,
                                                    const data::Dataset& test, const std::vector<uint64_t>& rows) {
  ranks::RankGroup* ranks = pool.ranks();
  for (;;) {
    const std::vector<size_t> devices = pool.alive();
    if (devices.empty()) return std::nullopt;
    std::vector<engine::EvaluationSums> parts(devices.size());
    std::vector<std::future<void>> done(devices.size());
    for (size_t k = 0; k < devices.size(); ++k) {
      if (!pool.local(devices[k])) continue;  // its owner scores that share
      const auto [begin, end] = base::Piece(0, rows.size(), k, devices.size());
      engine::EvaluationSums* part = &parts[k];
      done[k] = pool.worker(devices[k]).RunOnDevice([&model, &test, &rows, part, begin, end](engine::Device& d) {
        *part = d.EvaluateRows(model, test, rows.data() + begin, end - begin);
      });
    }
    // Every share finishes before an error is acted on: the jobs point into this frame.
    std::vector<std::exception_ptr> errors(devices.size());
    for (size_t k = 0; k < devices.size(); ++k) {
      if (!done[k].valid()) continue;
      try {
        done[k].get();
      } catch (...) {
        errors[k] = std::current_exception();
      }
    }
    bool failed = false;
    for (size_t k = 0; k < devices.size(); ++k) {
      if (!errors[k]) continue;
      if (ranks != nullptr) std::rethrow_exception(errors[k]);
      failed = true;
      if (pool.dropped(devices[k])) continue;  // lost already with another device of its GPU
      pool.Drop(devices[k], scheduler::FaultText(errors[k]));
      try {
        std::rethrow_exception(errors[k]);
      } catch (const kernels::ContextLost&) {
        scheduler::DropContextSharers(pool, devices[k]);
      } catch (...) {
      }
    }
    if (failed) continue;
    if (ranks != nullptr) {
      std::vector<int> owner;
      for (size_t i : devices) owner.push_back(pool.owner(i));
      scheduler::ShareEvaluations(*ranks, owner, &parts);
    }
    engine::EvaluationSums sums;
    for (const engine::EvaluationSums& part : parts) sums.Add(part);
    return sums.Mean();
  }
}

}  // namespace xmlt::run
