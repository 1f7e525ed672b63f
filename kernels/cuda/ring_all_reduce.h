// A weighted all-reduce over replicas that live in GPU memory, on the GPUs: every replica ends
// holding sum_i weights[i] * replica_i. The replicas of one GPU (logical devices, cuda:0x4) are
// summed there by one kernel, with their weights, into that GPU's accumulator; the accumulators
// then go around a ring of the GPUs, chunked: a reduce-scatter (each GPU adds the chunk its left
// neighbour sends into its own, N-1 steps) then an all-gather (the summed chunks travel on, N-1
// steps), so each GPU sends and receives 2(N-1)/N of the model. The model is cut into partitions,
// each with its own stream on every GPU and its own ring starting at a different GPU, so that the
// copies of one partition overlap the additions of another. Copies between GPUs are peer copies
// where the GPUs allow peer access, and staged by the runtime through host memory where they do
// not; a step waits for its sender through events, never through the host.
//
// With the global momentum of the model-averaging merges (merge/global_momentum.h), the global
// model w and its previous value w_p live on the GPUs too, each chunk on the GPU that owns it
// after the reduce-scatter, which applies the rule to it before the all-gather: the same
// arithmetic as the host's, by the shard's owner, with no copy to the host.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

namespace xmlt::kernels::cuda {

// A replica: `params` points to the model's parameters in the memory of GPU `gpu`.
struct RingReplica {
  int gpu = 0;
  float* params = nullptr;
};

// The global momentum rule: kHeavy: w' = sum + gamma (w - w_p), replicas take w'; kNesterov:
// w' = sum, replicas take the look-ahead w' + gamma (w' - w). Then w_p = w, w = w'.
struct RingMomentum {
  double gamma = 0;
  bool nesterov = false;
};

class RingAllReduce {
 public:
  // Sets up the ring over the GPUs of `replicas` (in order of first appearance) for models of
  // `count` floats: an accumulator and receive buffers on each GPU, `partitions` streams per GPU
  // (0: one per GPU), events. Enables peer access between the GPUs where they allow it. Throws
  // std::invalid_argument on no replicas or a null pointer, std::runtime_error on CUDA failures.
  RingAllReduce(std::vector<RingReplica> replicas, size_t count, size_t partitions = 0);
  ~RingAllReduce();
  RingAllReduce(const RingAllReduce&) = delete;
  RingAllReduce& operator=(const RingAllReduce&) = delete;

  // Every replica becomes sum_i weights[i] * replica_i (float sums; the weights need not sum to 1).
  // Returns when every replica holds the result. Throws std::invalid_argument on a weight count
  // other than the replica count.
  void WeightedAllReduce(const std::vector<double>& weights);
  // The same sum finished by the global momentum rule on each chunk's owner, which keeps that
  // chunk of w and w_p (set by SetGlobalModel first).
  void WeightedAllReduce(const std::vector<double>& weights, const RingMomentum& momentum);

  // w and w_p (`count` floats each, host memory) onto the chunks' owners, at the start of a run or
  // after a resume; and back, for evaluation and checkpoints.
  void SetGlobalModel(const float* current, const float* previous);
  void GetGlobalModel(float* current, float* previous);

  // The sum of squares of each replica's parameters, accumulated in double on its GPU.
  std::vector<double> SquaredNorms();

  size_t gpus() const;        // distinct GPUs in the ring
  size_t partitions() const;  // rings run side by side
  bool peer_access() const;   // whether every pair of neighbours copies directly

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace xmlt::kernels::cuda
