// Ranks played by threads of one process, for tests; see rank_group.h. Each collective is one
// exchange: every rank deposits its bytes, the last to arrive publishes all of them, and each rank
// computes its result from the same published bytes in rank order, so the results are the same
// bits on every rank (an MPI group sums in another order: the same values up to rounding).
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <string>

#include "ranks/rank_group.h"

namespace xmlt::ranks {
namespace {

using Bytes = std::vector<uint8_t>;

struct SharedState {
  explicit SharedState(int ranks, std::chrono::milliseconds timeout)
      : ranks(ranks), timeout(timeout), deposits(ranks), arrived(ranks, false) {}
  const int ranks;
  const std::chrono::milliseconds timeout;
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<Bytes> deposits;
  std::vector<bool> arrived;
  int count = 0;
  uint64_t generation = 0;  // exchanges completed
  // The last exchange's deposits: valid until every rank has deposited again, which this rank
  // does only after reading them.
  std::shared_ptr<const std::vector<Bytes>> published;
};

class ThreadGroup : public RankGroup {
 public:
  ThreadGroup(std::shared_ptr<SharedState> state, int rank) : state_(std::move(state)), rank_(rank) {}

  int rank() const override { return rank_; }
  int size() const override { return state_->ranks; }

  void SumInPlace(float* values, uint64_t count) override { Sum(values, count, "sum of floats"); }
  void SumInPlace(double* values, uint64_t count) override { Sum(values, count, "sum of doubles"); }

  std::vector<Bytes> AllGather(const Bytes& mine) override { return *Exchange(mine, "all-gather"); }

  void Broadcast(float* values, uint64_t count, int root) override { BroadcastValues(values, count, root, "floats"); }
  void Broadcast(uint16_t* values, uint64_t count, int root) override {
    BroadcastValues(values, count, root, "bf16 values");
  }
  void Copy(float* values, uint64_t count, int from, int to) override { CopyValues(values, count, from, to, "floats"); }
  void Copy(uint16_t* values, uint64_t count, int from, int to) override {
    CopyValues(values, count, from, to, "bf16 values");
  }

  [[noreturn]] void Abort(const std::string& why, int) override {
    throw std::runtime_error("rank " + std::to_string(rank_) + ": " + why);
  }

 private:
  template <class T>
  void BroadcastValues(T* values, uint64_t count, int root, const char* what) {
    if (root < 0 || root >= size()) throw std::invalid_argument("broadcast from rank " + std::to_string(root));
    Bytes mine;
    if (rank_ == root) mine.assign(reinterpret_cast<const uint8_t*>(values), reinterpret_cast<const uint8_t*>(values + count));
    const auto all = Exchange(mine, "broadcast of " + std::to_string(count) + " " + what);
    if (rank_ != root) {
      if ((*all)[root].size() != count * sizeof(T)) throw std::logic_error("broadcast: counts differ between ranks");
      std::memcpy(values, (*all)[root].data(), count * sizeof(T));
    }
  }

  template <class T>
  void CopyValues(T* values, uint64_t count, int from, int to, const char* what) {
    if (from < 0 || from >= size() || to < 0 || to >= size())
      throw std::invalid_argument("copy from rank " + std::to_string(from) + " to rank " + std::to_string(to));
    Bytes mine;
    if (rank_ == from && from != to)
      mine.assign(reinterpret_cast<const uint8_t*>(values), reinterpret_cast<const uint8_t*>(values + count));
    const auto all = Exchange(mine, "copy of " + std::to_string(count) + " " + what + " from rank " +
                                        std::to_string(from) + " to rank " + std::to_string(to));
    if (rank_ == to && from != to) {
      if ((*all)[from].size() != count * sizeof(T)) throw std::logic_error("copy: counts differ between ranks");
      std::memcpy(values, (*all)[from].data(), count * sizeof(T));
    }
  }

  template <class T>
  void Sum(T* values, uint64_t count, const std::string& what) {
    const auto* begin = reinterpret_cast<const uint8_t*>(values);
    const auto all = Exchange(Bytes(begin, begin + count * sizeof(T)), what + " (" + std::to_string(count) + ")");
    for (const Bytes& b : *all)
      if (b.size() != count * sizeof(T)) throw std::logic_error(what + ": counts differ between ranks");
    for (uint64_t j = 0; j < count; ++j) {
      T sum = 0;
      for (const Bytes& b : *all) {
        T v;
        std::memcpy(&v, b.data() + j * sizeof(T), sizeof(T));
        sum += v;
      }
      values[j] = sum;
    }
  }

  std::shared_ptr<const std::vector<Bytes>> Exchange(Bytes mine, const std::string& what) {
    SharedState& s = *state_;
    std::unique_lock<std::mutex> lock(s.mutex);
    const uint64_t generation = s.generation;
    s.deposits[rank_] = std::move(mine);
    s.arrived[rank_] = true;
    if (++s.count == s.ranks) {
      s.published = std::make_shared<const std::vector<Bytes>>(std::move(s.deposits));
      s.deposits.assign(s.ranks, Bytes{});
      s.arrived.assign(s.ranks, false);
      s.count = 0;
      ++s.generation;
      s.changed.notify_all();
      return s.published;
    }
    if (!s.changed.wait_for(lock, s.timeout, [&] { return s.generation != generation; })) {
      std::string missing;
      for (int r = 0; r < s.ranks; ++r)
        if (!s.arrived[r]) missing += (missing.empty() ? "" : ", ") + std::to_string(r);
      throw CollectiveTimeout("rank " + std::to_string(rank_) + ": " + what + " timed out after " +
                              std::to_string(s.timeout.count()) + " ms waiting for rank " + missing);
    }
    return s.published;
  }

  std::shared_ptr<SharedState> state_;
  int rank_;
};

}  // namespace

std::vector<std::unique_ptr<RankGroup>> MakeThreadGroups(int ranks, std::chrono::milliseconds timeout) {
  if (ranks < 1) throw std::invalid_argument("thread groups need at least one rank");
  auto state = std::make_shared<SharedState>(ranks, timeout);
  std::vector<std::unique_ptr<RankGroup>> groups;
  for (int r = 0; r < ranks; ++r) groups.push_back(std::make_unique<ThreadGroup>(state, r));
  return groups;
}

}  // namespace xmlt::ranks
