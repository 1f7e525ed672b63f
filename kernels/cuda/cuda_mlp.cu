// A model replica on one GPU: batch staging, the training step and prediction; see cuda_mlp.h.
#include "kernels/cuda/cuda_mlp.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/batch_checks.h"
#include "kernels/cpu/stochastic_rounding.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_buffer.h"
#include "kernels/cuda/device_count.h"
#include "kernels/cuda/softmax_loss.h"
#include "kernels/cuda/sparse_mlp.h"
#include "kernels/cuda/top_k.h"

namespace xmlt::kernels::cuda {
namespace {

// A batch travels as one block of bytes (one copy instead of five); each array starts on a
// 256-byte boundary, as cudaMalloc's own allocations do.
constexpr size_t kAlign = 256;
size_t AlignUp(size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

struct StagingLayout {
  size_t feature_ptr = 0, label_ptr = 0, feature_idx = 0, label_idx = 0, feature_val = 0;
  size_t total = 0;
};

// Monotone in every argument, so the layout of the bounds holds any batch within them.
StagingLayout LayoutFor(uint64_t rows, uint64_t feature_nnz, uint64_t label_nnz) {
  StagingLayout s;
  s.feature_ptr = 0;
  s.label_ptr = AlignUp(s.feature_ptr + (rows + 1) * sizeof(uint64_t));
  s.feature_idx = AlignUp(s.label_ptr + (rows + 1) * sizeof(uint64_t));
  s.label_idx = AlignUp(s.feature_idx + feature_nnz * sizeof(uint32_t));
  s.feature_val = AlignUp(s.label_idx + label_nnz * sizeof(uint32_t));
  s.total = s.feature_val + feature_nnz * sizeof(float);
  return s;
}

// The cuBLAS workspace each replica gives its handle, as cuBLAS recommends (cublasSetWorkspace):
// 32 MiB on Hopper and later, 4 MiB before. Owned, so that the memory plan can count it.
size_t CublasWorkspaceBytes(int gpu) {
  int major = 0;
  XMLT_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, gpu));
  return size_t(major >= 9 ? 32 : 4) << 20;
}

[[noreturn]] void Reject(const std::string& what) {
  throw std::invalid_argument("CudaMlp: " + what);
}

// Weights or state kept in bf16 cross to and from fp32 on the host a piece at a time: no fp32-sized
// host buffer for them.
constexpr size_t kConvertPiece = size_t(1) << 20;

// The fp32 block the bf16 tensors pass through: a bf16 state's gradients or bf16 weights' products.
bool NeedsBlock(StateFormat state, StateFormat weights) {
  return state == StateFormat::kBf16 || weights == StateFormat::kBf16;
}

}  // namespace

struct CudaMlp::Impl {
  Impl(int gpu_index, const ModelShape& model_shape, uint32_t rows, uint64_t feature_nnz,
       uint64_t label_nnz, Math dense_math, uint32_t top_k, StateFormat state_format, StateFormat weight_format)
      : gpu(gpu_index),
        shape(model_shape),
        max_rows(rows),
        max_feature_nnz(feature_nnz),
        max_label_nnz(label_nnz),
        math(dense_math),
        state(state_format),
        weights(weight_format),
        blas_workspace(CublasWorkspaceBytes(gpu_index)),
        params(weight_format == StateFormat::kFp32 ? model_shape.NumParameters() : 0),
        params_bf16(weight_format == StateFormat::kBf16 ? model_shape.NumParameters() : 0),
        velocity(state_format == StateFormat::kFp32 ? model_shape.NumParameters() : 0),
        velocity_bf16(state_format == StateFormat::kBf16 ? model_shape.NumParameters() : 0),
        gradient_block(NeedsBlock(state_format, weight_format) ? GradientBlockValues(model_shape) : 0),
        workspace(model_shape, rows, feature_nnz),
        staging(LayoutFor(rows, feature_nnz, label_nnz).total),
        batch_bytes(LayoutFor(rows, feature_nnz, label_nnz).total),
        max_top_k(top_k),
        top_labels(size_t(rows) * top_k),
        top_host(size_t(rows) * top_k),
        loss_host(1) {
    model.shape = shape;
    model.layers = LayoutOf(shape);
    model.params = params.data();  // null where the weights are the other storage
    model.params_bf16 = params_bf16.data();
    XMLT_CUBLAS_CHECK(cublasSetStream(blas.get(), stream.get()));
    // After the stream: setting a stream puts the handle back on cuBLAS's own workspace pool.
    XMLT_CUBLAS_CHECK(cublasSetWorkspace(blas.get(), blas_workspace.data(), blas_workspace.size()));
    if (params.size() > 0)
      XMLT_CUDA_CHECK(cudaMemsetAsync(params.data(), 0, params.size() * sizeof(float), stream.get()));
    if (params_bf16.size() > 0)  // bf16 zero is all bits zero
      XMLT_CUDA_CHECK(cudaMemsetAsync(params_bf16.data(), 0, params_bf16.size() * sizeof(uint16_t), stream.get()));
    ZeroState();
    stream.Synchronize();
  }

