// Projected merge times of replicas the size of the Amazon-670K model, one per simulated GPU, on
// the simulator's virtual clock (gpusim/timing.h): projections for a stated link and memory, not
// measurements. Every schedule really runs here, on the simulator's public API, and its result is
// checked (each replica starts at its GPU's ordinal + 1, so the sum is exact in floats; the
// momentum's gamma is 0, which leaves the sum and takes as long as any other):
//   ring        our RingAllReduce (merge/gpu/ring_all_reduce.h), local weighted sum and the
//               copies back into the replicas included, with 1 and with N partitions
//   ring_momentum  the same with the global momentum, as training merges (N partitions, the
//               rule applied by each chunk's owner between the reduce-scatter and the all-gather)
//   nccl_all_reduce[_momentum]  our NcclAllReduce (merge/gpu/nccl_all_reduce.h) over the
//               simulator's NCCL, which times a collective as NCCL's ring moves it (gpusim/nccl_ring_cost.cc);
//               with the momentum a reduce-scatter, the rule, an all-gather
//   adasum      our DeviceAdasum (merge/gpu/device_adasum.h): deltas, a pairwise tree of Adasum
//               combinations per tensor of the model, the result down a binomial tree, the update
//   tree        a binary tree (GPU 0 the root, heap order): each node adds its children's chunks
//               into its own, then the sum comes back down; pipelined in chunks, a node copying
//               one chunk while it adds the previous one
//   nccl_style  NCCL's pipelined ring: several channels, each an independent ring over its share
//               of the model, each step's chunk cut into small slices that follow one another
//               around the ring, so that every link stays busy after the first slice
//               (the reduction is a separate add after each slice's copy, where NCCL fuses it
//               into the kernel that moves the data)
// and, from formulas: the copy floor, 2(N-1)/N of the model through each GPU's port, and NCCL's
// ring estimate, the floor plus 2(N-1) link latencies (nccl-tests' busBW = algBW * 2(N-1)/N with
// busBW at the link's bandwidth). Prints CSV on stdout, progress on stderr.
// The replicas and the waits the schedules share are in merge_projection_replicas.h, the tree and
// the NCCL-style ring in merge_projection_reference_schedules.h.
// Usage: XMLT_SIM_GPUS=N merge_projection [--floats COUNT] [--links pcie4,nvlink4]
//        [--tree-chunks 64] [--channels 8] [--slice-bytes 524288] [--only SCHEDULE_PREFIX]
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "benchmarks/merge_projection_reference_schedules.h"
#include "benchmarks/merge_projection_replicas.h"
#include "gpusim/timing.h"
#include "kernels/cuda/device_buffer.h"
#include "kernels/model.h"
#include "merge/adasum.h"
#include "merge/gpu/device_adasum.h"
#include "merge/gpu/nccl_all_reduce.h"
#include "merge/gpu/ring_all_reduce.h"

