// Memory planning; see memory_plan.h.
#include "scheduler/memory_plan.h"

#include "scheduler/device_pool.h"

#include <algorithm>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <utility>

#include "engine/device_query.h"
#include "engine/device_spec.h"
#include "engine/evaluator.h"
#include "kernels/cpu/output_layer.h"
#include "kernels/ranker/linear_ranker.h"
#include "kernels/ranker/shortlist_ranker.h"
#include "merge/rank_sum_collective.h"
#include "ranks/rank_group.h"

namespace xmlt::scheduler {
namespace {

std::string MiB(uint64_t bytes) { return std::to_string((bytes + (1 << 20) - 1) >> 20) + " MiB"; }

// Saturating arithmetic: an absurd shape must give an absurd number, not a wrapped small one.
uint64_t Mul(uint64_t a, uint64_t b) { return (a != 0 && b > UINT64_MAX / a) ? UINT64_MAX : a * b; }
uint64_t Add(uint64_t a, uint64_t b) { return b > UINT64_MAX - a ? UINT64_MAX : a + b; }

}  // namespace

uint64_t MemoryPlan::training_total() const {
  uint64_t total = Add(Add(Add(Add(global_model, previous_model), rollback), scheduler), checkpoint);
  for (const DeviceMemory& d : devices)
    total = Add(Add(total, d.gpu ? d.host_mirror : d.total()), d.evaluation);
  return total;
}

uint64_t MemoryPlan::host_total() const {
  // By folds, the run's trained MLP is kept while each fold trains, and beside the fold's ranker.
  const uint64_t kept = ranker.by_folds ? ranker.mlp : 0;
  return std::max({training_total(), Add(training_total(), kept), Add(ranker.total(), kept)});
}

uint64_t RankerMemory::total() const {
  if (mlp == 0) return 0;
  const uint64_t build_peak = Add(model, build), solve_peak = Add(Add(model, dense), solver),
                 choice_peak = Add(Add(Add(model, dense), holdout), forward);
  return Add(Add(mlp, shortlists), std::max({forward, build_peak, solve_peak, choice_peak}));
}

RankerMemory PlanRankerMemory(const kernels::ModelShape& shape, const RankerMemoryShape& r) {
  const uint64_t features = shape.num_features, labels = shape.num_labels;
  const uint64_t shortlist = std::min<uint64_t>(r.shortlist, labels);
  RankerMemory m;
  m.pairs = r.pairs;
  m.mlp = Mul(shape.NumParameters(), sizeof(float));
  // The held-out rows' choice scores chunks of whole logits; the shortlists' fused top-k less.
  m.forward = std::max(engine::EvaluationWorkspaceBytes(shape),
                       engine::TopLabelsWorkspaceBytes(shape, uint32_t(shortlist), std::max<uint64_t>(r.threads, 1)));
  m.shortlists = Mul(Mul(r.rows, shortlist), sizeof(uint32_t));
  // kernels::LinearRanker: per pair a label and a weight; per feature an offset; per label a bias.
  m.model = Add(Add(Mul(r.pairs, sizeof(uint32_t) + sizeof(float)), Mul(features + 1, sizeof(uint64_t))),
                Mul(labels, sizeof(float)));
  // AddDenseLookups: a row of labels for each feature of at least kMinDenseLookupLabels pairs,
  // while they fit kRankerDenseLookupBytes, and a row index per feature.
  const uint64_t row_bytes = Mul(labels, sizeof(uint32_t));
  const uint64_t dense_rows = std::min({row_bytes == 0 ? 0 : kernels::kRankerDenseLookupBytes / row_bytes, features,
                                        r.pairs / kernels::kMinDenseLookupLabels});
  m.dense = dense_rows == 0 ? 0 : Add(Mul(dense_rows, row_bytes), Mul(features, sizeof(int32_t)));
  // BuildLinearRanker: the rows of each feature (an offset per feature, a row per entry), the
  // next free place per feature and the last feature per label.
  m.build = Add(Add(Mul(features + 1, 2 * sizeof(uint64_t)), Mul(r.feature_nnz, sizeof(uint64_t))),
                Mul(labels, sizeof(uint64_t)));
  // TrainRankerDual: per instance (a row's label or shortlisted label) a row and a sign; per label
  // an offset, the next free place and its passes; per thread a label's weights and mask by
  // feature, its features and pairs, and per instance of the label (at most a row each) its dual
  // variable, diagonal and place in the order.
  const uint64_t instances = Add(r.label_nnz, Mul(r.rows, shortlist));
  const uint64_t per_thread = Add(Mul(features, 2 * sizeof(float) + sizeof(uint64_t) + sizeof(uint32_t)),
                                  Mul(r.rows, 2 * sizeof(double) + sizeof(uint32_t)));
  m.solver = Add(Add(Mul(instances, sizeof(uint32_t) + sizeof(uint8_t)),
                     Mul(labels + 1, 2 * sizeof(uint64_t) + sizeof(uint32_t))),
                 Mul(std::max<uint64_t>(r.threads, 1), per_thread));
  // The choice: the MLP's shortlist of each held-out row, its probabilities and the linear scores,
  // and each thread's label slots.
  m.holdout = Add(Mul(Mul(r.holdout_rows, shortlist), sizeof(uint32_t) + 2 * sizeof(float)),
                  Mul(std::max<uint64_t>(r.threads, 1), Mul(labels, sizeof(int32_t))));
  return m;
}

std::string MemoryPlan::ToString() const {
  std::ostringstream out;
  for (const DeviceMemory& d : devices) {
    out << "  " << d.id << ": " << MiB(d.total()) << " (parameters " << MiB(d.params) << ", momentum "
        << MiB(d.momentum) << ", activations " << MiB(d.workspace) << ", batch " << MiB(d.batch) << ")";
    if (d.merge > 0) out << ", with the GPU's merge buffers (" << MiB(d.merge) << ")";
    if (d.gpu) out << " on the GPU, plus a host mirror of " << MiB(d.host_mirror);
    out << "; evaluating its share of the test set: " << MiB(d.evaluation) << " of host memory";
    out << "\n";
  }
  out << "  the global model w: " << MiB(global_model) << "; its previous value w_p: "
      << (previous_model > 0 ? MiB(previous_model) : std::string("none (one CPU device: its merge is a copy)"))
      << "; the trusted and the latest state's w, for rollbacks: " << MiB(rollback)
      << (rollback > 0 && rollback == global_model ? " (one CPU device: the latest lends w)" : "") << "\n"
      << "  scheduler rows (and cross-rank sum scratch): " << MiB(scheduler) << "\n";
  if (checkpoint > 0)
    out << "  checkpoint copies, while one is written or read (a GPU's chunk of its optimizer state, the devices' "
           "extra state; w, w_p, the replicas and their optimizer state go from where they are, and come back "
           "from the file's mapping): "
        << MiB(checkpoint) << "\n";
  if (ranker.total() > 0) {
    out << "  host memory while training: " << MiB(training_total()) << "\n"
        << "  the ranker's stage after training: " << MiB(ranker.total()) << " at its peak (" << ranker.pairs
        << " (feature, label) pairs at most: " << MiB(ranker.model) << ", dense lookups " << MiB(ranker.dense)
        << ", shortlists " << MiB(ranker.shortlists) << ", solver " << MiB(ranker.solver) << ", held-out rows "
        << MiB(ranker.holdout) << ", the MLP " << MiB(ranker.mlp) << ")"
        << (ranker.by_folds ? "; by folds, each fold's training and ranker beside the trained MLP" : "") << "\n";
  }
  out << "  host memory in all: " << MiB(host_total());
  return out.str();
}

MemoryPlan PlanMemory(const kernels::ModelShape& shape, const TrainOptions& options, const SchedulerOptions& scheduling,
                      const engine::DeviceLimits& limits, uint64_t training_rows, bool checkpoints, int rank) {
  const bool across_ranks = RankCount(scheduling) > 1;
  const uint64_t params = Mul(shape.NumParameters(), sizeof(float));
  uint64_t hidden_sum = 0, widest = 0;
  for (uint32_t h : shape.hidden) hidden_sum += h, widest = std::max<uint64_t>(widest, h);
  const uint64_t rows = limits.max_rows;
  DeviceMemory device;
  device.params = params;
  // The first layer's Adagrad keeps its squares in the momentum buffer, so it needs one too.
  device.momentum = options.local_momentum > 0 || options.input_lr > 0 ? params : 0;
  // The rows x labels logits: the bf16 step keeps them block by block in its output workspace.
  const uint64_t logits_per_row = options.math == kernels::OutputMath::kFp32 ? shape.num_labels : 0;
  // Per feature entry: its row, its sort key (feature, entry) and a group start; per label entry:
  // its row and column in the output layer's per-block target lists.
  device.workspace = Add(Add(Mul(Mul(rows, Add(Add(hidden_sum, logits_per_row), 2 * widest)), sizeof(float)),
                             Mul(limits.max_feature_nnz, 2 * sizeof(uint32_t) + sizeof(uint64_t))),
                         Mul(limits.max_label_nnz, 2 * sizeof(uint32_t)));
  device.workspace = Add(device.workspace, kernels::cpu::OutputLayerWorkspaceBytes(
                                               shape.num_labels, shape.hidden.back(), uint32_t(rows), sizeof(float),
                                               options.math));
  device.evaluation = engine::EvaluationWorkspaceBytes(shape);
  device.batch = Add(Add(Mul(rows + 1, 2 * sizeof(uint64_t)), Mul(limits.max_feature_nnz, 2 * sizeof(uint32_t))),
                     Mul(limits.max_label_nnz, sizeof(uint32_t)));

  MemoryPlan plan;
  const std::vector<engine::DeviceSpec>& specs = scheduling.devices;
  for (const engine::DeviceSpec& spec : specs) {
    const size_t index = plan.devices.size();
    DeviceMemory d = device;
    d.id = spec.id;
    d.gpu = spec.kind == engine::DeviceKind::kCuda;
    d.ordinal = spec.ordinal;
    // A GPU's host mirror of its replica: in bf16 where its weights are (engine/cuda_device.cc).
    const uint64_t gpu_mirror = options.bf16_weights ? Mul(shape.NumParameters(), sizeof(uint16_t)) : params;
    d.host_mirror = d.gpu ? gpu_mirror : 0;
    if (!d.gpu && !scheduling.sampled_output.enabled && options.bf16_optimizer_state && d.momentum > 0) {
      // Two bytes a value, and each dense tensor but the output layer's widened for its product in
      // turn: the first layer's bias, the hidden layers' weights and biases.
      uint64_t widest_dense = shape.hidden[0];
      for (size_t l = 1; l + 1 < shape.num_layers(); ++l)
        widest_dense = std::max<uint64_t>(widest_dense, Mul(shape.LayerInputs(l), shape.LayerOutputs(l)));
      d.momentum = Add(Mul(shape.NumParameters(), sizeof(uint16_t)), Mul(widest_dense, sizeof(float)));
    }
    if (!d.gpu && !scheduling.sampled_output.enabled && options.bf16_weights) {
      // Two bytes a parameter; each step widens the small tensors (the biases, the hidden layers'
      // weights) for itself, and the merge and a checkpoint read the weights widened a piece of
      // 1 Mi values at a time (engine/cpu_replica.h).
      uint64_t small = 0;
      for (size_t l = 0; l < shape.num_layers(); ++l) {
        small = Add(small, shape.LayerOutputs(l));
        if (l != 0 && l + 1 != shape.num_layers()) small = Add(small, Mul(shape.LayerInputs(l), shape.LayerOutputs(l)));
      }
      d.params = Add(Mul(shape.NumParameters(), sizeof(uint16_t)),
                     Mul(Add(small, std::min<uint64_t>(shape.NumParameters(), uint64_t(1) << 20)), sizeof(float)));
    }
    if (!d.gpu && scheduling.sampled_output.enabled) {
      // SLIDE's device keeps no logits: its LSH tables, and each thread's label stamps and scratch.
      const uint64_t threads = std::max(1u, std::thread::hardware_concurrency());
      d.workspace = Add(scheduling.sampled_output.TableBytes(shape.num_labels),
                        Mul(threads, Mul(shape.num_labels, 2 * sizeof(uint32_t))));
      // Plain SGD whatever the local momentum of the run's other devices: its one optimizer state is
      // the first layer's Adagrad squares, one per first-layer weight.
      d.momentum = options.input_lr > 0 ? Mul(Mul(shape.num_features, shape.hidden[0]), sizeof(float)) : 0;
    }
    if (d.gpu) {
      // A CUDA replica allocates its velocity whatever the local momentum, in bf16 with
      // --optimizer-state bf16, and its weights in bf16 with --weights bf16. Where the GPU is here,
      // the CUDA backend says what it allocates, to the byte (CUB's scratch, the cuBLAS workspace
      // and the block bf16 tensors pass through included), and each allocation may take up to a
      // 2 MiB page more. Its context is not counted: the free memory it is checked against is read
      // after the context exists.
      d.momentum = options.bf16_optimizer_state ? Mul(shape.NumParameters(), sizeof(uint16_t)) : params;
      if (options.bf16_weights) d.params = Mul(shape.NumParameters(), sizeof(uint16_t));
      const engine::GpuReplicaBytes gpu = engine::PlanGpuReplica(spec.ordinal, shape, limits,
                                                                 options.bf16_optimizer_state, options.bf16_weights);
      if (gpu.params > 0) {
        d.params = gpu.params;
        d.momentum = gpu.momentum;
        d.workspace = Add(gpu.workspace, Mul(gpu.allocations, uint64_t{2} << 20));
        d.batch = gpu.batch;
        d.host_mirror = Add(gpu_mirror, gpu.pinned_host);
      }
    }
    // Another rank's device is here at most a host mirror of its replica (bf16 where the run's
    // weights are) and momentum: held by merges that read every replica (Adasum, CROSSBOW), and on
    // rank 0 while it writes a checkpoint; hierarchical merges never make it, and a resume restores
    // only local devices.
    if (across_ranks && scheduling.device_rank.at(index) != rank) {
      d = DeviceMemory{};
      d.id = spec.id;
      const uint64_t mirror = options.bf16_weights ? Mul(shape.NumParameters(), sizeof(uint16_t)) : params;
      if ((checkpoints && rank == 0) || !MergesByWeightedSum(scheduling))
        d.host_mirror = Add(mirror, device.momentum);
    }
    plan.devices.push_back(d);
  }
  // Merges on the GPUs hold buffers on each GPU (merge/gpu/), counted on its first replica. With
  // n GPUs and a model of M bytes: the ring (or NCCL) an accumulator (M), its receive chunks
  // (about M / n) and its share of w and w_p (2 M / n); the elastic force also the pulls and the
  // center's two copies (3 M); Adasum w and w_p whole and a receive buffer (3 M).
  if (MergesOnGpus(scheduling)) {
    // n counts every rank's GPUs (NCCL's ranks across ranks); the buffers are this rank's only.
    std::vector<std::pair<int, int>> all_gpus;  // (rank, ordinal)
    std::vector<int> gpus;
    for (size_t i = 0; i < specs.size(); ++i) {
      const int owner = scheduling.device_rank.empty() ? 0 : scheduling.device_rank[i];
      const std::pair<int, int> key{owner, specs[i].ordinal};
      if (std::find(all_gpus.begin(), all_gpus.end(), key) == all_gpus.end()) all_gpus.push_back(key);
      const bool local = !across_ranks || owner == rank;
      if (local && std::find(gpus.begin(), gpus.end(), specs[i].ordinal) == gpus.end()) gpus.push_back(specs[i].ordinal);
    }
    const uint64_t n = all_gpus.size();
    const bool elastic = MergesByElasticForce(scheduling);
    uint64_t merge = Add(params, Mul(params, 3) / n);
    if (elastic) merge = Add(Mul(params, 4), params / n);
    if (scheduling.merge == SchedulerOptions::Merge::kAdasum) merge = Mul(params, 3);
    for (const int gpu : gpus)
      for (DeviceMemory& d : plan.devices)
        if (d.gpu && d.ordinal == gpu) {
          d.merge = merge;
          break;
        }
  }
  // The loop keeps w, w_prev (not for a one-replica copy on the host: KeepsPreviousModel), and the
  // trusted and the latest state's w for rollbacks (the latest lends w where the merge copies one
  // CPU replica: RollbackLendsGlobalModel); the model it was given is released once copied into
  // them (evaluations borrow w).
  plan.global_model = params;
  plan.previous_model = KeepsPreviousModel(scheduling) ? params : 0;
  plan.rollback = RollbackLendsGlobalModel(scheduling) ? params : Mul(params, 2);
  // The sampler's row order, once in the sampler and once in each saved state.
  const uint64_t arena_rows = DevicePool::ArenaRows(options.mega_batch, options.batch, specs.size());
  plan.scheduler = Mul(Add(arena_rows, Mul(training_rows, 3)), sizeof(uint64_t));
  // Across ranks, the cross-rank sum's receive buffer (a chunk of the model at a time), and with
  // bf16 weights the rank's fp32 partial sums, a chunk at a time too (merge/rank_sum_collective.h).
  if (across_ranks)
    plan.scheduler = Add(plan.scheduler,
                         Mul(std::min<uint64_t>(shape.NumParameters(), ranks::kSumChunk), sizeof(float)));
  if (across_ranks && options.bf16_weights && MergesByWeightedSum(scheduling))
    plan.scheduler = Add(plan.scheduler,
                         Mul(std::min<uint64_t>(shape.NumParameters(), merge::kRankSumBf16Chunk), sizeof(float)));
  // A checkpoint writes w, w_p and the replicas from where they are and streams each device's
  // optimizer state from where it lives; a resume maps the file (page cache, which the kernel can
  // drop: not counted) and copies from the mapping straight to where each part goes. What it holds
  // besides: a GPU's page-locked chunk of its optimizer state (engine::kOptimizerStateChunkBytes at
  // most, one device at a time, either way); each device's extra state (the dropout masks' step
  // count; a sampled device's LSH tables: a mark per label and a key per label and table), every
  // device's copied out until the file is written, one device's twice while it is read back; and
  // across ranks, while the replicas are gathered to rank 0, one device's state at a time.
  if (checkpoints) {
    const bool keeps_state = options.local_momentum > 0 || options.input_lr > 0;
    const uint64_t squares = shape.hidden.empty() ? 0 : Mul(Mul(shape.num_features, shape.hidden[0]), sizeof(float));
    uint64_t chunk = 0, extras = 0, largest_extra = 0, largest_state = 0;
    for (size_t i = 0; i < specs.size(); ++i) {
      const bool gpu = specs[i].kind == engine::DeviceKind::kCuda;
      const bool sampled = !gpu && scheduling.sampled_output.enabled;
      const uint64_t state = sampled ? (options.input_lr > 0 ? squares : 0) : (keeps_state ? params : 0);
      const bool bf16_state = !sampled && options.bf16_optimizer_state && keeps_state;
      const bool bf16_weights = !gpu && !sampled && options.bf16_weights;
      uint64_t extra = options.dropout > 0 || bf16_state || bf16_weights ? sizeof(uint64_t) : 0;
      if (sampled)
        extra = Add(extra, Add(sizeof(uint64_t) + shape.num_labels,
                               Mul(Mul(scheduling.sampled_output.l, shape.num_labels), sizeof(uint32_t))));
      const bool local = !across_ranks || scheduling.device_rank.at(i) == rank;
      // A GPU's page-locked chunk of floats, and a bf16 state's bits for it (half as many bytes).
      if (gpu && local)
        chunk = std::max<uint64_t>(
            chunk, std::min<uint64_t>(state, engine::kOptimizerStateChunkBytes) / 2 * (bf16_state ? 3 : 2));
      // A CPU's bf16 state is widened a piece of 1 Mi values at a time (engine/cpu_replica.h).
      if (!gpu && bf16_state && local) chunk = std::max<uint64_t>(chunk, std::min<uint64_t>(state, uint64_t(4) << 20));
      extras = Add(extras, extra);
      largest_extra = std::max(largest_extra, extra);
      largest_state = std::max(largest_state, state);
    }
    const uint64_t gather = across_ranks ? Add(largest_state, chunk) : 0;
    plan.checkpoint = std::max({Add(chunk, extras), Mul(largest_extra, 2), gather});
  }
  return plan;
}

void CheckMemoryFits(const MemoryPlan& plan, uint64_t host_available, const std::vector<uint64_t>& gpu_free) {
  std::string problem;
  if (host_available > 0 && plan.host_total() > host_available)
    problem = "the run needs " + MiB(plan.host_total()) + " of host memory; " + MiB(host_available) + " are available";
  std::vector<uint64_t> per_gpu(gpu_free.size(), 0);
  for (const DeviceMemory& d : plan.devices)
    if (d.gpu && size_t(d.ordinal) < per_gpu.size()) per_gpu[d.ordinal] = Add(per_gpu[d.ordinal], d.total());
  for (size_t g = 0; g < per_gpu.size(); ++g) {
    if (gpu_free[g] > 0 && per_gpu[g] > gpu_free[g])
      problem += std::string(problem.empty() ? "" : "; ") + "the replicas on cuda:" + std::to_string(g) + " need " + MiB(per_gpu[g]) +
                 "; " + MiB(gpu_free[g]) + " are free";
  }
  if (!problem.empty())
    throw std::runtime_error("not enough memory: " + problem +
                             " (a smaller hidden layer or batch, or fewer replicas per device, would need less):\n" + plan.ToString());
}

}  // namespace xmlt::scheduler