  size_t StateSize() const { return shape.NumParameters(); }
  size_t NumParams() const { return shape.NumParameters(); }
  void ZeroState() {
    if (velocity.size() > 0)
      XMLT_CUDA_CHECK(cudaMemsetAsync(velocity.data(), 0, velocity.size() * sizeof(float), stream.get()));
    if (velocity_bf16.size() > 0)
      XMLT_CUDA_CHECK(cudaMemsetAsync(velocity_bf16.data(), 0, velocity_bf16.size() * sizeof(uint16_t), stream.get()));
  }

  CudaContext Context() const { return {stream.get(), blas.get(), math}; }

  // Validates the batch, copies it into pinned memory and from there (asynchronously) to the
  // device; returns the device view.
  DeviceBatch Stage(const data::SparseBatch& batch) {
    const uint32_t rows = batch.num_rows;
    const size_t feature_nnz = batch.feature_idx.size(), label_nnz = batch.label_idx.size();
    if (rows > max_rows)
      Reject("batch of " + std::to_string(rows) + " rows exceeds max_rows " +
             std::to_string(max_rows));
    if (feature_nnz > max_feature_nnz)
      Reject("batch of " + std::to_string(feature_nnz) + " feature entries exceeds " +
             std::to_string(max_feature_nnz));
    if (label_nnz > max_label_nnz)
      Reject("batch of " + std::to_string(label_nnz) + " label entries exceeds " +
             std::to_string(max_label_nnz));
    CheckBatchForModel(batch, shape.num_features, shape.num_labels, "CudaMlp");

    // The previous batch's copy out of the staging buffer must be over before it is rewritten;
    // normally it is (every call waits for its work), but not after an exception mid-call.
    stream.Synchronize();
    const StagingLayout layout = LayoutFor(rows, feature_nnz, label_nnz);
    unsigned char* host = staging.data();
    const size_t ptr_bytes = (size_t(rows) + 1) * sizeof(uint64_t);  // not rows + 1 in 32 bits
    std::memcpy(host + layout.feature_ptr, batch.feature_ptr.data(), ptr_bytes);
    std::memcpy(host + layout.label_ptr, batch.label_ptr.data(), ptr_bytes);
    if (feature_nnz > 0) {
      std::memcpy(host + layout.feature_idx, batch.feature_idx.data(), feature_nnz * sizeof(uint32_t));
      std::memcpy(host + layout.feature_val, batch.feature_val.data(), feature_nnz * sizeof(float));
    }
    if (label_nnz > 0)
      std::memcpy(host + layout.label_idx, batch.label_idx.data(), label_nnz * sizeof(uint32_t));
    XMLT_CUDA_CHECK(cudaMemcpyAsync(batch_bytes.data(), host, layout.total, cudaMemcpyHostToDevice,
                                    stream.get()));

    const unsigned char* device = batch_bytes.data();
    DeviceBatch view;
    view.num_rows = rows;
    view.num_entries = feature_nnz;
    view.feature_ptr = reinterpret_cast<const uint64_t*>(device + layout.feature_ptr);
    view.feature_idx = reinterpret_cast<const uint32_t*>(device + layout.feature_idx);
    view.feature_val = reinterpret_cast<const float*>(device + layout.feature_val);
    view.label_ptr = reinterpret_cast<const uint64_t*>(device + layout.label_ptr);
    view.label_idx = reinterpret_cast<const uint32_t*>(device + layout.label_idx);
    view.labeled_rows = CountLabeledRows(batch);
    return view;
  }

