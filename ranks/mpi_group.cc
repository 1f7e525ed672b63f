// The MPI ranks of one run; see rank_group.h. Every collective is non-blocking and polled against
// the group's deadline, so that a dead or hung rank ends the run with a message naming this rank,
// not a hang. A timed-out collective cannot be cancelled and MPI does not survive a lost rank, so
// the group ends every rank there (MPI_Abort, exit code 1) rather than return to a caller whose
// buffers MPI may still write into. Sums are a reduce-scatter then an all-gather: each element is
// summed once, by its shard's owner in rank order, and every rank receives that one result
// (MPI_Allreduce's algorithms may leave different last bits on different ranks, and the ranks'
// global models must never drift).
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "ranks/rank_group.h"

namespace xmlt::ranks {
namespace {

// Elements per round of a sum or broadcast: bounded scratch memory, and counts within int.
constexpr uint64_t kChunk = kSumChunk;
// The tag of the sums' point-to-point messages (on the group's own communicator).
constexpr int kSumTag = 1;
// The tag of Copy's messages.
constexpr int kCopyTag = 2;

void FinalizeAtExit() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

template <class T>
MPI_Datatype TypeOf();
template <>
MPI_Datatype TypeOf<float>() { return MPI_FLOAT; }
template <>
MPI_Datatype TypeOf<double>() { return MPI_DOUBLE; }
template <>
MPI_Datatype TypeOf<uint16_t>() { return MPI_UINT16_T; }

class MpiGroup : public RankGroup {
 public:
  explicit MpiGroup(std::chrono::milliseconds timeout) : timeout_(timeout) {
    MPI_Comm_dup(MPI_COMM_WORLD, &comm_);
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }

  void SumInPlace(float* values, uint64_t count) override { Sum(values, count, received_floats_, "sum of floats"); }
  void SumInPlace(double* values, uint64_t count) override {
    Sum(values, count, received_doubles_, "sum of doubles");
  }

  std::vector<std::vector<uint8_t>> AllGather(const std::vector<uint8_t>& mine) override {
    uint64_t my_size = mine.size();
    std::vector<uint64_t> sizes(size_);
    CheckStarted(MPI_Iallgather(&my_size, 1, MPI_UINT64_T, sizes.data(), 1, MPI_UINT64_T, comm_, Next()));
    WaitAll("all-gather of sizes");
    std::vector<int> counts(size_), offsets(size_);
    uint64_t total = 0;
    for (int r = 0; r < size_; ++r) {
      if (sizes[r] > uint64_t(INT32_MAX) || total + sizes[r] > uint64_t(INT32_MAX))
        throw std::length_error("all-gather: more than 2 GiB of messages");
      counts[r] = int(sizes[r]);
      offsets[r] = int(total);
      total += sizes[r];
    }
    std::vector<uint8_t> all(std::max<uint64_t>(total, 1));
    CheckStarted(MPI_Iallgatherv(mine.data(), int(my_size), MPI_BYTE, all.data(), counts.data(),
                                 offsets.data(), MPI_BYTE, comm_, Next()));
    WaitAll("all-gather of " + std::to_string(total) + " bytes");
    std::vector<std::vector<uint8_t>> result(size_);
    for (int r = 0; r < size_; ++r) result[r].assign(all.begin() + offsets[r], all.begin() + offsets[r] + counts[r]);
    return result;
  }

  void Broadcast(float* values, uint64_t count, int root) override { BroadcastValues(values, count, root, "floats"); }
  void Broadcast(uint16_t* values, uint64_t count, int root) override {
    BroadcastValues(values, count, root, "bf16 values");
  }
  void Copy(float* values, uint64_t count, int from, int to) override { CopyValues(values, count, from, to, "floats"); }
  void Copy(uint16_t* values, uint64_t count, int from, int to) override {
    CopyValues(values, count, from, to, "bf16 values");
  }

  [[noreturn]] void Abort(const std::string& why, int exit_code) override {
    std::fprintf(stderr, "xmltrain rank %d: %s\n", rank_, why.c_str());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, exit_code);
    std::exit(exit_code);  // MPI_Abort does not return; this keeps [[noreturn]] honest
  }

 private:
  // A reduce-scatter by direct exchange (shard q of every rank goes to rank q, which adds the
  // shards in rank order), then an all-gather of the summed shards, in place. The direct exchange
  // moves (R-1)/R of the values in and out of every rank, as a ring does; Open MPI's own
  // (non-blocking) reduce-scatter took 280 ms for the Amazon-670K model on 2 ranks, against 240 ms
  // for the whole sum this way, as long as one MPI_Allreduce (docs/BENCHMARKS.md).
  template <class T>
  void BroadcastValues(T* values, uint64_t count, int root, const char* what) {
    if (root < 0 || root >= size_) throw std::invalid_argument("broadcast from rank " + std::to_string(root));
    for (uint64_t begin = 0; begin < count; begin += kChunk) {
      CheckStarted(MPI_Ibcast(values + begin, int(std::min(kChunk, count - begin)), TypeOf<T>(), root, comm_, Next()));
      WaitAll("broadcast of " + std::to_string(count) + " " + what + " from rank " + std::to_string(root));
    }
  }

