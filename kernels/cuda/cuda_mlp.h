// One model replica on one GPU behind a host-callable interface: the engine's CUDA device drives
// training and prediction through it without seeing any CUDA type (this header compiles without
// the CUDA toolkit; the state lives behind a pointer to an implementation).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "data/sparse_batch.h"
#include "kernels/cpu/softmax_loss.h"
#include "kernels/cuda/dense_math.h"
#include "kernels/cuda/top_k_limits.h"
#include "kernels/model.h"

namespace xmlt::kernels::cuda {

// Dropout and the first layer's Adagrad of a training step (cf. cpu::StepRule); all 0: the plain
// step.
struct CudaStepSettings {
  float dropout = 0;
  uint64_t dropout_key = 0;  // the masks' key for this step
  float input_lr = 0;        // > 0: Adagrad on the first layer's weights at this rate
  uint32_t rounding_key = 0;  // a bf16 state's rounding noise for this step (kBf16 StateFormat)
  uint32_t weights_rounding_key = 0;  // bf16 weights' rounding noise for this step
};

// How a replica keeps its optimizer state (the momentum, and Adagrad's squares in the first
// layer's weights) and, separately, its weights: fp32, or bf16 (--optimizer-state bf16,
// --weights bf16), each value stepped in fp32 and stored rounded stochastically, as the CPU's
// dense step keeps them.
enum class StateFormat { kFp32, kBf16 };

// What one CudaMlp allocates, part by part, in bytes as requested from cudaMalloc and
// cudaMallocHost (the driver rounds each allocation up further: `allocations` of them).
struct CudaMlpBytes {
  uint64_t params = 0;     // in bf16, with the fp32 block the dense layers' weights pass through
  uint64_t velocity = 0;   // allocated even for plain SGD; in bf16 (fp32 weights), with that block
  uint64_t workspace = 0;  // activations, logits, deltas, the sort's arrays, CUB's scratch, losses
  uint64_t batch = 0;      // the staged batch and the top-k labels
  uint64_t blas = 0;       // the cuBLAS workspace given to the replica's handle
  uint64_t pinned_host = 0;  // host: the staging buffer and the read-backs
  uint64_t allocations = 0;  // device allocations
  uint64_t device_total() const { return params + velocity + workspace + batch + blas; }
  bool operator==(const CudaMlpBytes& o) const {
    return params == o.params && velocity == o.velocity && workspace == o.workspace && batch == o.batch &&
           blas == o.blas && pinned_host == o.pinned_host && allocations == o.allocations;
  }
};

// Owns a stream, cuBLAS handle, workspace, parameters and momentum buffer on GPU `gpu`, all
// allocated in the constructor for batches of up to max_rows rows, max_feature_nnz feature entries
// and max_label_nnz label entries. Several CudaMlp on the same GPU share nothing (cuda:0x4).
// Calls from one thread at a time; any thread may make them (each call selects the GPU itself).
class CudaMlp {
 public:
  // math: the dense products' precision (gemm.h): kFp32, or kTf32 / kBf16, faster and rounder.
  // Parameters start at zero; upload them before training. Throws std::invalid_argument for a
  // bad shape or bounds, std::runtime_error for CUDA failures (no such GPU, out of memory).
  // max_top_k: Predict's deepest list (kMaxWarpTopK for evaluations; a shortlist's k for the ranker).
  // state: kBf16 keeps the optimizer state in bf16 (2 bytes a parameter, and the dense layers'
  // weight gradients a block of GradientBlockValues floats at a time); the momentum's uploads and
  // downloads stay fp32, rounded to nearest and widened (exact for values the state holds).
  // weights: kBf16 keeps the parameters in bf16 (2 bytes each, math must be kBf16): the dense
  // layers' weights are widened for their products a block at a time (the same block), and the
  // fp32 uploads and downloads are rounded to nearest and widened. The merges then read and write
  // them in bf16 on the host (UploadParamsBf16Async, DownloadParamsBf16Async): device_params() is
  // null.
  CudaMlp(int gpu, const ModelShape& shape, uint32_t max_rows, uint64_t max_feature_nnz,
          uint64_t max_label_nnz, Math math, uint32_t max_top_k = kMaxWarpTopK,
          StateFormat state = StateFormat::kFp32, StateFormat weights = StateFormat::kFp32);
  ~CudaMlp();
  CudaMlp(CudaMlp&&) noexcept;
  CudaMlp& operator=(CudaMlp&&) noexcept;
  CudaMlp(const CudaMlp&) = delete;
  CudaMlp& operator=(const CudaMlp&) = delete;

