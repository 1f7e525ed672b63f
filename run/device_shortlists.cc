// The shortlists on the run's devices; see device_shortlists.h.
#include "run/device_shortlists.h"

#include <exception>
#include <map>
#include <memory>
#include <numeric>
#include <thread>

#include "base/near_equal_pieces.h"
#include "engine/shortlist_scorer.h"

namespace xmlt::run {

std::vector<uint32_t> ShortlistsOnDevices(const ShortlistDevices& where, const kernels::Model<float>& mlp,
                                          const data::Dataset& train, uint32_t k,
                                          const std::function<bool()>& stopped, std::vector<std::string>* faults) {
  std::vector<uint32_t> top(train.num_rows() * k, 0);
  std::vector<uint64_t> rows(train.num_rows());
  std::iota(rows.begin(), rows.end(), uint64_t{0});
  const std::vector<engine::DeviceSpec> host_only = {engine::DeviceSpec{}};
  const std::vector<engine::DeviceSpec>& devices = where.devices.empty() ? host_only : where.devices;

  // One scorer per physical device: the host for every CPU device, each GPU once. Its rows are the
  // shares of its devices, which need not be adjacent (a CPU device listed between two logical
  // devices of one GPU), so each share is scored where it lies.
  struct Part {
    const engine::DeviceSpec* spec = nullptr;
    std::vector<base::Range> shares;
  };
  std::map<int, Part> parts;  // -1: the host; else the GPU's ordinal
  for (size_t d = 0; d < devices.size(); ++d) {
    const int key = devices[d].kind == engine::DeviceKind::kCpu ? -1 : devices[d].ordinal;
    Part& part = parts[key];
    if (part.spec == nullptr) part.spec = &devices[d];
    part.shares.push_back(base::Piece(0, rows.size(), d, devices.size()));
  }

  const auto score = [&](const engine::DeviceSpec& spec, const std::vector<base::Range>& shares) {
    std::unique_ptr<engine::ShortlistScorer> scorer = engine::MakeShortlistScorer(spec, mlp, k, where.math, train);
    for (const base::Range& share : shares) {
      if (stopped && stopped()) return;
      scorer->Score(train, rows.data() + share.begin, share.end - share.begin, top.data() + share.begin * k, stopped);
    }
  };
  std::vector<std::thread> threads;
  std::vector<std::exception_ptr> errors(parts.size());
  size_t index = 0;
  for (auto& [key, part] : parts) {
    threads.emplace_back([&, index, part_ptr = &part] {
      try {
        score(*part_ptr->spec, part_ptr->shares);
      } catch (...) {
        errors[index] = std::current_exception();
      }
    });
    ++index;
  }
  for (std::thread& t : threads) t.join();
  index = 0;
  for (auto& [key, part] : parts) {
    const std::exception_ptr error = errors[index++];
    if (!error) continue;
    if (key < 0) std::rethrow_exception(error);
    try {
      std::rethrow_exception(error);
    } catch (const std::exception& e) {
      if (faults != nullptr) faults->push_back(part.spec->id + ": " + e.what());
    }
    score(engine::DeviceSpec{}, part.shares);  // the host's cores instead
  }
  return top;
}

}  // namespace xmlt::run