  // Waits for this replica's stream only: other replicas on the GPU keep running.
  void Wait() {
    done.Record(stream.get());
    done.Synchronize();
  }

  // fp32 values on the host to and from bf16 ones on the device (weights or state kept in bf16), a
  // piece at a time through host memory: rounded to nearest on the way in (exact for values bf16
  // holds), widened on the way out.
  void UploadRounded(uint16_t* device, const float* host, size_t n) {
    std::vector<uint16_t> bits(std::min(n, kConvertPiece));
    for (size_t at = 0; at < n; at += bits.size()) {
      const size_t count = std::min(bits.size(), n - at);
      for (size_t i = 0; i < count; ++i) bits[i] = cpu::NearestBf16(host[at + i]);
      XMLT_CUDA_CHECK(cudaMemcpyAsync(device + at, bits.data(), count * sizeof(uint16_t), cudaMemcpyHostToDevice,
                                      stream.get()));
      Wait();  // before the piece is rewritten
    }
  }
  void DownloadWidened(float* host, const uint16_t* device, size_t n) {
    std::vector<uint16_t> bits(std::min(n, kConvertPiece));
    for (size_t at = 0; at < n; at += bits.size()) {
      const size_t count = std::min(bits.size(), n - at);
      XMLT_CUDA_CHECK(cudaMemcpyAsync(bits.data(), device + at, count * sizeof(uint16_t), cudaMemcpyDeviceToHost,
                                      stream.get()));
      Wait();
      for (size_t i = 0; i < count; ++i) host[at + i] = cpu::WidenBf16(bits[i]);
    }
  }

  int gpu;
  ModelShape shape;
  uint32_t max_rows;
  uint64_t max_feature_nnz, max_label_nnz;
  Math math;
  StateFormat state;
  StateFormat weights;
  Stream stream;
  Event done;
  CublasHandle blas;
  DeviceBuffer<unsigned char> blas_workspace;
  DeviceBuffer<float> params;             // the weights in fp32, empty with bf16 ones
  DeviceBuffer<uint16_t> params_bf16;     // the weights in bf16, empty with fp32 ones
  DeviceBuffer<float> velocity;           // the fp32 state, empty with a bf16 one
  DeviceBuffer<uint16_t> velocity_bf16;   // the bf16 state, empty with an fp32 one
  DeviceBuffer<float> gradient_block;     // bf16 tensors' fp32 values, a block at a time
  DeviceModel model;
  DeviceMlpWorkspace workspace;
  PinnedBuffer<unsigned char> staging;
  DeviceBuffer<unsigned char> batch_bytes;
  uint32_t max_top_k;  // Predict's deepest list
  DeviceBuffer<uint32_t> top_labels;
  PinnedBuffer<uint32_t> top_host;
  PinnedBuffer<double> loss_host;
};

