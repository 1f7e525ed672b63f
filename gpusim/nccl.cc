// NCCL over the simulated GPUs (include/nccl.h). The communicators of one clique come from
// ncclCommInitAll, for one host thread driving every GPU; so a collective over several ranks must
// have every rank's call inside one group (between ncclGroupStart and ncclGroupEnd), where a card
// would hang on the first rank's call otherwise. Calls in a group are checked at once and
// deferred; ncclGroupEnd matches them across the ranks (the j-th call of each rank of a clique
// forms the j-th collective) and enqueues on each rank's stream one operation, which is also a
// launch (counted, and able to fault, as gpusim/faults.h says). The first of a collective's
// operations to run waits for every rank's stream to reach its own (all inputs ready), then moves
// the data for all ranks; the others find it done. Traffic is counted as NCCL's ring moves it:
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

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
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

struct Clique {
  std::vector<ncclComm*> ranks;
};

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
  Kind kind;
  ncclComm* comm;
  const void* send;
  void* recv;
  size_t count;
  ncclDataType_t datatype;
  ncclRedOp_t op;
  CUstream_st* stream;
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
    if (StickyError(c->device) != cudaSuccess) return c->device;
  return -1;
}

struct Group {
  int depth = 0;
  std::vector<Call> calls;
  ncclResult_t error = ncclSuccess;  // the first refused call's, returned by ncclGroupEnd
};

Group& ThisThreadsGroup() {
  static thread_local Group group;
  return group;
}

// One collective across the ranks of a clique, as enqueued.
struct Collective {
  std::vector<Call> calls;  // by rank
  std::vector<uint64_t> positions;  // each rank's stream position before its operation
  std::vector<cudaError_t> injected;
  std::mutex mutex;
  bool done = false;
  double end = 0;  // virtual time at which the data has moved

  void Run(size_t rank);
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
    for (const Call& c : calls) std::memcpy(c.recv, gathered.data(), gathered.size() * sizeof(T));
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

void Collective::Run(size_t rank) {
  // Every rank's inputs: its stream up to its own operation. Not under the mutex: another host
  // thread running a peer's stream may be on its way to this collective.
  for (size_t r = 0; r < calls.size(); ++r)
    if (r != rank) Flush(calls[r].stream, positions[r]);
  std::lock_guard<std::mutex> lock(mutex);
  if (done) {
    After(end);  // a later rank's operation ends when the data has moved, as the first's did
    return;
  }
  done = true;
  const char* name = KindName(calls[0].kind);
  for (size_t r = 0; r < calls.size(); ++r)
    if (injected[r] != cudaSuccess)
      LoseContext(calls[r].comm->device, injected[r], std::string("injected fault in ") + name);
  bool failed = false;
  for (const Call& c : calls) failed = failed || StickyError(c.comm->device) != cudaSuccess ||
                                       c.comm->state == ncclComm::State::kAborted;
  if (failed) {
    for (const Call& c : calls) {
      ncclResult_t none = ncclSuccess;
      c.comm->async_error.compare_exchange_strong(
          none, StickyError(c.comm->device) != cudaSuccess ? ncclUnhandledCudaError : ncclRemoteError);
    }
    std::fprintf(stderr, "gpusim: %s: a rank's GPU was lost or its communicator aborted; nothing moved\n", name);
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

// Enqueues one collective, its calls by rank, on each rank's stream.
void Enqueue(std::vector<Call> calls) {
  CountRingTraffic(calls);
  auto collective = std::make_shared<Collective>();
  collective->calls = std::move(calls);
  for (const Call& c : collective->calls) {
    std::lock_guard<std::mutex> lock(c.stream->queue);
    collective->positions.push_back(c.stream->submitted);
  }
  for (const Call& c : collective->calls) collective->injected.push_back(CountLaunch(c.comm->device));
  for (size_t r = 0; r < collective->calls.size(); ++r) {
    Call& c = collective->calls[r];
    c.comm->last_stream = c.stream;
    c.comm->last_position = collective->positions[r] + 1;
    gpusim::detail::Enqueue(c.stream, [collective, r] { collective->Run(r); });
  }
}

// Matches a group's calls into collectives and enqueues them.
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
  std::vector<std::vector<Call>> collectives;
  for (const auto& [clique, by_rank] : cliques) {
    for (size_t r = 1; r < by_rank.size(); ++r)
      if (by_rank[r].size() != by_rank[0].size())
        return Refuse(ncclInvalidUsage, "ncclGroupEnd: rank 0 of a clique makes " + std::to_string(by_rank[0].size()) +
                                            " collective calls and rank " + std::to_string(r) + " " +
                                            std::to_string(by_rank[r].size()) +
                                            "; one host thread must call every rank within one group, or a card hangs");
    if (const int lost = LostDevice(*clique); lost >= 0)
      return Refuse(ncclUnhandledCudaError, "ncclGroupEnd: GPU " + std::to_string(lost) + " of the clique is lost");
    for (size_t j = 0; j < by_rank[0].size(); ++j) {
      std::vector<Call> collective;
      for (const std::vector<Call>& rank_calls : by_rank) collective.push_back(rank_calls[j]);
      const Call& a = collective[0];
      for (const Call& b : collective) {
        const bool same_op = a.kind == Kind::kAllGather ||
                             (a.op >= ncclNumOps ? b.op >= ncclNumOps : a.op == b.op);
        if (b.kind != a.kind || b.count != a.count || b.datatype != a.datatype || !same_op)
          return Refuse(ncclInvalidArgument, "ncclGroupEnd: collective " + std::to_string(j) + ": rank " +
                                                 std::to_string(b.comm->rank) + " calls " + KindName(b.kind) + " of " +
                                                 std::to_string(b.count) + " elements, rank 0 " + KindName(a.kind) +
                                                 " of " + std::to_string(a.count) + " (or another type or op)");
      }
      collectives.push_back(std::move(collective));
    }
  }
  for (std::vector<Call>& c : collectives) Enqueue(std::move(c));
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
    if (call.comm->clique->ranks.size() > 1)
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
  const std::vector<Call> calls = std::move(group.calls);
  const ncclResult_t error = group.error;
  group.calls.clear();
  group.error = ncclSuccess;
  if (error != ncclSuccess) return error;  // a refused call drops its whole group, as in NCCL
  return Submit(calls);
}
