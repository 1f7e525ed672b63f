// The simulator's NCCL communicators (include/nccl.h), as the collectives and groups see them: the
// clique of ranks, one communicator per rank, and the pre-multiplied sums made on a communicator.
// The calls that make and end them are in nccl_communicators.cc.
#pragma once

#include <nccl.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "gpusim/nccl_init.h"

struct CUstream_st;
struct ncclComm;

namespace gpusim::nccl {

struct Collective;

// The ranks of one communicator, one ncclComm each, and the collectives they are forming.
struct Clique {
  std::vector<ncclComm*> ranks;  // by rank; null until that rank has joined (ncclCommInitRank)
  bool one_thread = false;       // made by ncclCommInitAll
  std::mutex mutex;
  std::condition_variable all_joined;
  int joined = 0;
  std::vector<uint64_t> calls_made;  // by rank: the collective calls it has made so far
  // The collectives some ranks have called and others not yet, by sequence number.
  std::map<uint64_t, std::shared_ptr<Collective>> forming;
};

// How long a rank waits for the others (NCCL would wait forever).
// XMLT_SIM_NCCL_TIMEOUT seconds, default 60.
std::chrono::milliseconds PeerTimeout();

// A pre-multiplied sum: the scalar read at creation (host) or when the collective runs (device).
struct PreMulSum {
  ncclDataType_t datatype = ncclFloat32;
  ncclScalarResidence_t residence = ncclScalarHostImmediate;
  double value = 0;
  const void* device_scalar = nullptr;
};

}  // namespace gpusim::nccl

struct ncclComm {
  enum class State { kLive, kDestroyed, kAborted };
  std::shared_ptr<gpusim::nccl::Clique> clique;
  int rank = 0;
  int device = 0;
  // Atomic: a collective's operation may run on another host thread (whichever flushes its stream).
  std::atomic<State> state{State::kLive};
  std::atomic<ncclResult_t> async_error{ncclSuccess};
  std::vector<std::shared_ptr<const gpusim::nccl::PreMulSum>> ops;  // op ncclNumOps + i; null once destroyed
  // The stream and position of this communicator's last enqueued collective, which ncclCommDestroy
  // waits for.
  CUstream_st* last_stream = nullptr;
  uint64_t last_position = 0;
};

namespace gpusim::nccl {

// Says why on stderr, and returns `result`.
ncclResult_t Refuse(ncclResult_t result, const std::string& why);

// Why `comm` cannot be used, or "".
std::string Unusable(ncclComm* comm);

// The bytes of one element of `datatype`, or 0 for a type the simulator does not reduce.
size_t SizeOf(ncclDataType_t datatype);

// The clique's first lost GPU, or -1.
int LostDevice(const Clique& clique);

// Joins every rank of `inits`, then waits for their cliques.
ncclResult_t InitRanks(const std::vector<Init>& inits);

}  // namespace gpusim::nccl