CudaMlp::CudaMlp(int gpu, const ModelShape& shape, uint32_t max_rows, uint64_t max_feature_nnz,
                 uint64_t max_label_nnz, Math math, uint32_t max_top_k, StateFormat state, StateFormat weights) {
  ValidateShape(shape);
  if (max_rows == 0) Reject("max_rows must be positive");
  if (weights == StateFormat::kBf16 && math != Math::kBf16)
    Reject("weights kept in bf16 need the dense products in bf16");
  if (max_top_k > kMaxTopK) Reject("max_top_k = " + std::to_string(max_top_k) + " exceeds " + std::to_string(kMaxTopK));
  const int count = CudaDeviceCountOrZero();
  if (gpu < 0 || gpu >= count)
    Reject("no CUDA device " + std::to_string(gpu) + " (" + std::to_string(count) + " present)");
  DeviceGuard guard(gpu);
  impl_ = std::make_unique<Impl>(gpu, shape, max_rows, max_feature_nnz, max_label_nnz, math, max_top_k, state,
                                 weights);
  // The memory plan reads PlannedBytes: it must be what was allocated, to the byte.
  if (!(AllocatedBytes() ==
        PlannedBytes(gpu, shape, max_rows, max_feature_nnz, max_label_nnz, max_top_k, state, weights)))
    throw std::logic_error("CudaMlp: PlannedBytes differs from what the constructor allocated");
}

CudaMlpBytes CudaMlp::PlannedBytes(int gpu, const ModelShape& shape, uint32_t max_rows,
                                   uint64_t max_feature_nnz, uint64_t max_label_nnz, uint32_t max_top_k,
                                   StateFormat state, StateFormat weights) {
  ValidateShape(shape);
  DeviceGuard guard(gpu);
  CudaMlpBytes b;
  const uint64_t n = shape.NumParameters(), block = GradientBlockValues(shape) * sizeof(float);
  b.params = weights == StateFormat::kBf16 ? n * sizeof(uint16_t) + block : n * sizeof(float);
  b.velocity = state == StateFormat::kBf16 ? n * sizeof(uint16_t) : n * sizeof(float);
  if (state == StateFormat::kBf16 && weights == StateFormat::kFp32) b.velocity += block;
  b.workspace = DeviceMlpWorkspace::PlannedBytes(shape, max_rows, max_feature_nnz);
  const uint64_t staged = LayoutFor(max_rows, max_feature_nnz, max_label_nnz).total;
  b.batch = staged + uint64_t(max_rows) * max_top_k * sizeof(uint32_t);
  b.blas = CublasWorkspaceBytes(gpu);
  b.pinned_host = staged + uint64_t(max_rows) * max_top_k * sizeof(uint32_t) + sizeof(double);
  // params, velocity, cuBLAS workspace, batch, top-k (and a bf16 state's gradient block); the
  // workspace's: one per hidden layer, logits, two deltas, four entry arrays and CUB's scratch
  // (with entries), two loss buffers.
  const uint64_t sort_arrays = max_feature_nnz > 0 ? 5 : 0;
  b.allocations = 5 + (NeedsBlock(state, weights) ? 1 : 0) + shape.hidden.size() + 3 + sort_arrays + 2;
  return b;
}

CudaMlpBytes CudaMlp::AllocatedBytes() const {
  const Impl& m = *impl_;
  CudaMlpBytes b;
  const uint64_t block = m.gradient_block.size() * sizeof(float);
  const bool bf16_weights = m.weights == StateFormat::kBf16;
  b.params = m.params.size() * sizeof(float) + m.params_bf16.size() * sizeof(uint16_t) + (bf16_weights ? block : 0);
  b.velocity = m.velocity.size() * sizeof(float) + m.velocity_bf16.size() * sizeof(uint16_t) + (bf16_weights ? 0 : block);
  b.workspace = m.workspace.AllocatedBytes();
  b.batch = m.batch_bytes.size() + m.top_labels.size() * sizeof(uint32_t);
  b.blas = m.blas_workspace.size();
  b.pinned_host = m.staging.size() + m.top_host.size() * sizeof(uint32_t) + m.loss_host.size() * sizeof(double);
  b.allocations = m.workspace.Allocations();
  for (size_t size : {m.params.size(), m.params_bf16.size(), m.velocity.size(), m.velocity_bf16.size(),
                      m.gradient_block.size(),
                      m.blas_workspace.size(), m.batch_bytes.size(), m.top_labels.size()})
    b.allocations += size > 0;
  return b;
}