  const ModelShape& shape() const;

  // Before building one: what it would allocate on GPU `gpu` for these bounds (CUB's scratch and
  // the cuBLAS workspace depend on the GPU). The constructor checks that it holds exactly that.
  static CudaMlpBytes PlannedBytes(int gpu, const ModelShape& shape, uint32_t max_rows,
                                   uint64_t max_feature_nnz, uint64_t max_label_nnz,
                                   uint32_t max_top_k = kMaxWarpTopK, StateFormat state = StateFormat::kFp32,
                                   StateFormat weights = StateFormat::kFp32);
  CudaMlpBytes AllocatedBytes() const;
  bool weights_in_bf16() const;

  // The parameters in GPU memory (the layout of Model<float>::params), for merges that run on the
  // GPUs; the stream's work on them is done whenever a call here has returned. Null for weights
  // kept in bf16.
  float* device_params();
  int gpu() const;

  // n must equal shape().NumParameters(); the layout is Model<float>::params.
  void UploadParams(const float* host, size_t n);
  void DownloadParams(float* host, size_t n) const;
  // The same copies, queued on the replica's stream without waiting (`host` must be page-locked
  // for them to overlap other work): the merges' mirror copies of several GPUs run side by side.
  // WaitForCopies returns once they are done; the replica's later work is ordered after them.
  void UploadParamsAsync(const float* host, size_t n);
  void DownloadParamsAsync(float* host, size_t n);
  // The bf16 bits of weights kept in bf16, the same way (the fp32 forms above refuse such weights).
  void UploadParamsBf16Async(const uint16_t* host, size_t n);
  void DownloadParamsBf16Async(uint16_t* host, size_t n);
  void WaitForCopies();
  // Whether this replica's GPU context is lost (a sticky error): every call on it would fail.
  bool ContextLost() const;
  void ZeroMomentum();
  // The momentum buffer (same layout and size as the parameters), for checkpoints: whole (n must
  // equal its size), or the n values from `offset` on, as a checkpoint streams it through a bounded
  // host buffer.
  void UploadMomentum(const float* host, size_t n);
  void DownloadMomentum(float* host, size_t n) const;
  void UploadMomentumRange(size_t offset, const float* host, size_t n);
  void DownloadMomentumRange(size_t offset, float* host, size_t n) const;

  // One step of cpu::TrainStep semantics: plain SGD when momentum == 0, else heavy-ball momentum
  // (lazy for first-layer rows), with `step_settings`'s dropout and first-layer Adagrad (whose
  // squares take the momentum buffer's first-layer weights). Copies the batch through pinned
  // staging on the replica's stream, waits for its own work only (an event), and returns the
  // batch's summed loss. Throws std::invalid_argument when the batch exceeds the bounds or is
  // malformed.
  cpu::LossResult TrainBatch(const data::SparseBatch& batch, float lr, float momentum,
                             const CudaStepSettings& step_settings = {});

  // Forward pass: the k <= max_top_k best labels of each row into top_labels (host, rows x k, best
  // first, ties to the lower id) and, when non-null, the summed loss and the labeled row count.
  void Predict(const data::SparseBatch& batch, uint32_t k, uint32_t* top_labels, double* loss_sum,
               uint32_t* labeled);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace xmlt::kernels::cuda
