// NCCL over the simulated GPUs (include/nccl.h): the communicators. Those of one clique come from
// ncclCommInitAll, for one host thread driving every GPU, or from ncclCommInitRank with a unique
// id (ncclGetUniqueId), one call per rank, from as many host threads of this process as play
// ranks (a thread may init several ranks inside one group); the calls wait for every rank of the
// clique. The ranks of a clique must live in this process: communicators across processes are not
// simulated (ncclCommInitRank waits, then times out).
//
// A communicator whose collective failed (a lost GPU, a peer that never called: nccl_collectives.cc)
// can only be aborted: ncclCommDestroy, which on a card waits for the collective, refuses.
#include "gpusim/nccl_communicators.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>

#include "gpusim/device_memory.h"
#include "gpusim/devices.h"
#include "gpusim/nccl_open_group.h"
#include "gpusim/streams.h"

using namespace gpusim;
using namespace gpusim::detail;
using namespace gpusim::nccl;

namespace gpusim::nccl {
namespace {

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

}  // namespace

// How long a rank waits for the others (NCCL would wait forever).
std::chrono::milliseconds PeerTimeout() {
  const char* text = std::getenv("XMLT_SIM_NCCL_TIMEOUT");
  const double seconds = text != nullptr && std::atof(text) > 0 ? std::atof(text) : 60.0;
  return std::chrono::milliseconds(int64_t(seconds * 1000));
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

}  // namespace gpusim::nccl

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

namespace gpusim::nccl {
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

}  // namespace

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

}  // namespace gpusim::nccl

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
  if (const std::string why = Unusable(comm); !why.empty())
    return Refuse(ncclInvalidArgument, "ncclRedOpDestroy: " + why);
  const size_t i = size_t(op) - size_t(ncclNumOps);
  if (op < ncclNumOps || i >= comm->ops.size() || comm->ops[i] == nullptr)
    return Refuse(ncclInvalidArgument, "ncclRedOpDestroy: op " + std::to_string(op) + " is not this communicator's");
  comm->ops[i] = nullptr;
  return ncclSuccess;
}