CudaMlp::~CudaMlp() {
  if (!impl_) return;
  // Release on the replica's GPU without throwing: errors here have nowhere to go.
  int previous = -1;
  const bool switched = cudaGetDevice(&previous) == cudaSuccess && cudaSetDevice(impl_->gpu) == cudaSuccess;
  cudaStreamSynchronize(impl_->stream.get());
  impl_.reset();
  if (switched) cudaSetDevice(previous);
}

CudaMlp::CudaMlp(CudaMlp&&) noexcept = default;

CudaMlp& CudaMlp::operator=(CudaMlp&& other) noexcept {
  if (this != &other) {
    CudaMlp old(std::move(*this));  // released by ~CudaMlp, on its own GPU
    impl_ = std::move(other.impl_);
  }
  return *this;
}

const ModelShape& CudaMlp::shape() const { return impl_->shape; }

namespace {

// Refuses a parameter copy of other than the replica's n values, or of the other storage.
void CheckParamsCopy(const char* what, size_t n, size_t expected, bool bf16_copy, bool bf16_weights) {
  if (n != expected)
    Reject(std::string(what) + ": " + std::to_string(n) + " values for " + std::to_string(expected) + " parameters");
  if (bf16_copy != bf16_weights)
    Reject(std::string(what) + ": the replica keeps its weights in " + (bf16_weights ? "bf16" : "fp32"));
}

}  // namespace

void CudaMlp::UploadParamsAsync(const float* host, size_t n) {
  CheckParamsCopy("UploadParamsAsync", n, impl_->NumParams(), false, weights_in_bf16());
  DeviceGuard guard(impl_->gpu);
  XMLT_CUDA_CHECK(cudaMemcpyAsync(impl_->params.data(), host, n * sizeof(float), cudaMemcpyHostToDevice,
                                  impl_->stream.get()));
}

void CudaMlp::DownloadParamsAsync(float* host, size_t n) {
  CheckParamsCopy("DownloadParamsAsync", n, impl_->NumParams(), false, weights_in_bf16());
  DeviceGuard guard(impl_->gpu);
  XMLT_CUDA_CHECK(cudaMemcpyAsync(host, impl_->params.data(), n * sizeof(float), cudaMemcpyDeviceToHost,
                                  impl_->stream.get()));
}

void CudaMlp::UploadParamsBf16Async(const uint16_t* host, size_t n) {
  CheckParamsCopy("UploadParamsBf16Async", n, impl_->NumParams(), true, weights_in_bf16());
  DeviceGuard guard(impl_->gpu);
  XMLT_CUDA_CHECK(cudaMemcpyAsync(impl_->params_bf16.data(), host, n * sizeof(uint16_t), cudaMemcpyHostToDevice,
                                  impl_->stream.get()));
}

void CudaMlp::DownloadParamsBf16Async(uint16_t* host, size_t n) {
  CheckParamsCopy("DownloadParamsBf16Async", n, impl_->NumParams(), true, weights_in_bf16());
  DeviceGuard guard(impl_->gpu);
  XMLT_CUDA_CHECK(cudaMemcpyAsync(host, impl_->params_bf16.data(), n * sizeof(uint16_t), cudaMemcpyDeviceToHost,
                                  impl_->stream.get()));
}

bool CudaMlp::weights_in_bf16() const { return impl_->weights == StateFormat::kBf16; }

void CudaMlp::WaitForCopies() {
  DeviceGuard guard(impl_->gpu);
  impl_->Wait();
}

bool CudaMlp::ContextLost() const {
  int previous = 0;
  if (IsStickyCudaError(cudaGetDevice(&previous))) return true;
  const cudaError_t set = cudaSetDevice(impl_->gpu);
  const cudaError_t status = set != cudaSuccess ? set : cudaStreamQuery(impl_->stream.get());
  cudaSetDevice(previous);
  // The answer is the report: the query's error must not fail the caller's next launch elsewhere.
  ForgetUnreportedError(status == cudaErrorNotReady ? cudaSuccess : status);
  return IsStickyCudaError(status);
}

