// NCCL's collectives over the simulated GPUs. A collective over a clique of ncclCommInitAll must
// have every rank's call inside one group (between ncclGroupStart and ncclGroupEnd), where a card
// would hang on the first rank's call otherwise. Calls in a group are checked at once and
// deferred; at ncclGroupEnd each rank's calls take their places in its clique (the j-th call of
// each rank forms the j-th collective), and each is enqueued on its rank's stream as one
// operation, which is also a launch (counted, and able to fault, as gpusim/faults.h says). The
// first of a collective's operations to run waits for every rank's call (from whichever thread
// makes it) and for every rank's stream to reach its own (all inputs ready), then moves the data
// for all ranks; the others find it done. A rank whose call does not come within
// XMLT_SIM_NCCL_TIMEOUT seconds (default 60), where a card would hang, fails the collective for
// the ranks that came (ncclRemoteError), so that a test ends. Traffic and time are charged as
// NCCL's ring would move the data (nccl_ring_cost.h).
//
// A lost GPU makes every later collective of its clique fail with ncclUnhandledCudaError, and a
// collective that was waiting for it leaves the peers' buffers as they were and their
// communicators in error (on a card the peers would wait forever).
#include "gpusim/nccl_collectives.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

#include "gpusim/device_memory.h"
#include "gpusim/devices.h"
#include "gpusim/faults.h"
#include "gpusim/nccl_communicators.h"
#include "gpusim/nccl_open_group.h"
#include "gpusim/nccl_ring_cost.h"
#include "gpusim/operation_clock.h"
#include "gpusim/streams.h"

using namespace gpusim;
using namespace gpusim::detail;
using namespace gpusim::nccl;

namespace gpusim::nccl {

const char* KindName(Kind kind) {
  switch (kind) {
    case Kind::kAllReduce: return "ncclAllReduce";
    case Kind::kReduceScatter: return "ncclReduceScatter";
    default: return "ncclAllGather";
  }
}

// One collective across the ranks of a clique, its calls filled in as the ranks make them.
struct Collective {
  explicit Collective(size_t n) : calls(n), positions(n), injected(n, cudaSuccess) {}
  std::vector<Call> calls;          // by rank
  std::vector<uint64_t> positions;  // each rank's stream position before its operation
  std::vector<cudaError_t> injected;
  std::mutex mutex;
  std::condition_variable all_called;
  size_t placed = 0;   // calls given this collective (under the clique's mutex)
  size_t arrived = 0;  // calls filled in (under `mutex`)
  std::string mismatch;  // why the ranks' calls do not form one collective, or ""
  bool done = false;
  bool failed = false;
  double end = 0;  // virtual time at which the data has moved

