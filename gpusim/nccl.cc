// NCCL over the simulated GPUs (include/nccl.h). The communicators of one clique come from
// ncclCommInitAll, for one host thread driving every GPU, or from ncclCommInitRank with a unique
// id (ncclGetUniqueId), one call per rank, from as many host threads of this process as play
// ranks (a thread may init several ranks inside one group); the calls wait for every rank of the
// clique. A collective over a clique of ncclCommInitAll must have every rank's call inside one
// group (between ncclGroupStart and ncclGroupEnd), where a card would hang on the first rank's call
// otherwise. Calls in a group are checked at once and deferred; at ncclGroupEnd each rank's calls
// take their places in its clique (the j-th call of each rank forms the j-th collective), and
// each is enqueued on its rank's stream as one operation, which is also a launch (counted, and
// able to fault, as gpusim/faults.h says). The first of a collective's operations to run waits for
// every rank's call (from whichever thread makes it) and for every rank's stream to reach its own
// (all inputs ready), then moves the data for all ranks; the others find it done. A rank whose
// call does not come within XMLT_SIM_NCCL_TIMEOUT seconds (default 60), where a card would hang,
// fails the collective for the ranks that came (ncclRemoteError), so that a test ends.
// The ranks of a clique must live in this process: communicators across processes are not
// simulated (ncclCommInitRank waits, then times out). Traffic is counted as NCCL's ring moves it:
// each rank sends to the next (N-1)/N of the buffer in a reduce-scatter or an all-gather and
// 2(N-1)/N in an all-reduce. The virtual clock (timing.h) is charged the same way, from when the
// last rank's inputs are ready: N-1 steps per phase, in each every rank sends one chunk over its
// outgoing port into the next rank's incoming one, and in a reduction the receiver reads that
// chunk and its own and writes the sum (3 chunks of its memory), alongside the copy, as NCCL's
// kernels reduce while they move; every rank's operation ends with the last step.
//
// A lost GPU makes every later collective of its clique fail with ncclUnhandledCudaError, and a
// collective that was waiting for it leaves the peers' buffers as they were and their
// communicators in error (on a card the peers would wait forever). Such a communicator can only
// be aborted: ncclCommDestroy, which on a card waits for the collective, refuses.
#include <nccl.h>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "gpusim/device_memory.h"
#include "gpusim/devices.h"
#include "gpusim/faults.h"
#include "gpusim/streams.h"
#include "gpusim/timing.h"
#include "gpusim/traffic.h"

using namespace gpusim;
using namespace gpusim::detail;

struct ncclComm;

namespace {

struct Collective;

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
std::chrono::milliseconds PeerTimeout() {
  const char* text = std::getenv("XMLT_SIM_NCCL_TIMEOUT");
  const double seconds = text != nullptr && std::atof(text) > 0 ? std::atof(text) : 60.0;
  return std::chrono::milliseconds(int64_t(seconds * 1000));
}

// A pre-multiplied sum: the scalar read at creation (host) or when the collective runs (device).
struct PreMulSum {
  ncclDataType_t datatype = ncclFloat32;
  ncclScalarResidence_t residence = ncclScalarHostImmediate;
  double value = 0;
  const void* device_scalar = nullptr;
};

}  // namespace

struct ncclComm {
  enum class State { kLive, kDestroyed, kAborted };
  std::shared_ptr<Clique> clique;
  int rank = 0;
  int device = 0;
  // Atomic: a collective's operation may run on another host thread (whichever flushes its stream).
  std::atomic<State> state{State::kLive};
  std::atomic<ncclResult_t> async_error{ncclSuccess};
  std::vector<std::shared_ptr<const PreMulSum>> ops;  // op ncclNumOps + i; null once destroyed
  // The stream and position of this communicator's last enqueued collective, which ncclCommDestroy
  // waits for.
  CUstream_st* last_stream = nullptr;
  uint64_t last_position = 0;
};