float* CudaMlp::device_params() { return impl_->params.data(); }
int CudaMlp::gpu() const { return impl_->gpu; }

void CudaMlp::UploadParams(const float* host, size_t n) {
  if (n != impl_->NumParams())
    Reject("UploadParams: " + std::to_string(n) + " values for " + std::to_string(impl_->NumParams()) +
           " parameters");
  DeviceGuard guard(impl_->gpu);
  if (weights_in_bf16()) return impl_->UploadRounded(impl_->params_bf16.data(), host, n);
  XMLT_CUDA_CHECK(cudaMemcpyAsync(impl_->params.data(), host, n * sizeof(float),
                                  cudaMemcpyHostToDevice, impl_->stream.get()));
  impl_->Wait();
}

void CudaMlp::DownloadParams(float* host, size_t n) const {
  if (n != impl_->NumParams())
    Reject("DownloadParams: " + std::to_string(n) + " values for " + std::to_string(impl_->NumParams()) +
           " parameters");
  DeviceGuard guard(impl_->gpu);
  if (weights_in_bf16()) return impl_->DownloadWidened(host, impl_->params_bf16.data(), n);
  XMLT_CUDA_CHECK(cudaMemcpyAsync(host, impl_->params.data(), n * sizeof(float),
                                  cudaMemcpyDeviceToHost, impl_->stream.get()));
  impl_->Wait();
}

void CudaMlp::UploadMomentum(const float* host, size_t n) {
  if (n != impl_->StateSize())
    Reject("UploadMomentum: " + std::to_string(n) + " values for " + std::to_string(impl_->StateSize()) +
           " parameters");
  UploadMomentumRange(0, host, n);
}

void CudaMlp::DownloadMomentum(float* host, size_t n) const {
  if (n != impl_->StateSize())
    Reject("DownloadMomentum: " + std::to_string(n) + " values for " + std::to_string(impl_->StateSize()) +
           " parameters");
  DownloadMomentumRange(0, host, n);
}

void CudaMlp::UploadMomentumRange(size_t offset, const float* host, size_t n) {
  const size_t size = impl_->StateSize();
  if (offset > size || n > size - offset)
    Reject("UploadMomentumRange: " + std::to_string(n) + " values from " + std::to_string(offset) +
           " beyond the " + std::to_string(size) + " parameters");
  DeviceGuard guard(impl_->gpu);
  if (impl_->state == StateFormat::kBf16) return impl_->UploadRounded(impl_->velocity_bf16.data() + offset, host, n);
  XMLT_CUDA_CHECK(cudaMemcpyAsync(impl_->velocity.data() + offset, host, n * sizeof(float),
                                  cudaMemcpyHostToDevice, impl_->stream.get()));
  impl_->Wait();
}

void CudaMlp::DownloadMomentumRange(size_t offset, float* host, size_t n) const {
  const size_t size = impl_->StateSize();
  if (offset > size || n > size - offset)
    Reject("DownloadMomentumRange: " + std::to_string(n) + " values from " + std::to_string(offset) +
           " beyond the " + std::to_string(size) + " parameters");
  DeviceGuard guard(impl_->gpu);
  if (impl_->state == StateFormat::kBf16) return impl_->DownloadWidened(host, impl_->velocity_bf16.data() + offset, n);
  XMLT_CUDA_CHECK(cudaMemcpyAsync(host, impl_->velocity.data() + offset, n * sizeof(float),
                                  cudaMemcpyDeviceToHost, impl_->stream.get()));
  impl_->Wait();
}

void CudaMlp::ZeroMomentum() {
  DeviceGuard guard(impl_->gpu);
  impl_->ZeroState();
  impl_->Wait();
}

