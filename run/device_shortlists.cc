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
                                          const std::function<bool()>& stopped) {
  std::vector<uint32_t> top(train.num_rows() * k, 0);
  std::vector<uint64_t> rows(train.num_rows());
  std::iota(rows.begin(), rows.end(), uint64_t{0});
  const std::vector<engine::DeviceSpec> host_only = {engine::DeviceSpec{}};
  const std::vector<engine::DeviceSpec>& devices = where.devices.empty() ? host_only : where.devices;

  // One scorer per physical device: the host for every CPU device, each GPU once. Its rows are the
  // shares of its devices, which need not be adjacent (cuda:0,cpu:0,cuda:0...), so each share is
  // scored where it lies.
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

  std::vector<std::thread> threads;
  std::vector<std::exception_ptr> errors(parts.size());
  size_t index = 0;
  for (auto& [key, part] : parts) {
    threads.emplace_back([&, index, part_ptr = &part] {
      try {
        std::unique_ptr<engine::ShortlistScorer> scorer =
            engine::MakeShortlistScorer(*part_ptr->spec, mlp, k, where.math, train);
        for (const base::Range& share : part_ptr->shares) {
          if (stopped && stopped()) return;
          scorer->Score(train, rows.data() + share.begin, share.end - share.begin, top.data() + share.begin * k,
                        stopped);
        }
      } catch (...) {
        errors[index] = std::current_exception();
      }
    });
    ++index;
  }
  for (std::thread& t : threads) t.join();
  for (const std::exception_ptr& error : errors)
    if (error) std::rethrow_exception(error);
  return top;
}

}  // namespace xmlt::run
