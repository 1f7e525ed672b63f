// The dispatch plan; see dispatch_planner.h.
#include "scheduler/dispatch_planner.h"

#include <cmath>
#include <stdexcept>
#include <string>

namespace xmlt::scheduler {

DispatchPlanner::DispatchPlanner(SchedulerOptions::Schedule schedule, uint32_t mega_batch, engine::SlowdownModel slowdown)
    : schedule_(schedule), mega_batch_(mega_batch), slowdown_(std::move(slowdown)) {
  clock_.assign(slowdown_.num_devices(), 0.0);
  work_.assign(slowdown_.num_devices(), 0.0);
}

void DispatchPlanner::BeginMegaBatch() {
  clock_.assign(clock_.size(), 0.0);
  work_.assign(work_.size(), 0.0);
  position_ = 0;
}

std::optional<size_t> DispatchPlanner::NextDevice(const std::vector<size_t>& alive) const {
  if (schedule_ == SchedulerOptions::Schedule::kDynamic) {
    size_t next = alive[0];
    for (size_t d : alive)
      if (clock_[d] < clock_[next]) next = d;
    return next;
  }
  const uint64_t per_device = (mega_batch_ + alive.size() - 1) / alive.size();
  if (position_ >= per_device * alive.size()) return std::nullopt;
  return alive[position_ % alive.size()];
}

void DispatchPlanner::Dealt(size_t device, uint64_t rows, double slowdown) {
  if (schedule_ == SchedulerOptions::Schedule::kDynamic) {
    clock_[device] += double(rows) * slowdown;
  } else {
    ++position_;
  }
}

std::vector<std::pair<size_t, uint64_t>> DispatchPlanner::SplitRound(uint64_t rows, const std::vector<size_t>& alive) {
  std::vector<std::pair<size_t, uint64_t>> shares;
  const uint64_t n = alive.size();
  for (uint64_t k = 0; k < n; ++k) {
    const uint64_t count = rows / n + (k < rows % n ? 1 : 0);
    if (count > 0) shares.emplace_back(alive[k], count);  // fewer rows than devices: the rest sit out
  }
  return shares;
}

void DispatchPlanner::Save(nlohmann::json* meta) const {
  (*meta)["slowdown"] = slowdown_.SaveState();
  (*meta)["plan_clock"] = clock_;
  (*meta)["plan_units"] = work_;
  (*meta)["plan_position"] = position_;
}

void DispatchPlanner::Restore(const nlohmann::json& meta) {
  slowdown_.RestoreState(meta.at("slowdown").get<std::string>());
  for (auto [key, values] : {std::pair{"plan_clock", &clock_}, std::pair{"plan_units", &work_}}) {
    const std::vector<double> saved = meta.value(key, std::vector<double>(devices(), 0.0));
    if (saved.size() != devices()) throw std::invalid_argument(std::string(key) + " for another number of devices");
    for (double v : saved)
      if (!std::isfinite(v) || v < 0) throw std::invalid_argument(std::string("bad ") + key);
    *values = saved;
  }
  position_ = meta.value("plan_position", uint64_t{0});
}

}  // namespace xmlt::scheduler