cpu::LossResult CudaMlp::TrainBatch(const data::SparseBatch& batch, float lr, float momentum,
                                    const CudaStepSettings& step_settings) {
  if (!(step_settings.dropout >= 0.0f && step_settings.dropout < 1.0f)) Reject("TrainBatch: dropout must be in [0, 1)");
  if (!(step_settings.input_lr >= 0.0f) || !std::isfinite(step_settings.input_lr))
    Reject("TrainBatch: the first layer's Adagrad rate must be a finite number >= 0");
  Impl& m = *impl_;
  DeviceGuard guard(m.gpu);
  const DeviceBatch device_batch = m.Stage(batch);
  DeviceStepRule rule;
  rule.lr = lr;
  rule.momentum = momentum;
  // With momentum 0 the velocity would only repeat the gradient: plain SGD, as cpu::StepRule,
  // unless the first layer's Adagrad keeps its squares there (the other layers' v = 0 v + g is
  // then the gradient itself, as on the CPU).
  rule.input_adagrad = step_settings.input_lr > 0.0f;
  rule.input_lr = step_settings.input_lr;
  const bool keeps_state = momentum != 0.0f || rule.input_adagrad;
  if (keeps_state && m.state == StateFormat::kBf16) {
    rule.velocity_bf16 = m.velocity_bf16.data();
    rule.rounding_key = step_settings.rounding_key;
  } else if (keeps_state) {
    rule.velocity = m.velocity.data();
  }
  rule.weights_rounding_key = step_settings.weights_rounding_key;
  rule.gradient_block = m.gradient_block.data();
  rule.gradient_block_values = m.gradient_block.size();
  rule.dropout = step_settings.dropout;
  rule.dropout_key = step_settings.dropout_key;
  TrainStep(m.Context(), m.model, device_batch, rule, &m.workspace);
  XMLT_CUDA_CHECK(cudaMemcpyAsync(m.loss_host.data(), m.workspace.loss_sum.data(), sizeof(double),
                                  cudaMemcpyDeviceToHost, m.stream.get()));
  m.Wait();
  return {m.loss_host.data()[0], device_batch.labeled_rows};
}

void CudaMlp::Predict(const data::SparseBatch& batch, uint32_t k, uint32_t* top_labels,
                      double* loss_sum, uint32_t* labeled) {
  if (k > impl_->max_top_k)
    Reject("Predict: k = " + std::to_string(k) + " exceeds the " + std::to_string(impl_->max_top_k) +
           " this replica was built for");
  if (k > 0 && top_labels == nullptr) Reject("Predict: no output for the top labels");
  Impl& m = *impl_;
  DeviceGuard guard(m.gpu);
  const DeviceBatch device_batch = m.Stage(batch);
  const CudaContext context = m.Context();
  Forward(context, m.model, device_batch, &m.workspace, m.gradient_block.data(), m.gradient_block.size());
  const uint32_t rows = device_batch.num_rows;
  SoftmaxCrossEntropy(m.workspace.logits.data(), rows, m.shape.num_labels, device_batch.label_ptr,
                      device_batch.label_idx, m.workspace.row_loss.data(),
                      m.workspace.loss_sum.data(), context.stream);
  const size_t top_count = size_t(rows) * k;
  if (top_count > 0) {
    TopK(m.workspace.logits.data(), rows, m.shape.num_labels, k, m.top_labels.data(), nullptr,
         context.stream);
    XMLT_CUDA_CHECK(cudaMemcpyAsync(m.top_host.data(), m.top_labels.data(),
                                    top_count * sizeof(uint32_t), cudaMemcpyDeviceToHost,
                                    context.stream));
  }
  XMLT_CUDA_CHECK(cudaMemcpyAsync(m.loss_host.data(), m.workspace.loss_sum.data(), sizeof(double),
                                  cudaMemcpyDeviceToHost, context.stream));
  m.Wait();
  if (top_count > 0) std::copy(m.top_host.data(), m.top_host.data() + top_count, top_labels);
  if (loss_sum != nullptr) *loss_sum = m.loss_host.data()[0];
  if (labeled != nullptr) *labeled = device_batch.labeled_rows;
}

}  // namespace xmlt::kernels::cuda