  // Point to point: the ranks other than `from` and `to` go on at once.
  template <class T>
  void CopyValues(T* values, uint64_t count, int from, int to, const char* what) {
    if (from < 0 || from >= size_ || to < 0 || to >= size_)
      throw std::invalid_argument("copy from rank " + std::to_string(from) + " to rank " + std::to_string(to));
    if (from == to || (rank_ != from && rank_ != to)) return;
    for (uint64_t begin = 0; begin < count; begin += kChunk) {
      const int n = int(std::min(kChunk, count - begin));
      if (rank_ == from) {
        CheckStarted(MPI_Isend(values + begin, n, TypeOf<T>(), to, kCopyTag, comm_, Next()));
      } else {
        CheckStarted(MPI_Irecv(values + begin, n, TypeOf<T>(), from, kCopyTag, comm_, Next()));
      }
      WaitAll("copy of " + std::to_string(count) + " " + what + " from rank " + std::to_string(from) + " to rank " +
              std::to_string(to));
    }
  }

  template <class T>
  void Sum(T* values, uint64_t count, std::vector<T>& received, const std::string& what) {
    std::vector<int> counts(size_), offsets(size_);
    for (uint64_t begin = 0; begin < count; begin += kChunk) {
      const uint64_t n = std::min(kChunk, count - begin);
      T* chunk = values + begin;
      for (int r = 0; r < size_; ++r) {
        offsets[r] = int(n * uint64_t(r) / uint64_t(size_));
        counts[r] = int(n * uint64_t(r + 1) / uint64_t(size_)) - offsets[r];
      }
      // Every other rank's values of my shard, at its rank's slot (my own slot stays unused).
      const uint64_t mine = uint64_t(counts[rank_]);
      received.resize(mine * size_);
      for (int r = 0; r < size_; ++r) {
        if (r == rank_) continue;
        CheckStarted(MPI_Irecv(received.data() + mine * r, int(mine), TypeOf<T>(), r, kSumTag, comm_, Next()));
        CheckStarted(MPI_Isend(chunk + offsets[r], counts[r], TypeOf<T>(), r, kSumTag, comm_, Next()));
      }
      WaitAll(what + " of " + std::to_string(count) + " (exchange of shards)");
      T* shard = chunk + offsets[rank_];
      for (uint64_t j = 0; j < mine; ++j) {
        T total = rank_ == 0 ? shard[j] : received[j];
        for (int r = 1; r < size_; ++r) total += r == rank_ ? shard[j] : received[mine * r + j];
        shard[j] = total;
      }
      CheckStarted(MPI_Iallgatherv(MPI_IN_PLACE, 0, TypeOf<T>(), chunk, counts.data(),
                                   offsets.data(), TypeOf<T>(), comm_, Next()));
      WaitAll(what + " of " + std::to_string(count) + " (all-gather)");
    }
  }

  // A new slot in requests_, for the call that starts the next operation.
  MPI_Request* Next() {
    requests_.push_back(MPI_REQUEST_NULL);
    return &requests_.back();
  }
  void CheckStarted(int error) {
    if (error != MPI_SUCCESS) Abort("an MPI call failed (error " + std::to_string(error) + ")", 1);
  }

  // Polls requests_ until all complete, then clears them; past the deadline, ends the run (see
  // the top of the file).
  void WaitAll(const std::string& what) {
    const auto deadline = std::chrono::steady_clock::now() + timeout_;
    int done = 0;
    for (uint32_t polls = 0;; ++polls) {
      MPI_Testall(int(requests_.size()), requests_.data(), &done, MPI_STATUSES_IGNORE);
      if (done) break;
      if (std::chrono::steady_clock::now() > deadline)
        Abort(what + " timed out after " + std::to_string(timeout_.count() / 1000.0) +
                  " s: another rank died, hangs or is still far behind (--rank-timeout)",
              1);
      // Non-blocking operations advance only inside MPI calls, so any sleep between polls would
      // stretch every fragment of a large transfer: poll, yielding the core. A rank waits here
      // only between mega-batches, when its own devices are idle.
      if (polls > 100) std::this_thread::yield();
    }
    requests_.clear();
  }

  std::chrono::milliseconds timeout_;
  std::vector<MPI_Request> requests_;
  std::vector<float> received_floats_;
  std::vector<double> received_doubles_;
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
};

}  // namespace

std::unique_ptr<RankGroup> JoinRankGroup(std::chrono::milliseconds timeout) {
  if (!LaunchedUnderMpi()) return MakeSoloGroup();
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    // Only the thread that joined calls MPI (the coordinator); the device threads never do.
    int provided = 0;
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
    std::atexit(FinalizeAtExit);
  }
  return std::make_unique<MpiGroup>(timeout);
}

}  // namespace xmlt::ranks