  void Run(size_t rank);
  // Fails the collective for every rank that has called it (under `mutex`).
  void Fail(ncclResult_t peer_result, const std::string& why);
  template <class T>
  void Move();
};

namespace {

template <class T>
T Apply(ncclRedOp_t op, T a, T b) {
  switch (op) {
    case ncclProd: return a * b;
    case ncclMax: return a < b ? b : a;
    case ncclMin: return b < a ? b : a;
    default: return a + b;  // sum, average, pre-multiplied sum
  }
}

}  // namespace

template <class T>
void Collective::Move() {
  const size_t n = calls.size();
  const Call& first = calls[0];
  // The elements every rank contributes, pre-multiplied where the op says so.
  const size_t in_count = first.kind == Kind::kReduceScatter ? n * first.count : first.count;
  if (first.count == 0) return;
  std::vector<std::vector<T>> inputs(n);
  for (size_t r = 0; r < n; ++r) {
    const T* src = static_cast<const T*>(calls[r].send);
    inputs[r].assign(src, src + in_count);
    if (calls[r].premul != nullptr) {
      const PreMulSum& p = *calls[r].premul;
      T scalar = T(p.value);
      if (p.residence == ncclScalarDevice) std::memcpy(&scalar, p.device_scalar, sizeof(T));
      for (T& v : inputs[r]) v = v * scalar;
    }
  }
  if (first.kind == Kind::kAllGather) {
    std::vector<T> gathered;
    for (const std::vector<T>& in : inputs) gathered.insert(gathered.end(), in.begin(), in.end());
    for (const Call& c : calls) {
      std::memcpy(c.recv, gathered.data(), gathered.size() * sizeof(T));
      MarkDeviceWritten(c.recv, gathered.size() * sizeof(T));
    }
    return;
  }
  std::vector<T> reduced = inputs[0];  // in rank order
  for (size_t r = 1; r < n; ++r)
    for (size_t i = 0; i < in_count; ++i) reduced[i] = Apply(first.op, reduced[i], inputs[r][i]);
  if (first.op == ncclAvg)
    for (T& v : reduced) v = v / T(n);
  for (size_t r = 0; r < n; ++r) {
    const bool scatter = first.kind == Kind::kReduceScatter;
    std::memcpy(calls[r].recv, reduced.data() + (scatter ? r * first.count : 0), first.count * sizeof(T));
    MarkDeviceWritten(calls[r].recv, first.count * sizeof(T));
  }
}

void Collective::Fail(ncclResult_t peer_result, const std::string& why) {
  done = failed = true;
  for (const Call& c : calls) {
    if (c.comm == nullptr) continue;
    ncclResult_t none = ncclSuccess;
    c.comm->async_error.compare_exchange_strong(
        none, StickyError(c.comm->device) != cudaSuccess ? ncclUnhandledCudaError : peer_result);
  }
  std::fprintf(stderr, "gpusim: %s\n", why.c_str());
}

void Collective::Run(size_t rank) {
  const std::string name = KindName(calls[rank].kind);
  {
    // Every rank's call, from whichever thread makes it.
    std::unique_lock<std::mutex> lock(mutex);
    const auto timeout = PeerTimeout();
    if (!all_called.wait_for(lock, timeout, [&] { return arrived == calls.size() || done; })) {
      std::string missing;
      for (size_t r = 0; r < calls.size(); ++r)
        if (calls[r].comm == nullptr) missing += (missing.empty() ? "" : ", ") + std::to_string(r);
      Fail(ncclRemoteError, name + ": rank(s) " + missing + " did not make the call within " +
                                std::to_string(timeout.count() / 1000.0) +
                                " s (XMLT_SIM_NCCL_TIMEOUT); the collective fails for the others, where a card "
                                "would wait forever");
    }
    if (done) {
      if (!failed) After(end);  // a later rank's operation ends when the data has moved
      return;
    }
    if (!mismatch.empty()) {
      Fail(ncclInvalidArgument, mismatch);
      return;
    }
  }
  // Every rank's inputs: its stream up to its own operation. Not under the mutex: another host
  // thread running a peer's stream may be on its way to this collective. A peer's stream that
  // another thread is running (a rank of another thread, which runs its own streams) is waited
  // for rather than locked: that thread may be waiting, in its own collective, for this stream.
  const auto deadline = std::chrono::steady_clock::now() + PeerTimeout();
  std::vector<bool> reached(calls.size(), false);
  reached[rank] = true;
  for (;;) {
    bool all = true;
    for (size_t r = 0; r < calls.size(); ++r) {
      if (!reached[r]) reached[r] = TryFlush(calls[r].stream, positions[r]);
      all = all && reached[r];
    }
    if (all) break;
    std::unique_lock<std::mutex> lock(mutex);
    if (done) {
      if (!failed) After(end);
      return;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      Fail(ncclRemoteError, name + ": a rank's stream did not reach the collective within " +
                                std::to_string(PeerTimeout().count() / 1000.0) + " s (XMLT_SIM_NCCL_TIMEOUT)");
      return;
    }
    all_called.wait_for(lock, std::chrono::milliseconds(1));
  }
  std::lock_guard<std::mutex> lock(mutex);
  if (done) {
    if (!failed) After(end);  // a later rank's operation ends when the data has moved, as the first's did
    return;
  }
  done = true;
  bool lost = false;
  for (size_t r = 0; r < calls.size(); ++r)
    lost = lost || injected[r] != cudaSuccess || StickyError(calls[r].comm->device) != cudaSuccess ||
           calls[r].comm->state == ncclComm::State::kAborted;
  if (lost) {
    // Every communicator holds its error before an injected fault loses its GPU's context: the
    // rank of that GPU may be on another thread, whose synchronize returns the lost context at once
    // without waiting for this collective, and reads its communicator's error next.
    for (size_t r = 0; r < calls.size(); ++r) {
      const bool gpu_lost = injected[r] != cudaSuccess || StickyError(calls[r].comm->device) != cudaSuccess;
      ncclResult_t none = ncclSuccess;
      calls[r].comm->async_error.compare_exchange_strong(none, gpu_lost ? ncclUnhandledCudaError : ncclRemoteError);
    }
    for (size_t r = 0; r < calls.size(); ++r)
      if (injected[r] != cudaSuccess)
        LoseContext(calls[r].comm->device, injected[r], "injected fault in " + name);
    Fail(ncclRemoteError, name + ": a rank's GPU was lost or its communicator aborted; nothing moved");
    return;
  }
  if (calls[0].datatype == ncclFloat64) {
    Move<double>();
  } else {
    Move<float>();
  }
  // From when every rank had issued the call and its stream had reached it.
  double ready = Now();
  for (size_t r = 0; r < calls.size(); ++r)
    if (r != rank) ready = std::max(ready, TimeAt(calls[r].stream, positions[r]));
  end = calls[0].count == 0 ? ready : ChargeRing(calls, ready);
  After(end);
}

namespace {

// Checks one rank's call; "" when it may go ahead.
std::string CheckCall(const Call& c) {
  const std::string what = std::string(KindName(c.kind)) + " of " + std::to_string(c.count) + " elements: ";
  if (const std::string why = Unusable(c.comm); !why.empty()) return what + "the communicator is " + why;
  const size_t size = SizeOf(c.datatype);
  if (size == 0) return what + "the simulator reduces float and double only, not type " + std::to_string(c.datatype);
  if (c.kind != Kind::kAllGather) {
    if (c.op >= ncclNumOps) {
      const size_t i = size_t(c.op - ncclNumOps);
      if (i >= c.comm->ops.size() || c.comm->ops[i] == nullptr)
        return what + "op " + std::to_string(c.op) + " was not created on this communicator";
      if (c.comm->ops[i]->datatype != c.datatype) return what + "op " + std::to_string(c.op) + " is of another type";
    } else if (c.op < 0) {
      return what + "no op " + std::to_string(c.op);
    }
  }
  if (c.stream == nullptr) return what + "not a live stream";
  if (c.stream->device != c.comm->device)
    return what + "a stream of GPU " + std::to_string(c.stream->device) + " for rank " + std::to_string(c.comm->rank) +
           " on GPU " + std::to_string(c.comm->device);
  const size_t n = c.comm->clique->ranks.size();
  const size_t send = (c.kind == Kind::kReduceScatter ? n : 1) * c.count * size;
  const size_t recv = (c.kind == Kind::kAllGather ? n : 1) * c.count * size;
  if (c.count == 0) return {};
  if (!Contains(c.send, send, Space::kDevice, c.comm->device))
    return what + "the send buffer " + Describe(c.send) + " does not hold " + std::to_string(send) +
           " bytes on GPU " + std::to_string(c.comm->device);
  if (!Contains(c.recv, recv, Space::kDevice, c.comm->device))
    return what + "the receive buffer " + Describe(c.recv) + " does not hold " + std::to_string(recv) +
           " bytes on GPU " + std::to_string(c.comm->device);
  return {};
}

// Why the calls of one collective (by rank) do not match, or "".
std::string Mismatch(const std::vector<Call>& calls, uint64_t sequence) {
  const Call& a = calls[0];
  for (const Call& b : calls) {
    const bool same_op = a.kind == Kind::kAllGather || (a.op >= ncclNumOps ? b.op >= ncclNumOps : a.op == b.op);
    if (b.kind != a.kind || b.count != a.count || b.datatype != a.datatype || !same_op)
      return "ncclGroupEnd: collective " + std::to_string(sequence) + ": rank " + std::to_string(b.comm->rank) +
             " calls " + KindName(b.kind) + " of " + std::to_string(b.count) + " elements, rank 0 " + KindName(a.kind) +
             " of " + std::to_string(a.count) + " (or another type or op)";
  }
  return {};
}

// Rank `call.comm->rank`'s next call on its clique: it takes its place in the collective of that
// sequence number (made by the first rank to call it) and is enqueued on the rank's stream.
void Arrive(const Call& call) {
  Clique& clique = *call.comm->clique;
  const size_t rank = size_t(call.comm->rank);
  std::shared_ptr<Collective> collective;
  uint64_t sequence = 0;
  {
    std::lock_guard<std::mutex> lock(clique.mutex);
    sequence = clique.calls_made[rank]++;
    std::shared_ptr<Collective>& forming = clique.forming[sequence];
    if (forming == nullptr) forming = std::make_shared<Collective>(clique.ranks.size());
    collective = forming;
    if (++collective->placed == clique.ranks.size()) clique.forming.erase(sequence);
  }
  std::lock_guard<std::mutex> lock(collective->mutex);
  collective->calls[rank] = call;
  {
    std::lock_guard<std::mutex> queue(call.stream->queue);
    collective->positions[rank] = call.stream->submitted;
  }
  collective->injected[rank] = CountLaunch(call.comm->device);
  call.comm->last_stream = call.stream;
  call.comm->last_position = collective->positions[rank] + 1;
  gpusim::detail::Enqueue(call.stream, [collective, rank] { collective->Run(rank); });
  if (collective->failed) {  // timed out before this rank came
    ncclResult_t none = ncclSuccess;
    call.comm->async_error.compare_exchange_strong(none, ncclRemoteError);
  }
  if (++collective->arrived == collective->calls.size()) {
    collective->mismatch = Mismatch(collective->calls, sequence);
    if (collective->mismatch.empty()) CountRingTraffic(collective->calls);
    collective->all_called.notify_all();
  }
}

}  // namespace

// Places a group's calls in their collectives and enqueues them.
ncclResult_t Submit(const std::vector<Call>& calls) {
  // The calls of each clique, by rank, in order.
  std::vector<std::pair<Clique*, std::vector<std::vector<Call>>>> cliques;
  for (const Call& c : calls) {
    Clique* clique = c.comm->clique.get();
    auto it = std::find_if(cliques.begin(), cliques.end(), [&](const auto& e) { return e.first == clique; });
    if (it == cliques.end()) {
      cliques.emplace_back(clique, std::vector<std::vector<Call>>(clique->ranks.size()));
      it = cliques.end() - 1;
    }
    it->second[size_t(c.comm->rank)].push_back(c);
  }
  for (const auto& [clique, by_rank] : cliques) {
    // A clique of ncclCommInitAll has one host thread: every rank's calls must be in this group.
    if (clique->one_thread) {
      for (size_t r = 1; r < by_rank.size(); ++r)
        if (by_rank[r].size() != by_rank[0].size())
          return Refuse(ncclInvalidUsage,
                        "ncclGroupEnd: rank 0 of a clique makes " + std::to_string(by_rank[0].size()) +
                            " collective calls and rank " + std::to_string(r) + " " +
                            std::to_string(by_rank[r].size()) +
                            "; one host thread must call every rank within one group, or a card hangs");
      if (!by_rank.empty()) {
        std::vector<Call> first;
        for (size_t j = 0; j < by_rank[0].size(); ++j) {
          first.clear();
          for (const std::vector<Call>& rank_calls : by_rank) first.push_back(rank_calls[j]);
          if (const std::string why = Mismatch(first, j); !why.empty()) return Refuse(ncclInvalidArgument, why);
        }
      }
    }
    if (const int lost = LostDevice(*clique); lost >= 0)
      return Refuse(ncclUnhandledCudaError, "ncclGroupEnd: GPU " + std::to_string(lost) + " of the clique is lost");
  }
  // Each rank's j-th call, rank after rank: a collective is complete when its last rank's call is in.
  for (const auto& [clique, by_rank] : cliques) {
    size_t most = 0;
    for (const std::vector<Call>& rank_calls : by_rank) most = std::max(most, rank_calls.size());
    for (size_t j = 0; j < most; ++j)
      for (const std::vector<Call>& rank_calls : by_rank)
        if (j < rank_calls.size()) Arrive(rank_calls[j]);
  }
  return ncclSuccess;
}

namespace {

ncclResult_t Collect(Call call) {
  // The null stream is the communicator's GPU's, whichever GPU is current.
  if (call.stream == nullptr && Unusable(call.comm).empty()) {
    call.stream = LegacyStream(call.comm->device);
  } else {
    call.stream = ResolveStream(call.stream);
  }
  Group& group = ThisThreadsGroup();
  const std::string why = CheckCall(call);
  if (why.empty() && call.op >= ncclNumOps && call.kind != Kind::kAllGather)
    call.premul = call.comm->ops[size_t(call.op - ncclNumOps)];
  ncclResult_t result = ncclSuccess;
  if (!why.empty()) {
    result = Refuse(ncclInvalidArgument, why);
  } else if (const int lost = LostDevice(*call.comm->clique); lost >= 0) {
    result = Refuse(ncclUnhandledCudaError, std::string(KindName(call.kind)) + ": GPU " + std::to_string(lost) +
                                                " of the clique is lost");
  } else if (call.comm->async_error != ncclSuccess) {
    result = Refuse(call.comm->async_error, std::string(KindName(call.kind)) +
                                                ": the communicator's last collective failed; abort it");
  }
  if (group.depth == 0) {
    if (result != ncclSuccess) return result;
    if (call.comm->clique->one_thread && call.comm->clique->ranks.size() > 1)
      return Refuse(ncclInvalidUsage, std::string(KindName(call.kind)) +
                                          " outside a group on a clique of several ranks: one host thread would "
                                          "wait forever on a card for the other ranks");
    return Submit({call});
  }
  if (result != ncclSuccess) {
    if (group.error == ncclSuccess) group.error = result;
    return result;
  }
  group.calls.push_back(call);
  return ncclSuccess;
}

}  // namespace

}  // namespace gpusim::nccl

ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                           ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  return Collect({Kind::kAllReduce, comm, sendbuff, recvbuff, count, datatype, op, stream, nullptr});
}

ncclResult_t ncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount, ncclDataType_t datatype,
                               ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  return Collect({Kind::kReduceScatter, comm, sendbuff, recvbuff, recvcount, datatype, op, stream, nullptr});
}

ncclResult_t ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype,
                           ncclComm_t comm, cudaStream_t stream) {
  return Collect({Kind::kAllGather, comm, sendbuff, recvbuff, sendcount, datatype, ncclSum, stream, nullptr});
}