namespace {

enum class Kind { kAllReduce, kReduceScatter, kAllGather };

const char* KindName(Kind kind) {
  switch (kind) {
    case Kind::kAllReduce: return "ncclAllReduce";
    case Kind::kReduceScatter: return "ncclReduceScatter";
    default: return "ncclAllGather";
  }
}

// One rank's call. `count` is the call's own count argument (recvcount, sendcount).
struct Call {
  Kind kind = Kind::kAllReduce;
  ncclComm* comm = nullptr;  // null in a collective's slot until that rank has called
  const void* send = nullptr;
  void* recv = nullptr;
  size_t count = 0;
  ncclDataType_t datatype = ncclFloat32;
  ncclRedOp_t op = ncclSum;
  CUstream_st* stream = nullptr;
  // The pre-multiplied sum `op` names, held by the call: NCCL lets the op be destroyed as soon as
  // the calls given it have returned.
  std::shared_ptr<const PreMulSum> premul;
};

struct Registry {
  std::mutex mutex;
  std::set<ncclComm*> comms;  // every communicator made, never freed: a stale handle is recognized
};

Registry& Comms() {
  static Registry* r = new Registry;
  return *r;
}

bool Known(ncclComm* comm) {
  Registry& r = Comms();
  std::lock_guard<std::mutex> lock(r.mutex);
  return r.comms.count(comm) > 0;
}

ncclResult_t Refuse(ncclResult_t result, const std::string& why) {
  std::fprintf(stderr, "gpusim: %s\n", why.c_str());
  return result;
}

// Why `comm` cannot be used, or "".
std::string Unusable(ncclComm* comm) {
  if (comm == nullptr || !Known(comm)) return "not a communicator";
  if (comm->state == ncclComm::State::kDestroyed) return "a destroyed communicator";
  if (comm->state == ncclComm::State::kAborted) return "an aborted communicator";
  return {};
}

size_t SizeOf(ncclDataType_t datatype) {
  switch (datatype) {
    case ncclFloat32: return sizeof(float);
    case ncclFloat64: return sizeof(double);
    default: return 0;  // the simulator reduces float and double only
  }
}

// The clique's first lost GPU, or -1.
int LostDevice(const Clique& clique) {
  for (const ncclComm* c : clique.ranks)
    if (c != nullptr && StickyError(c->device) != cudaSuccess) return c->device;
  return -1;
}

// An ncclCommInitRank inside a group: the rank joins its clique at ncclGroupEnd.
struct Init {
  ncclComm_t* comm;
  int nranks;
  ncclUniqueId id;
  int rank;
  int device;
};

struct Group {
  int depth = 0;
  std::vector<Init> inits;
  std::vector<Call> calls;
  ncclResult_t error = ncclSuccess;  // the first refused call's, returned by ncclGroupEnd
};

Group& ThisThreadsGroup() {
  static thread_local Group group;
  return group;
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

template <class T>
T Apply(ncclRedOp_t op, T a, T b) {
  switch (op) {
    case ncclProd: return a * b;
    case ncclMax: return a < b ? b : a;
    case ncclMin: return b < a ? b : a;
    default: return a + b;  // sum, average, pre-multiplied sum
  }
}

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

// Charges `charge` to the virtual clock as work of its own from `ready`, beside the running
// operation's (the ranks of a ring move their chunks at the same time); returns its end.
template <class F>
double ChargeFrom(double ready, F&& charge) {
  OpClock piece;
  piece.start = piece.end = ready;
  OpClock* outer = EnterOp(&piece);
  charge();
  LeaveOp(&piece, outer);
  return piece.end;
}

// The ring's steps on the virtual clock, from `ready` (see the top of this file); returns the end
// of the last. Chunks as CountRingTraffic cuts them: at step s of the reduce-scatter rank r sends
// chunk r - s, at step s of the all-gather chunk r + 1 - s (mod N).
double ChargeRing(const std::vector<Call>& calls, double ready) {
  const size_t n = calls.size();
  const Call& first = calls[0];
  const size_t size = SizeOf(first.datatype);
  auto device = [&](size_t r) { return calls[r % n].comm->device; };
  if (n == 1) {  // no peer: at most a copy within the GPU
    if (calls[0].send == calls[0].recv) return ready;
    return ChargeFrom(ready, [&] { ChargeMemory(device(0), 2 * first.count * size); });
  }
  auto chunk_bytes = [&](size_t c) {
    if (first.kind != Kind::kAllReduce) return first.count * size;
    return (first.count * (c + 1) / n - first.count * c / n) * size;
  };
  double t = ready, local = ready;
  if (first.kind == Kind::kAllGather) {
    // Out of place, each rank also copies its own chunk into its slot of the output, beside the
    // ring's steps.
    for (size_t r = 0; r < n; ++r) {
      const auto* slot = static_cast<const unsigned char*>(calls[r].recv) + r * first.count * size;
      if (calls[r].send != slot)
        local = std::max(local, ChargeFrom(ready, [&] { ChargeMemory(device(r), 2 * first.count * size); }));
    }
  }
  for (const bool reduce : {true, false}) {
    if (reduce ? first.kind == Kind::kAllGather : first.kind == Kind::kReduceScatter) continue;
    for (size_t s = 0; s + 1 < n; ++s) {
      double step_end = t;
      for (size_t r = 0; r < n; ++r) {
        const uint64_t bytes = chunk_bytes((reduce ? r + n - s : r + 1 + n - s) % n);
        step_end = std::max(step_end, ChargeFrom(t, [&] { ChargeCopy(device(r), device(r + 1), bytes); }));
        if (reduce) step_end = std::max(step_end, ChargeFrom(t, [&] { ChargeMemory(device(r + 1), 3 * bytes); }));
      }
      t = step_end;
    }
  }
  return std::max(t, local);
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
  for (size_t r = 0; r < calls.size(); ++r)
    if (injected[r] != cudaSuccess)
      LoseContext(calls[r].comm->device, injected[r], "injected fault in " + name);
  bool lost = false;
  for (const Call& c : calls) lost = lost || StickyError(c.comm->device) != cudaSuccess ||
                                     c.comm->state == ncclComm::State::kAborted;
  if (lost) {
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

// NCCL's ring: over N ranks each rank sends N-1 of the N chunks to the next one in a
// reduce-scatter (all but the chunk it ends up owning) and in an all-gather (all but the one it
// receives last); an all-reduce is both, over chunks of near-equal size.
void CountRingTraffic(const std::vector<Call>& calls) {
  const size_t n = calls.size();
  if (n < 2) return;
  const Call& first = calls[0];
  const size_t size = SizeOf(first.datatype);
  for (size_t r = 0; r < n; ++r) {
    const int from = calls[r].comm->device, to = calls[(r + 1) % n].comm->device;
    if (first.kind == Kind::kAllReduce) {
      const size_t count = first.count;
      auto chunk = [&](size_t c) { return count * (c + 1) / n - count * c / n; };
      CountCopy(from, to, (2 * count - chunk((r + 1) % n) - chunk((r + 2) % n)) * size);
    } else {
      CountCopy(from, to, (n - 1) * first.count * size);
    }
  }
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
                            " collective calls and rank " + std::to_string(r) + " " + std::to_string(by_rank[r].size()) +
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

ncclResult_t Collect(Call call) {
  // The null stream is the communicator's GPU's, whichever GPU is current.
  if (call.stream == nullptr && Unusable(call.comm).empty()) {
    call.stream = DeviceAt(call.comm->device)->legacy_stream;
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

const char* ncclGetErrorString(ncclResult_t result) {
  switch (result) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError: return "internal error - please report this issue to the NCCL developers";
    case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
    default: return "unknown result code";
  }
}

ncclResult_t ncclCommInitAll(ncclComm_t* comms, int ndev, const int* devlist) {
  if (comms == nullptr || ndev < 1) return Refuse(ncclInvalidArgument, "ncclCommInitAll: no communicators asked for");
  std::vector<int> devices;
  for (int i = 0; i < ndev; ++i) {
    const int d = devlist == nullptr ? i : devlist[i];
    if (DeviceAt(d) == nullptr)
      return Refuse(ncclInvalidArgument, "ncclCommInitAll: no GPU " + std::to_string(d));
    if (std::find(devices.begin(), devices.end(), d) != devices.end())
      return Refuse(ncclInvalidUsage, "ncclCommInitAll: GPU " + std::to_string(d) + " twice");
    if (ContextError(d) != cudaSuccess)
      return Refuse(ncclUnhandledCudaError, "ncclCommInitAll: GPU " + std::to_string(d) + " is lost");
    devices.push_back(d);
  }
  auto clique = std::make_shared<Clique>();
  clique->one_thread = true;
  clique->joined = ndev;
  clique->calls_made.assign(size_t(ndev), 0);
  Registry& r = Comms();
  std::lock_guard<std::mutex> lock(r.mutex);
  for (int i = 0; i < ndev; ++i) {
    auto* comm = new ncclComm;
    comm->clique = clique;
    comm->rank = i;
    comm->device = devices[size_t(i)];
    clique->ranks.push_back(comm);
    r.comms.insert(comm);
    comms[i] = comm;
  }
  return ncclSuccess;
}

ncclResult_t ncclGetUniqueId(ncclUniqueId* unique_id) {
  if (unique_id == nullptr) return Refuse(ncclInvalidArgument, "ncclGetUniqueId: no id");
  static std::atomic<uint64_t> made{0};
  std::memset(unique_id->internal, 0, sizeof(unique_id->internal));
  std::snprintf(unique_id->internal, sizeof(unique_id->internal), "gpusim-nccl:%ld:%llu", long(getpid()),
                static_cast<unsigned long long>(++made));
  return ncclSuccess;
}

namespace {

// The cliques of ncclCommInitRank still waiting for ranks, by unique id.
std::map<std::string, std::shared_ptr<Clique>>& Forming() {
  static auto* forming = new std::map<std::string, std::shared_ptr<Clique>>;
  return *forming;
}

std::string IdText(const ncclUniqueId& id) {
  return std::string(id.internal, strnlen(id.internal, sizeof(id.internal)));
}

// Places rank `init.rank` in the clique of its id (made by its first rank); does not wait.
ncclResult_t Join(const Init& init, std::shared_ptr<Clique>* joined) {
  const std::string what = "ncclCommInitRank (rank " + std::to_string(init.rank) + " of " +
                           std::to_string(init.nranks) + ", GPU " + std::to_string(init.device) + "): ";
  if (init.nranks < 1 || init.rank < 0 || init.rank >= init.nranks)
    return Refuse(ncclInvalidArgument, what + "no such rank");
  if (IdText(init.id).rfind("gpusim-nccl:", 0) != 0)
    return Refuse(ncclInvalidArgument, what + "not an id from ncclGetUniqueId");
  if (IdText(init.id).rfind("gpusim-nccl:" + std::to_string(long(getpid())) + ":", 0) != 0)
    return Refuse(ncclSystemError, what + "the id is another process's; the simulator's communicators live in one "
                                          "process");
  if (DeviceAt(init.device) == nullptr) return Refuse(ncclInvalidArgument, what + "no such GPU");
  if (ContextError(init.device) != cudaSuccess) return Refuse(ncclUnhandledCudaError, what + "the GPU is lost");
  Registry& r = Comms();
  std::lock_guard<std::mutex> registry(r.mutex);
  std::shared_ptr<Clique>& slot = Forming()[IdText(init.id)];
  if (slot == nullptr) {
    slot = std::make_shared<Clique>();
    slot->ranks.assign(size_t(init.nranks), nullptr);
    slot->calls_made.assign(size_t(init.nranks), 0);
  }
  // A copy, not the map's entry: the last rank to join erases that entry below.
  const std::shared_ptr<Clique> clique = slot;
  std::lock_guard<std::mutex> lock(clique->mutex);
  if (clique->ranks.size() != size_t(init.nranks))
    return Refuse(ncclInvalidArgument, what + "another rank of this id said " + std::to_string(clique->ranks.size()) +
                                           " ranks");
  if (clique->ranks[size_t(init.rank)] != nullptr) return Refuse(ncclInvalidUsage, what + "the rank joined twice");
  for (const ncclComm* c : clique->ranks)
    if (c != nullptr && c->device == init.device)
      return Refuse(ncclInvalidUsage, what + "rank " + std::to_string(c->rank) +
                                          " of the clique is on the same GPU (NCCL: duplicate GPU detected)");
  auto* comm = new ncclComm;
  comm->clique = clique;
  comm->rank = init.rank;
  comm->device = init.device;
  clique->ranks[size_t(init.rank)] = comm;
  r.comms.insert(comm);
  *init.comm = comm;
  *joined = clique;
  if (++clique->joined == init.nranks) {
    Forming().erase(IdText(init.id));
    clique->all_joined.notify_all();
  }
  return ncclSuccess;
}

// Waits for every rank of the clique to join, as ncclCommInitRank does on a card.
ncclResult_t AwaitRanks(Clique& clique) {
  std::unique_lock<std::mutex> lock(clique.mutex);
  const auto timeout = PeerTimeout();
  if (clique.all_joined.wait_for(lock, timeout, [&] { return clique.joined == int(clique.ranks.size()); }))
    return ncclSuccess;
  return Refuse(ncclSystemError, "ncclCommInitRank: " + std::to_string(clique.ranks.size() - size_t(clique.joined)) +
                                     " of the " + std::to_string(clique.ranks.size()) + " ranks did not join within " +
                                     std::to_string(timeout.count() / 1000.0) + " s (XMLT_SIM_NCCL_TIMEOUT)");
}

// Joins every rank of `inits`, then waits for their cliques.
ncclResult_t InitRanks(const std::vector<Init>& inits) {
  std::vector<std::shared_ptr<Clique>> cliques;
  for (const Init& init : inits) {
    std::shared_ptr<Clique> clique;
    if (const ncclResult_t result = Join(init, &clique); result != ncclSuccess) return result;
    cliques.push_back(std::move(clique));
  }
  for (const std::shared_ptr<Clique>& clique : cliques)
    if (const ncclResult_t result = AwaitRanks(*clique); result != ncclSuccess) return result;
  return ncclSuccess;
}

}  // namespace

ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId comm_id, int rank) {
  if (comm == nullptr) return Refuse(ncclInvalidArgument, "ncclCommInitRank: no communicator to set");
  *comm = nullptr;
  Init init{comm, nranks, comm_id, rank, CurrentOrdinal()};
  Group& group = ThisThreadsGroup();
  if (group.depth > 0) {
    group.inits.push_back(init);
    return ncclSuccess;
  }
  return InitRanks({init});
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  if (const std::string why = Unusable(comm); !why.empty())
    return Refuse(ncclInvalidArgument, "ncclCommDestroy: " + why);
  // As on a card, the communicator's collectives finish first.
  if (comm->last_stream != nullptr) Flush(comm->last_stream, comm->last_position);
  if (comm->async_error != ncclSuccess)
    return Refuse(comm->async_error, "ncclCommDestroy: rank " + std::to_string(comm->rank) +
                                         "'s collective failed, which a card would wait for forever; "
                                         "use ncclCommAbort");
  comm->state = ncclComm::State::kDestroyed;
  return ncclSuccess;
}

ncclResult_t ncclCommAbort(ncclComm_t comm) {
  if (const std::string why = Unusable(comm); !why.empty()) return Refuse(ncclInvalidArgument, "ncclCommAbort: " + why);
  comm->state = ncclComm::State::kAborted;  // its pending collectives move nothing
  return ncclSuccess;
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* async_error) {
  if (comm == nullptr || !Known(comm) || async_error == nullptr) return ncclInvalidArgument;
  *async_error = comm->async_error;
  return ncclSuccess;
}

ncclResult_t ncclCommCount(const ncclComm_t comm, int* count) {
  if (!Unusable(comm).empty() || count == nullptr) return ncclInvalidArgument;
  *count = int(comm->clique->ranks.size());
  return ncclSuccess;
}

ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int* device) {
  if (!Unusable(comm).empty() || device == nullptr) return ncclInvalidArgument;
  *device = comm->device;
  return ncclSuccess;
}

ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank) {
  if (!Unusable(comm).empty() || rank == nullptr) return ncclInvalidArgument;
  *rank = comm->rank;
  return ncclSuccess;
}

ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t* op, void* scalar, ncclDataType_t datatype,
                                      ncclScalarResidence_t residence, ncclComm_t comm) {
  if (const std::string why = Unusable(comm); !why.empty())
    return Refuse(ncclInvalidArgument, "ncclRedOpCreatePreMulSum: " + why);
  const size_t size = SizeOf(datatype);
  if (op == nullptr || scalar == nullptr || size == 0)
    return Refuse(ncclInvalidArgument, "ncclRedOpCreatePreMulSum: no op, no scalar, or not float or double");
  auto p = std::make_shared<PreMulSum>();
  p->datatype = datatype;
  p->residence = residence;
  if (residence == ncclScalarHostImmediate) {
    p->value = datatype == ncclFloat64 ? *static_cast<const double*>(scalar) : *static_cast<const float*>(scalar);
  } else if (residence == ncclScalarDevice) {
    if (!Contains(scalar, size, Space::kDevice, comm->device))
      return Refuse(ncclInvalidArgument, "ncclRedOpCreatePreMulSum: the scalar " + Describe(scalar) +
                                             " is not in the memory of GPU " + std::to_string(comm->device));
    p->device_scalar = scalar;
  } else {
    return Refuse(ncclInvalidArgument, "ncclRedOpCreatePreMulSum: no residence " + std::to_string(residence));
  }
  comm->ops.push_back(std::move(p));
  *op = ncclRedOp_t(int(ncclNumOps) + int(comm->ops.size()) - 1);
  return ncclSuccess;
}

ncclResult_t ncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm) {
  if (const std::string why = Unusable(comm); !why.empty()) return Refuse(ncclInvalidArgument, "ncclRedOpDestroy: " + why);
  const size_t i = size_t(op) - size_t(ncclNumOps);
  if (op < ncclNumOps || i >= comm->ops.size() || comm->ops[i] == nullptr)
    return Refuse(ncclInvalidArgument, "ncclRedOpDestroy: op " + std::to_string(op) + " is not this communicator's");
  comm->ops[i] = nullptr;
  return ncclSuccess;
}

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

ncclResult_t ncclGroupStart() {
  ++ThisThreadsGroup().depth;
  return ncclSuccess;
}

ncclResult_t ncclGroupEnd() {
  Group& group = ThisThreadsGroup();
  if (group.depth == 0) return Refuse(ncclInvalidUsage, "ncclGroupEnd without ncclGroupStart");
  if (--group.depth > 0) return ncclSuccess;
  const std::vector<Init> inits = std::move(group.inits);
  const std::vector<Call> calls = std::move(group.calls);
  const ncclResult_t error = group.error;
  group.inits.clear();
  group.calls.clear();
  group.error = ncclSuccess;
  if (error != ncclSuccess) return error;  // a refused call drops its whole group, as in NCCL
  if (!inits.empty())
    if (const ncclResult_t result = InitRanks(inits); result != ncclSuccess) return result;
  return Submit(calls);
}
