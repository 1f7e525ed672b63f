// The processes of one run: MPI ranks on one or several servers, or this process alone. The
// scheduler runs the same plan on every rank (SPMD) and meets the other ranks only here: sums of
// model-sized buffers for the merges, and small byte messages for what each rank's devices did.
// Every call is collective: every rank of the group makes it, in the same order, with the same
// counts. Results are the same bits on every rank (the merges keep one global model per rank, and
// the copies must never drift apart).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace xmlt::ranks {

// A collective that did not complete within the thread groups' timeout: another rank died or
// hangs. The message names this rank and the call.
class CollectiveTimeout : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Values per round of the MPI group's sums: its receive buffer holds at most this many (one shard
// from each other rank), so a sum's scratch memory is bounded whatever the model's size.
inline constexpr uint64_t kSumChunk = uint64_t{1} << 24;

class RankGroup {
 public:
  virtual ~RankGroup() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;

  // values[j] <- sum over ranks of values[j], summed in rank order for every j (so the same bits
  // on every rank and from run to run). Any count, including counts past 2^31 and counts not
  // divisible by size().
  virtual void SumInPlace(float* values, uint64_t count) = 0;
  virtual void SumInPlace(double* values, uint64_t count) = 0;
  // Every rank's bytes (any length, including empty), in rank order.
  virtual std::vector<std::vector<uint8_t>> AllGather(const std::vector<uint8_t>& mine) = 0;
  // `values` of rank `root` copied into `values` of every rank. The uint16_t forms move replicas
  // that keep their weights in bf16, as their bits.
  virtual void Broadcast(float* values, uint64_t count, int root) = 0;
  virtual void Broadcast(uint16_t* values, uint64_t count, int root) = 0;
  // `values` of rank `from` copied into `values` of rank `to`; the other ranks' `values` are not
  // read or written (they may be null). Every rank makes the call, as with the others.
  virtual void Copy(float* values, uint64_t count, int from, int to) = 0;
  virtual void Copy(uint16_t* values, uint64_t count, int from, int to) = 0;
  // Ends every rank of the run (MPI_Abort) after printing `why` with this rank's number: for a
  // rank that cannot go on while the others would wait for it forever.
  [[noreturn]] virtual void Abort(const std::string& why, int exit_code) = 0;
};

// This process alone: rank 0 of 1; sums and gathers are identities.
std::unique_ptr<RankGroup> MakeSoloGroup();

// `ranks` groups in one process, one per thread that plays a rank: for tests of the distributed
// scheduler without an MPI launcher. Each returned group must be used by one thread only. Abort
// throws std::runtime_error on that thread instead of ending the process.
std::vector<std::unique_ptr<RankGroup>> MakeThreadGroups(int ranks,
                                                         std::chrono::milliseconds timeout = std::chrono::seconds(60));

// True when this process was started by an MPI launcher (mpirun, srun with PMI/PMIx).
bool LaunchedUnderMpi();
// Under an MPI launcher, the MPI group of all ranks (MPI initialized once; finalized at exit);
// otherwise the solo group. Throws std::runtime_error when launched under MPI by a build without
// it. `timeout` bounds every collective: past it the MPI group ends the whole run (MPI_Abort,
// exit code 1) with a message naming this rank and the call, since MPI can neither cancel the
// collective nor go on without the missing rank.
std::unique_ptr<RankGroup> JoinRankGroup(std::chrono::milliseconds timeout);

}  // namespace xmlt::ranks
