// The MPI ranks of one run; see rank_group.h. Every collective is non-blocking and polled against
// the group's deadline, so that a dead or hung rank turns into an error naming this rank, not a
// hang. Sums are a reduce-scatter of equal shards then an all-gather: each element is summed once,
// by its shard's owner, and every rank receives that one result (MPI_Allreduce's algorithms may
// leave different last bits on different ranks, and the ranks' global models must never drift).
// MPI cannot cancel a collective, so one that timed out may still write into its buffers later:
// every collective therefore goes through buffers the group owns, and a group that abandoned a
// collective refuses further ones and never frees them.
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "dist/rank_group.h"

namespace xmlt::dist {
namespace {

// Elements per round of a sum or broadcast: bounded scratch memory, and counts within int.
constexpr uint64_t kChunk = uint64_t{1} << 24;

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

class MpiGroup : public RankGroup {
 public:
  explicit MpiGroup(std::chrono::milliseconds timeout) : timeout_(timeout), scratch_(std::make_unique<Scratch>()) {
    MPI_Comm_dup(MPI_COMM_WORLD, &comm_);
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
  }

  ~MpiGroup() override {
    if (abandoned_) (void)scratch_.release();  // MPI may still write into them
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }

  void SumInPlace(float* values, uint64_t count) override { Sum(values, count, "sum of floats"); }
  void SumInPlace(double* values, uint64_t count) override { Sum(values, count, "sum of doubles"); }

  std::vector<std::vector<uint8_t>> AllGather(const std::vector<uint8_t>& mine) override {
    RefuseIfAbandoned();
    Scratch& s = *scratch_;
    s.my_size = mine.size();
    s.sizes.assign(size_, 0);
    MPI_Request request;
    MPI_Iallgather(&s.my_size, 1, MPI_UINT64_T, s.sizes.data(), 1, MPI_UINT64_T, comm_, &request);
    Wait(&request, "all-gather of sizes");
    std::vector<int> counts(size_), offsets(size_);
    uint64_t total = 0;
    for (int r = 0; r < size_; ++r) {
      if (s.sizes[r] > uint64_t(INT32_MAX) || total + s.sizes[r] > uint64_t(INT32_MAX))
        throw std::length_error("all-gather: more than 2 GiB of messages");
      counts[r] = int(s.sizes[r]);
      offsets[r] = int(total);
      total += s.sizes[r];
    }
    s.bytes_out.assign(mine.begin(), mine.end());
    s.bytes_in.assign(std::max<uint64_t>(total, 1), 0);
    s.counts = counts;
    s.offsets = offsets;
    MPI_Iallgatherv(s.bytes_out.data(), int(s.my_size), MPI_BYTE, s.bytes_in.data(), s.counts.data(),
                    s.offsets.data(), MPI_BYTE, comm_, &request);
    Wait(&request, "all-gather of " + std::to_string(total) + " bytes");
    std::vector<std::vector<uint8_t>> result(size_);
    for (int r = 0; r < size_; ++r)
      result[r].assign(s.bytes_in.begin() + offsets[r], s.bytes_in.begin() + offsets[r] + counts[r]);
    return result;
  }

  void Broadcast(float* values, uint64_t count, int root) override {
    RefuseIfAbandoned();
    if (root < 0 || root >= size_) throw std::invalid_argument("broadcast from rank " + std::to_string(root));
    std::vector<float>& chunk = scratch_->floats_in;
    for (uint64_t begin = 0; begin < count; begin += kChunk) {
      const uint64_t n = std::min(kChunk, count - begin);
      chunk.resize(n);
      if (rank_ == root) std::copy(values + begin, values + begin + n, chunk.begin());
      MPI_Request request;
      MPI_Ibcast(chunk.data(), int(n), MPI_FLOAT, root, comm_, &request);
      Wait(&request, "broadcast of " + std::to_string(count) + " floats from rank " + std::to_string(root));
      if (rank_ != root) std::copy(chunk.begin(), chunk.end(), values + begin);
    }
  }

  [[noreturn]] void Abort(const std::string& why, int exit_code) override {
    std::fprintf(stderr, "xmltrain rank %d: %s\n", rank_, why.c_str());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, exit_code);
    std::exit(exit_code);  // MPI_Abort does not return; this keeps [[noreturn]] honest
  }

 private:
  // The group's buffers, in which every collective's data travels (see the top of this file).
  struct Scratch {
    std::vector<float> floats_out, floats_in;
    std::vector<double> doubles_out, doubles_in;
    uint64_t my_size = 0;
    std::vector<uint64_t> sizes;
    std::vector<int> counts, offsets;
    std::vector<uint8_t> bytes_out, bytes_in;
    std::vector<float>& Out(float*) { return floats_out; }
    std::vector<float>& In(float*) { return floats_in; }
    std::vector<double>& Out(double*) { return doubles_out; }
    std::vector<double>& In(double*) { return doubles_in; }
  };

  template <class T>
  void Sum(T* values, uint64_t count, const std::string& what) {
    RefuseIfAbandoned();
    const uint64_t ranks = uint64_t(size_);
    std::vector<T>& padded = scratch_->Out(values);
    std::vector<T>& shard = scratch_->In(values);
    for (uint64_t begin = 0; begin < count; begin += kChunk) {
      const uint64_t n = std::min(kChunk, count - begin);
      const uint64_t per_rank = (n + ranks - 1) / ranks;  // shards of equal size: the last padded
      padded.assign(per_rank * ranks, T(0));
      std::copy(values + begin, values + begin + n, padded.begin());
      shard.assign(per_rank, T(0));
      MPI_Request request;
      MPI_Ireduce_scatter_block(padded.data(), shard.data(), int(per_rank), TypeOf<T>(), MPI_SUM, comm_, &request);
      Wait(&request, what + " of " + std::to_string(count) + " (reduce-scatter)");
      MPI_Iallgather(shard.data(), int(per_rank), TypeOf<T>(), padded.data(), int(per_rank), TypeOf<T>(), comm_,
                     &request);
      Wait(&request, what + " of " + std::to_string(count) + " (all-gather)");
      std::copy(padded.begin(), padded.begin() + n, values + begin);
    }
  }

  void RefuseIfAbandoned() const {
    if (abandoned_)
      throw CollectiveTimeout("rank " + std::to_string(rank_) +
                              ": an earlier collective of this group timed out; the group cannot be used again");
  }

  void Wait(MPI_Request* request, const std::string& what) {
    const auto deadline = std::chrono::steady_clock::now() + timeout_;
    int done = 0;
    for (uint32_t polls = 0;; ++polls) {
      MPI_Test(request, &done, MPI_STATUS_IGNORE);
      if (done) return;
      if (std::chrono::steady_clock::now() > deadline) {
        abandoned_ = true;
        throw CollectiveTimeout("rank " + std::to_string(rank_) + ": " + what + " timed out after " +
                                std::to_string(timeout_.count() / 1000.0) +
                                " s: another rank died, hangs or is still far behind (--rank-timeout)");
      }
      // Spin briefly for fast collectives, then yield the core to the devices' threads.
      if (polls > 1000) std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }

  std::chrono::milliseconds timeout_;
  std::unique_ptr<Scratch> scratch_;
  bool abandoned_ = false;
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

}  // namespace xmlt::dist