namespace {

using namespace xmlt::kernels::cuda;
using namespace xmlt::merge::gpu;

using namespace merge_projection;

struct Options {
  size_t floats = 0;  // 0: the Amazon-670K model's parameters
  std::vector<std::string> links = {"pcie4", "nvlink4"};
  size_t tree_chunks = 64;
  size_t channels = 8;
  size_t slice_bytes = size_t{512} << 10;  // NCCL's ring step with its default 4 MiB buffer in 8 slots
  std::string only;  // run only the schedules whose names start with this
};

// The sum 1 + 2 + ... + N that the summing schedules leave.
float SumOf(int gpus) { return float(gpus * (gpus + 1) / 2); }

// What Adasum makes of the deltas 1, 2, ..., N (constant vectors, w = 0): per tensor the same
// scalar, the tree's combinations of the values (the vectors' lengths cancel out).
double AdasumOfOrdinals(int gpus) {
  std::vector<double> v;
  for (int g = 0; g < gpus; ++g) v.push_back(g + 1);
  for (const auto& level : xmlt::merge::PairwiseTreeLevels(v.size()))
    for (const xmlt::merge::TreePair& p : level) {
      const double a = v[p.left], b = v[p.right];
      v[p.left] = (1 - a * b / (2 * a * a)) * a + (1 - a * b / (2 * b * b)) * b;
    }
  return v[0];
}

// The global momentum (heavy ball) with gamma 0: the rule's reads and writes, the sum's values.
const DeviceMomentum kMomentum{0.0, false};

// A device collective's merge, with or without the global momentum (w = w_p = 0, set before the
// clock starts, as a run sets them once).
double Collective(DeviceCollective& collective, Replicas& r, bool momentum) {
  const std::vector<double> weights(size_t(r.gpus()), 1.0);
  if (momentum) {
    const std::vector<float> zeros(r.count, 0.0f);
    collective.SetGlobalModel(zeros.data(), zeros.data());
  }
  gpusim::ResetProjection();
  if (momentum) {
    collective.WeightedAllReduce(weights, kMomentum);
  } else {
    collective.WeightedAllReduce(weights);
  }
  return gpusim::ProjectedTime();
}

double OurRing(Replicas& r, size_t partitions, bool momentum = false) {
  RingAllReduce ring(r.View(), r.count, partitions);
  return Collective(ring, r, momentum);
}

double OurNccl(Replicas& r, bool momentum) {
  NcclAllReduce nccl(r.View(), r.count);
  return Collective(nccl, r, momentum);
}

// DeviceAdasum over the model's tensors (`tensors`: their offsets), w = w_p = 0.
double OurAdasum(Replicas& r, const std::vector<size_t>& tensors) {
  DeviceAdasum adasum(r.View(), r.count, tensors, kMomentum);
  const std::vector<float> zeros(r.count, 0.0f);
  adasum.SetGlobalModel(zeros.data(), zeros.data());
  gpusim::ResetProjection();
  adasum.Merge();
  return gpusim::ProjectedTime();
}

// Events in a flat table, created on their GPU.
std::vector<std::string> Split(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

Options Parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) throw std::invalid_argument("merge_projection: " + flag + " needs a value");
    const std::string value = argv[++i];
    if (flag == "--floats") {
      o.floats = std::stoull(value);
    } else if (flag == "--links") {
      o.links = Split(value);
    } else if (flag == "--tree-chunks") {
      o.tree_chunks = std::stoull(value);
    } else if (flag == "--channels") {
      o.channels = std::stoull(value);
    } else if (flag == "--only") {
      o.only = value;
    } else if (flag == "--slice-bytes") {
      o.slice_bytes = std::stoull(value);
    } else {
      throw std::invalid_argument("merge_projection: unknown flag " + flag);
    }
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) try {
  Options options = Parse(argc, argv);
  std::vector<size_t> tensors;  // Adasum's per-tensor offsets: the model's, or one tensor
  if (options.floats == 0) {
    // The Amazon-670K model at the trainer's default shape: 135,909 features, one hidden layer of
    // 128, 670,091 labels (data/synthetic_generator.cc, apps/train_flags.h).
    xmlt::kernels::ModelShape shape{135909, {128}, 670091};
    options.floats = shape.NumParameters();
    for (const xmlt::kernels::LayerView& layer : xmlt::kernels::LayoutOf(shape))
      for (const xmlt::kernels::TensorView& t : {layer.weight, layer.bias}) tensors.push_back(t.offset);
    std::sort(tensors.begin(), tensors.end());
  }
  int gpus = 0;
  XMLT_CUDA_CHECK(cudaGetDeviceCount(&gpus));
  const size_t n = size_t(gpus);
  const double bytes = double(options.floats) * sizeof(float);
  Replicas replicas(gpus, options.floats);
  std::printf("gpus,link,schedule,method,model_bytes,projected_ms,floor_ms,floor_fraction,"
              "max_send_busy_ms,max_memory_busy_ms,unhinted_kernels,sim_seconds\n");
  for (const std::string& link : options.links) {
    const gpusim::LinkModel model = gpusim::LinkModelNamed(link);
    gpusim::SetLinkModel(model);
    const double floor = 2.0 * double(n - 1) / double(n) * bytes / (model.peer_gbps * 1e9);
    // The busiest GPU's port and memory, and the kernels the clock could not time.
    struct Busy {
      double send = 0, memory = 0;
      unsigned long long unhinted = 0;
    };
    auto busiest = [&] {
      Busy b;
      for (int g = 0; g < gpus; ++g) {
        b.send = std::max(b.send, gpusim::BusyTimeOf(g).send);
        b.memory = std::max(b.memory, gpusim::BusyTimeOf(g).memory);
      }
      b.unhinted = gpusim::UnhintedKernels();
      return b;
    };
    auto row = [&](const std::string& schedule, const std::string& method, double seconds, Busy busy, double wall) {
      std::printf("%d,%s,%s,%s,%.0f,%.4f,%.4f,%.3f,%.4f,%.4f,%llu,%.1f\n", gpus, link.c_str(), schedule.c_str(),
                  method.c_str(), bytes, seconds * 1e3, floor * 1e3, floor / seconds, busy.send * 1e3,
                  busy.memory * 1e3, busy.unhinted, wall);
      std::fflush(stdout);
    };
    // `run` must leave every replica at `expected` (within `tolerance`).
    auto simulate = [&](const std::string& schedule, const std::function<double()>& run, float expected,
                        float tolerance) {
      if (schedule.rfind(options.only, 0) != 0) return;
      replicas.Fill();
      const auto start = std::chrono::steady_clock::now();
      const double seconds = run();
      const Busy busy = busiest();  // before the check's copies to the host
      const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (!replicas.HoldEverywhere(expected, tolerance))
        throw std::runtime_error("merge_projection: " + schedule + " left a wrong result");
      std::fprintf(stderr, "%d GPUs, %s, %s: %.3f ms projected, %.0f s to simulate\n", gpus, link.c_str(),
                   schedule.c_str(), seconds * 1e3, wall);
      row(schedule, "simulated", seconds, busy, wall);
    };
    row("copy_floor", "formula", floor, Busy{}, 0);
    row("nccl_formula", "formula", floor + double(2 * (n - 1)) * model.peer_latency_us * 1e-6, Busy{}, 0);
    const float sum = SumOf(gpus);
    simulate("ring_1_partition", [&] { return OurRing(replicas, 1); }, sum, 0);
    simulate("ring_" + std::to_string(n) + "_partitions", [&] { return OurRing(replicas, n); }, sum, 0);
    simulate("ring_momentum", [&] { return OurRing(replicas, n, true); }, sum, 0);
    simulate("nccl_all_reduce", [&] { return OurNccl(replicas, false); }, sum, 0);
    simulate("nccl_all_reduce_momentum", [&] { return OurNccl(replicas, true); }, sum, 0);
    // The coefficients are rounded to float on the GPU.
    const double adasum = AdasumOfOrdinals(gpus);
    simulate("adasum", [&] { return OurAdasum(replicas, tensors); }, float(adasum), float(1e-5 * adasum));
    simulate("tree", [&] { return Tree(replicas, options.tree_chunks); }, sum, 0);
    simulate("nccl_style", [&] {
      return NcclStyleRing(replicas, options.channels, std::max<size_t>(1, options.slice_bytes / sizeof(float)));
    }, sum, 0);
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "%s\n", e.what());
  return 1;
}
