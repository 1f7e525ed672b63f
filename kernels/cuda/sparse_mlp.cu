// The sparse MLP's passes on the GPU; see sparse_mlp.h. Dense products go to cuBLAS; the sparse
// first layer, bias/ReLU, column sums and the updates are small fused kernels.
#include "kernels/cuda/sparse_mlp.h"

#include <cub/device/device_radix_sort.cuh>

#include <algorithm>
#include <climits>
#include <stdexcept>
#include <string>

#include "kernels/cpu/stochastic_rounding.h"
#include "kernels/cuda/bf16_state.h"
#include "kernels/cuda/bf16_state_math.cuh"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/launch.h"
#include "kernels/cuda/softmax_loss.h"
#include "kernels/dropout_mask.h"

namespace xmlt::kernels::cuda {
namespace {

constexpr unsigned kThreads = 256;
// Element-wise kernels loop over a grid of at most this many blocks (grid-stride).
constexpr uint64_t kMaxBlocks = 1u << 16;

unsigned BlocksFor(uint64_t count, unsigned threads = kThreads) {
  return unsigned(std::max<uint64_t>(1, std::min<uint64_t>((count + threads - 1) / threads, kMaxBlocks)));
}

// Adagrad's epsilon, cpu::kAdagradEpsilon's value.
constexpr float kAdagradEpsilon = 1e-10f;

// A weight as fp32, from either storage.
__device__ __forceinline__ float LoadWeight(const float* w, uint64_t i) { return w[i]; }
__device__ __forceinline__ float LoadWeight(const uint16_t* w, uint64_t i) { return cpu::WidenBf16(w[i]); }

// The update of one parameter from its gradient g; one definition so that every tensor follows
// cpu::StepRule exactly. Pointers are already offset to the tensor. A weight kept in bf16
// (param_bf16 instead of param) steps from its widened value and is stored rounded
// stochastically, as the CPU's bf16 weights are.
struct Update {
  float lr;
  float momentum;
  float* param;
  float* velocity;
  float* gradient;
  uint16_t* velocity_bf16 = nullptr;  // the state in bf16 instead of `velocity`
  uint32_t rounding_key = 0;
  uint64_t offset = 0;   // the tensor's offset in the parameters: the rounding noises' index
  float adagrad_lr = 0;  // > 0: Adagrad, its squares in `velocity` (the first layer's weights only)
  uint16_t* param_bf16 = nullptr;  // the weights in bf16 instead of `param`
  uint32_t weights_rounding_key = 0;

  __device__ void Apply(uint64_t i, float g) const {
    if (gradient != nullptr) {
      gradient[i] = g;
      return;
    }
    float w = param_bf16 != nullptr ? cpu::WidenBf16(param_bf16[i]) : param[i];
    if (velocity_bf16 != nullptr) {
      if (adagrad_lr > 0.0f) {
        AdagradBf16Value(&w, velocity_bf16 + i, g, adagrad_lr, kAdagradEpsilon, rounding_key, offset + i);
      } else {
        MomentumBf16Value(&w, velocity_bf16 + i, g, momentum, lr, rounding_key, offset + i);
      }
    } else if (adagrad_lr > 0.0f) {
      const float squares = velocity[i] + g * g;
      velocity[i] = squares;
      w -= adagrad_lr * g / (sqrtf(squares) + kAdagradEpsilon);
    } else if (velocity != nullptr) {
      const float v = momentum * velocity[i] + g;
      velocity[i] = v;
      w -= lr * v;
    } else {
      w -= lr * g;
    }
    if (param_bf16 != nullptr) {
      param_bf16[i] = cpu::StochasticBf16(w, cpu::RoundingNoise(weights_rounding_key, offset + i));
    } else {
      param[i] = w;
    }
  }

  // The same update of the tensor's values from `at` on.
  Update From(uint64_t at) const {
    Update part = *this;
    auto advance = [at](auto* p) { return p == nullptr ? p : p + at; };
    part.param = advance(param);
    part.velocity = advance(velocity);
    part.gradient = advance(gradient);
    part.velocity_bf16 = advance(velocity_bf16);
    part.param_bf16 = advance(param_bf16);
    part.offset = offset + at;
    return part;
  }
};

Update UpdateFor(const DeviceStepRule& rule, const DeviceModel& model, const TensorView& view) {
  Update update{rule.lr, rule.momentum, model.params == nullptr ? nullptr : model.params + view.offset,
                rule.velocity == nullptr ? nullptr : rule.velocity + view.offset,
                rule.gradient == nullptr ? nullptr : rule.gradient + view.offset};
  update.offset = view.offset;
  if (rule.gradient == nullptr && rule.velocity_bf16 != nullptr) {
    update.velocity_bf16 = rule.velocity_bf16 + view.offset;
    update.rounding_key = rule.rounding_key;
  }
  if (model.in_bf16()) {
    update.param_bf16 = model.params_bf16 + view.offset;
    update.weights_rounding_key = rule.weights_rounding_key;
  }
  return update;
}

// out[r][u] = relu(bias[u] + sum_e x_e * W0[f_e][u]): a block row of threads per batch row and
// 128 units, walking the row's entries in order (as the CPU does) with coalesced reads of W0 rows.
// gridDim.y is at most 65,535, so past 65,535 * 128 units each block strides over several groups.
constexpr unsigned kSparseUnits = 128;
constexpr uint64_t kMaxGridY = 65535;
template <class Weight>
__global__ void __launch_bounds__(kSparseUnits)
    SparseInputForwardKernel(const uint64_t* feature_ptr, const uint32_t* feature_idx,
                             const float* feature_val, const Weight* w, const Weight* bias,
                             uint32_t units, float* out) {
  const uint32_t r = blockIdx.x;
  const uint64_t begin = feature_ptr[r], end = feature_ptr[r + 1];
  for (uint64_t u = uint64_t(blockIdx.y) * kSparseUnits + threadIdx.x; u < units;
       u += uint64_t(gridDim.y) * kSparseUnits) {
    float z = LoadWeight(bias, u);
    for (uint64_t e = begin; e < end; ++e)
      z += feature_val[e] * LoadWeight(w, uint64_t(feature_idx[e]) * units + u);
    out[uint64_t(r) * units + u] = fmaxf(z, 0.0f);
  }
}

// out[r][j] += bias[j], then ReLU for hidden layers: the epilogue of a dense layer's GEMM.
template <class Weight>
__global__ void BiasActivationKernel(float* out, const Weight* bias, uint64_t count, uint32_t cols,
                                     bool relu) {
  for (uint64_t i = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; i < count;
       i += uint64_t(gridDim.x) * blockDim.x) {
    const float z = out[i] + LoadWeight(bias, i % cols);
    out[i] = relu ? fmaxf(z, 0.0f) : z;
  }
}

// delta *= relu'(activation): the ReLU passed the gradient only where its output was positive.
__global__ void ReluBackwardKernel(const float* activation, uint64_t count, float* delta) {
  for (uint64_t i = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; i < count;
       i += uint64_t(gridDim.x) * blockDim.x)
    if (activation[i] <= 0.0f) delta[i] = 0.0f;
}

// Inverted dropout on a hidden layer's activations (rows x units, after the ReLU), in place, with
// the CPU's masks.
__global__ void DropoutKernel(float* activation, uint64_t count, uint32_t units, uint64_t key, uint32_t layer,
                              uint64_t threshold, float scale) {
  for (uint64_t i = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; i < count;
       i += uint64_t(gridDim.x) * blockDim.x) {
    const uint64_t row_key = DropoutRowKey(key, layer, uint32_t(i / units));
    activation[i] = DropoutKeepsUnit(row_key, i % units, threshold) ? activation[i] * scale : 0.0f;
  }
}

// Dropout and ReLU backward together: the kept activation is positive exactly where the unit
// passed the gradient, scaled by 1 / (1 - dropout).
__global__ void DropoutReluBackwardKernel(const float* activation, uint64_t count, float scale, float* delta) {
  for (uint64_t i = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; i < count;
       i += uint64_t(gridDim.x) * blockDim.x)
    delta[i] = activation[i] > 0.0f ? delta[i] * scale : 0.0f;
}

// w -= lr * v after a GEMM has accumulated v = momentum * v + g.
__global__ void ApplyVelocityKernel(float* param, const float* velocity, float lr, uint64_t count) {
  for (uint64_t i = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; i < count;
       i += uint64_t(gridDim.x) * blockDim.x)
    param[i] -= lr * velocity[i];
}

// out[j] = in[j] widened: a block of weights kept in bf16, for the dense products.
__global__ void WidenKernel(const uint16_t* in, float* out, uint64_t count) {
  for (uint64_t i = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; i < count;
       i += uint64_t(gridDim.x) * blockDim.x)
    out[i] = cpu::WidenBf16(in[i]);
}

// The update of `count` values from their gradients in `gradient` (a block of a dense layer).
__global__ void BlockUpdateKernel(const float* gradient, uint64_t count, Update update) {
  for (uint64_t i = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; i < count;
       i += uint64_t(gridDim.x) * blockDim.x)
    update.Apply(i, gradient[i]);
}

// Bias gradient (column sums of delta, rows in order as on the CPU) fused with its update; a
// thread per column, so that consecutive threads read consecutive addresses of each row. Strided:
// BlocksFor caps the grid at kMaxBlocks * kThreads = 2^24 columns, fewer than labels may be.
__global__ void BiasBackwardKernel(const float* delta, uint32_t rows, uint32_t cols, Update update) {
  for (uint64_t j = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; j < cols;
       j += uint64_t(gridDim.x) * blockDim.x) {
    float sum = 0.0f;
    for (uint32_t r = 0; r < rows; ++r) sum += delta[uint64_t(r) * cols + j];
    update.Apply(j, sum);
  }
}

// entry_row[e] = the row r with feature_ptr[r] <= e < feature_ptr[r + 1] (binary search; empty
// rows are skipped because their begin equals the next row's).
__global__ void EntryRowKernel(const uint64_t* feature_ptr, uint32_t rows, uint64_t entries,
                               uint32_t* entry_row) {
  for (uint64_t e = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; e < entries;
       e += uint64_t(gridDim.x) * blockDim.x) {
    uint32_t lo = 0, hi = rows;  // feature_ptr[lo] <= e < feature_ptr[hi]
    while (hi - lo > 1) {
      const uint32_t mid = lo + (hi - lo) / 2;
      if (feature_ptr[mid] <= e) {
        lo = mid;
      } else {
        hi = mid;
      }
    }
    entry_row[e] = lo;
  }
}

__global__ void IotaKernel(uint32_t* values, uint64_t count) {
  for (uint64_t i = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; i < count;
       i += uint64_t(gridDim.x) * blockDim.x)
    values[i] = uint32_t(i);
}

// First-layer weight gradient over the transposed batch: block i starts work only where a run of
// equal features begins in the sorted entries, reduces x_e * delta[row(e)] over the run (entries
// in ascending order, as the CPU does) and applies the update to that one feature row. No atomics
// and no dense D x H gradient; rows of absent features are never touched.
__global__ void SparseInputBackwardKernel(const uint32_t* sorted_feature,
                                          const uint32_t* sorted_entry, uint32_t entries,
                                          const uint32_t* entry_row, const float* feature_val,
                                          const float* delta, uint32_t units, Update update) {
  const uint32_t i = blockIdx.x;
  const uint32_t feature = sorted_feature[i];
  if (i > 0 && sorted_feature[i - 1] == feature) return;
  const uint64_t offset = uint64_t(feature) * units;
  for (uint32_t u = threadIdx.x; u < units; u += blockDim.x) {
    float g = 0.0f;
    for (uint32_t j = i; j < entries && sorted_feature[j] == feature; ++j) {
      const uint32_t e = sorted_entry[j];
      g += feature_val[e] * delta[uint64_t(entry_row[e]) * units + u];
    }
    update.Apply(offset + u, g);
  }
}

// A dense layer's weights kept in bf16, widened a block of whole output rows at a time into
// `block` (at least one row): each block's products run on its fp32 values.
struct WeightBlocks {
  int64_t rows_per_block;
  WeightBlocks(int64_t n_in, uint64_t block_values) {
    if (uint64_t(n_in) > block_values)
      throw std::logic_error("the weight block is shorter than a row of weights");
    rows_per_block = std::max<int64_t>(1, int64_t(block_values / uint64_t(n_in)));
  }
};

void Widen(const CudaContext& ctx, const uint16_t* in, float* out, uint64_t count) {
  if (count == 0) return;
  XMLT_LAUNCH(WidenKernel, BlocksFor(count), kThreads, 0, ctx.stream)(in, out, count);
  XMLT_CUDA_CHECK_LAUNCH();
}

void DenseForward(const CudaContext& ctx, const DeviceModel& model, size_t layer, const float* in,
                  uint32_t rows, float* out, bool relu, float* block, uint64_t block_values) {
  const int64_t n_in = model.shape.LayerInputs(layer), n_out = model.shape.LayerOutputs(layer);
  // out = in (rows x n_in) * W^T, W stored n_out x n_in.
  if (model.in_bf16()) {
    const WeightBlocks blocks(n_in, block_values);
    for (int64_t first = 0; first < n_out; first += blocks.rows_per_block) {
      const int64_t count = std::min(blocks.rows_per_block, n_out - first);
      Widen(ctx, model.WeightBf16(layer) + uint64_t(first) * uint64_t(n_in), block, uint64_t(count) * uint64_t(n_in));
      Gemm(ctx.blas, ctx.math, Op::kNone, Op::kTranspose, rows, count, n_in, 1.0f, in, n_in, block, n_in, 0.0f,
           out + first, n_out);
    }
  } else {
    Gemm(ctx.blas, ctx.math, Op::kNone, Op::kTranspose, rows, n_out, n_in, 1.0f, in, n_in,
         model.Weight(layer), n_in, 0.0f, out, n_out);
  }
  const uint64_t count = uint64_t(rows) * uint64_t(n_out);
  if (count == 0) return;
  if (model.in_bf16()) {
    XMLT_LAUNCH(BiasActivationKernel<uint16_t>, BlocksFor(count), kThreads, 0, ctx.stream)(
        out, model.BiasBf16(layer), count, uint32_t(n_out), relu);
  } else {
    XMLT_LAUNCH(BiasActivationKernel<float>, BlocksFor(count), kThreads, 0, ctx.stream)(
        out, model.Bias(layer), count, uint32_t(n_out), relu);
  }
  XMLT_CUDA_CHECK_LAUNCH();
}

// Backward through a dense layer kept in bf16, a block of output rows at a time: the block's
// weights widened into the block give their share of dLoss/dIn (summed over the blocks), then the
// block takes their gradient and the update steps it into the weights.
void DenseBackwardBf16(const CudaContext& ctx, const DeviceModel& model, size_t layer, const DeviceStepRule& rule,
                       const float* in, uint32_t rows, const float* delta, float* delta_in) {
  const int64_t n_in = model.shape.LayerInputs(layer), n_out = model.shape.LayerOutputs(layer);
  const Update weight = UpdateFor(rule, model, model.layers[layer].weight);
  const WeightBlocks blocks(n_in, rule.gradient_block_values);
  float* block = rule.gradient_block;
  for (int64_t first = 0; first < n_out; first += blocks.rows_per_block) {
    const int64_t count = std::min(blocks.rows_per_block, n_out - first);
    const uint64_t at = uint64_t(first) * uint64_t(n_in), values = uint64_t(count) * uint64_t(n_in);
    if (delta_in != nullptr) {
      Widen(ctx, model.WeightBf16(layer) + at, block, values);
      Gemm(ctx.blas, ctx.math, Op::kNone, Op::kNone, rows, n_in, count, 1.0f, delta + first, n_out, block, n_in,
           first == 0 ? 0.0f : 1.0f, delta_in, n_in);
    }
    Gemm(ctx.blas, ctx.math, Op::kTranspose, Op::kNone, count, n_in, rows, 1.0f, delta + first, n_out, in, n_in,
         0.0f, block, n_in);
    XMLT_LAUNCH(BlockUpdateKernel, BlocksFor(values), kThreads, 0, ctx.stream)(block, values, weight.From(at));
    XMLT_CUDA_CHECK_LAUNCH();
  }
}

// Backward through a dense layer given delta = dLoss/dOut (rows x outputs): writes dLoss/dIn into
// delta_in (unless null) with the weights before this step, then updates weight and bias.
void DenseBackward(const CudaContext& ctx, const DeviceModel& model, size_t layer,
                   const DeviceStepRule& rule, const float* in, uint32_t rows, const float* delta,
                   float* delta_in) {
  const int64_t n_in = model.shape.LayerInputs(layer), n_out = model.shape.LayerOutputs(layer);
  const LayerView& view = model.layers[layer];
  if (model.in_bf16()) {
    DenseBackwardBf16(ctx, model, layer, rule, in, rows, delta, delta_in);
  } else {
    float* w = model.Weight(layer);
    if (delta_in != nullptr)
      Gemm(ctx.blas, ctx.math, Op::kNone, Op::kNone, rows, n_in, n_out, 1.0f, delta, n_out, w, n_in,
           0.0f, delta_in, n_in);
    // dW = delta^T (n_out x rows) * in (rows x n_in), accumulated straight into its destination.
    const Update weight = UpdateFor(rule, model, view.weight);
    auto weight_gradient_into = [&](float alpha, float beta, float* dst) {
      Gemm(ctx.blas, ctx.math, Op::kTranspose, Op::kNone, n_out, n_in, rows, alpha, delta, n_out, in,
           n_in, beta, dst, n_in);
    };
    if (weight.gradient != nullptr) {
      weight_gradient_into(1.0f, 0.0f, weight.gradient);
    } else if (weight.velocity_bf16 != nullptr) {
      // The bf16 state cannot accumulate the product: the gradient of a block of output rows at a
      // time goes to the fp32 block, and the update steps it into the state and the weights.
      const WeightBlocks blocks(n_in, rule.gradient_block_values);
      for (int64_t first = 0; first < n_out; first += blocks.rows_per_block) {
        const int64_t count = std::min(blocks.rows_per_block, n_out - first);
        Gemm(ctx.blas, ctx.math, Op::kTranspose, Op::kNone, count, n_in, rows, 1.0f, delta + first, n_out, in, n_in,
             0.0f, rule.gradient_block, n_in);
        const uint64_t at = uint64_t(first) * uint64_t(n_in);
        MomentumStepBf16(ctx.stream, w + at, weight.velocity_bf16 + at, rule.gradient_block, rule.momentum, rule.lr,
                         uint64_t(count) * uint64_t(n_in), rule.rounding_key, weight.offset + at);
      }
    } else if (weight.velocity != nullptr) {
      weight_gradient_into(1.0f, rule.momentum, weight.velocity);
      const uint64_t count = view.weight.size();
      XMLT_LAUNCH(ApplyVelocityKernel, BlocksFor(count), kThreads, 0, ctx.stream)(w, weight.velocity, rule.lr,
                                                                         count);
      XMLT_CUDA_CHECK_LAUNCH();
    } else {
      weight_gradient_into(-rule.lr, 1.0f, w);  // SGD fused into the product
    }
  }
  XMLT_LAUNCH(BiasBackwardKernel, BlocksFor(uint64_t(n_out)), kThreads, 0, ctx.stream)(
      delta, rows, uint32_t(n_out), UpdateFor(rule, model, view.bias));
  XMLT_CUDA_CHECK_LAUNCH();
}

void SparseInputBackward(const CudaContext& ctx, const DeviceModel& model,
                         const DeviceBatch& batch, const DeviceStepRule& rule, const float* delta,
                         DeviceMlpWorkspace* ws) {
  const uint32_t units = uint32_t(model.shape.LayerOutputs(0));
  const uint64_t entries = batch.num_entries;
  if (entries > 0) {
    XMLT_LAUNCH(EntryRowKernel, BlocksFor(entries), kThreads, 0, ctx.stream)(
        batch.feature_ptr, batch.num_rows, entries, ws->entry_row.data());
    XMLT_CUDA_CHECK_LAUNCH();
    // Radix sort is stable: equal features keep ascending entry order, the CPU's tie-break.
    size_t needed = 0;
    XMLT_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(
        nullptr, needed, batch.feature_idx, ws->sorted_feature.data(), ws->entry_ids.data(),
        ws->sorted_entry.data(), int(entries), 0, ws->sort_bits, ctx.stream));
    if (needed > ws->sort_temp.size())
      throw std::logic_error("SparseInputBackward: sort scratch smaller than CUB needs");
    size_t bytes = ws->sort_temp.size();
    XMLT_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(
        ws->sort_temp.data(), bytes, batch.feature_idx, ws->sorted_feature.data(),
        ws->entry_ids.data(), ws->sorted_entry.data(), int(entries), 0, ws->sort_bits,
        ctx.stream));
    XMLT_CUDA_CHECK_LAUNCH();
    const unsigned threads =
        unsigned(std::min<uint64_t>(kThreads, (uint64_t(units) + 31) / 32 * 32));
    Update weight = UpdateFor(rule, model, model.layers[0].weight);
    if (rule.input_adagrad && rule.gradient == nullptr) weight.adagrad_lr = rule.input_lr;
    XMLT_LAUNCH(SparseInputBackwardKernel, unsigned(entries), threads, 0, ctx.stream)(
        ws->sorted_feature.data(), ws->sorted_entry.data(), uint32_t(entries),
        ws->entry_row.data(), batch.feature_val, delta, units, weight);
    XMLT_CUDA_CHECK_LAUNCH();
  }
  XMLT_LAUNCH(BiasBackwardKernel, BlocksFor(units), kThreads, 0, ctx.stream)(
      delta, batch.num_rows, units, UpdateFor(rule, model, model.layers[0].bias));
  XMLT_CUDA_CHECK_LAUNCH();
}

// Back through a hidden layer's ReLU, and its dropout when the rule has one.
void HiddenBackward(const CudaContext& ctx, const DeviceStepRule& rule, const float* activation, uint64_t count,
                    float* delta) {
  if (count == 0) return;
  if (rule.dropout != 0.0f) {
    XMLT_LAUNCH(DropoutReluBackwardKernel, BlocksFor(count), kThreads, 0, ctx.stream)(
        activation, count, 1.0f / (1.0f - rule.dropout), delta);
  } else {
    XMLT_LAUNCH(ReluBackwardKernel, BlocksFor(count), kThreads, 0, ctx.stream)(activation, count, delta);
  }
  XMLT_CUDA_CHECK_LAUNCH();
}

void DropOut(const CudaContext& ctx, const DeviceStepRule& rule, size_t layer, uint32_t rows, uint32_t units,
             float* activation) {
  const uint64_t count = uint64_t(rows) * units;
  if (rule.dropout == 0.0f || count == 0) return;
  XMLT_LAUNCH(DropoutKernel, BlocksFor(count), kThreads, 0, ctx.stream)(
      activation, count, units, rule.dropout_key, uint32_t(layer), DropoutThreshold(double(rule.dropout)),
      1.0f / (1.0f - rule.dropout));
  XMLT_CUDA_CHECK_LAUNCH();
}

// Forward; with `rule`, each hidden layer's activations dropped out before the next layer reads them.
void ForwardUnder(const CudaContext& ctx, const DeviceModel& model, const DeviceBatch& batch,
                  const DeviceStepRule* rule, DeviceMlpWorkspace* ws, float* block, uint64_t block_values) {
  if (model.in_bf16() && (block == nullptr || block_values < GradientBlockValues(model.shape)))
    throw std::invalid_argument("a model kept in bf16 needs a block of GradientBlockValues floats");
  if (batch.num_rows > ws->max_rows || batch.num_entries > ws->max_entries)
    throw std::logic_error("batch larger than the device workspace");
  const uint32_t rows = batch.num_rows;
  const uint32_t units = uint32_t(model.shape.LayerOutputs(0));
  if (rows > 0) {
    const dim3 grid(rows, unsigned(std::min<uint64_t>(
                              (uint64_t(units) + kSparseUnits - 1) / kSparseUnits, kMaxGridY)));
    if (model.in_bf16()) {
      XMLT_LAUNCH(SparseInputForwardKernel<uint16_t>, grid, kSparseUnits, 0, ctx.stream)(
          batch.feature_ptr, batch.feature_idx, batch.feature_val, model.WeightBf16(0), model.BiasBf16(0),
          units, ws->activations[0].data());
    } else {
      XMLT_LAUNCH(SparseInputForwardKernel<float>, grid, kSparseUnits, 0, ctx.stream)(
          batch.feature_ptr, batch.feature_idx, batch.feature_val, model.Weight(0), model.Bias(0),
          units, ws->activations[0].data());
    }
    XMLT_CUDA_CHECK_LAUNCH();
  }
  if (rule != nullptr) DropOut(ctx, *rule, 0, rows, units, ws->activations[0].data());
  const size_t last = model.shape.num_layers() - 1;
  for (size_t l = 1; l < last; ++l) {
    DenseForward(ctx, model, l, ws->activations[l - 1].data(), rows, ws->activations[l].data(),
                 true, block, block_values);
    if (rule != nullptr) DropOut(ctx, *rule, l, rows, model.shape.hidden[l], ws->activations[l].data());
  }
  DenseForward(ctx, model, last, ws->activations[last - 1].data(), rows, ws->logits.data(), false, block,
               block_values);
}

int BitsFor(uint64_t num_features) {
  int bits = 1;
  while (bits < 32 && (uint64_t(1) << bits) < num_features) ++bits;
  return bits;
}

}  // namespace

namespace {

// CUB's scratch for sorting `entries` (feature, entry) pairs of sort_bits bits on the current device.
size_t SortScratchBytes(uint64_t entries, int sort_bits) {
  size_t bytes = 0;
  XMLT_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(
      nullptr, bytes, static_cast<const uint32_t*>(nullptr), static_cast<uint32_t*>(nullptr),
      static_cast<const uint32_t*>(nullptr), static_cast<uint32_t*>(nullptr), int(entries), 0, sort_bits));
  return bytes;
}

}  // namespace

uint64_t GradientBlockValues(const ModelShape& shape) {
  constexpr uint64_t kBlockValues = uint64_t(1) << 22;
  uint64_t values = 0;
  for (size_t l = 1; l < shape.num_layers(); ++l) {
    const uint64_t n_in = shape.LayerInputs(l), n_out = shape.LayerOutputs(l);
    values = std::max(values, std::min(n_out, std::max<uint64_t>(1, kBlockValues / n_in)) * n_in);
  }
  return values;
}

uint64_t DeviceMlpWorkspace::PlannedBytes(const ModelShape& shape, uint32_t rows, uint64_t entries) {
  uint64_t hidden_sum = 0, widest = 0;
  for (uint32_t h : shape.hidden) hidden_sum += h, widest = std::max<uint64_t>(widest, h);
  const uint64_t floats = uint64_t(rows) * (hidden_sum + shape.num_labels + 2 * widest);
  const uint64_t sort = entries > 0 ? SortScratchBytes(entries, BitsFor(shape.num_features)) : 0;
  return floats * sizeof(float) + 4 * entries * sizeof(uint32_t) + sort +
         (std::max<uint32_t>(rows, 1) + 1) * sizeof(double);
}

uint64_t DeviceMlpWorkspace::AllocatedBytes() const {
  uint64_t bytes = 0;
  for (const DeviceBuffer<float>& a : activations) bytes += a.size() * sizeof(float);
  bytes += (logits.size() + delta.size() + delta_prev.size()) * sizeof(float);
  bytes += (entry_row.size() + entry_ids.size() + sorted_feature.size() + sorted_entry.size()) * sizeof(uint32_t);
  return bytes + sort_temp.size() + (row_loss.size() + loss_sum.size()) * sizeof(double);
}

uint64_t DeviceMlpWorkspace::Allocations() const {
  uint64_t count = 0;
  for (const DeviceBuffer<float>& a : activations) count += a.size() > 0;
  for (size_t size : {logits.size(), delta.size(), delta_prev.size(), entry_row.size(), entry_ids.size(),
                      sorted_feature.size(), sorted_entry.size(), sort_temp.size(), row_loss.size(), loss_sum.size()})
    count += size > 0;
  return count;
}

DeviceMlpWorkspace::DeviceMlpWorkspace(const ModelShape& shape, uint32_t rows, uint64_t entries)
    : max_rows(rows), max_entries(entries) {
  if (entries > uint64_t(INT_MAX))
    throw std::invalid_argument("DeviceMlpWorkspace: at most " + std::to_string(INT_MAX) +
                                " feature entries per batch (CUB's item count is an int)");
  // A block per row in gridDim.x (at most 2^31 - 1), and rows is cuBLAS's int m.
  if (rows > uint32_t(INT_MAX))
    throw std::invalid_argument("DeviceMlpWorkspace: at most " + std::to_string(INT_MAX) +
                                " rows per batch");
  uint64_t widest = 0;
  for (uint32_t h : shape.hidden) {
    activations.emplace_back(uint64_t(rows) * h);
    widest = std::max<uint64_t>(widest, h);
  }
  logits = DeviceBuffer<float>(uint64_t(rows) * shape.num_labels);
  delta = DeviceBuffer<float>(uint64_t(rows) * widest);
  delta_prev = DeviceBuffer<float>(uint64_t(rows) * widest);
  entry_row = DeviceBuffer<uint32_t>(entries);
  entry_ids = DeviceBuffer<uint32_t>(entries);
  sorted_feature = DeviceBuffer<uint32_t>(entries);
  sorted_entry = DeviceBuffer<uint32_t>(entries);
  sort_bits = BitsFor(shape.num_features);
  if (entries > 0) {
    sort_temp = DeviceBuffer<unsigned char>(SortScratchBytes(entries, sort_bits));
    XMLT_LAUNCH(IotaKernel, BlocksFor(entries), kThreads, 0, nullptr)(entry_ids.data(), entries);
    XMLT_CUDA_CHECK_LAUNCH();
    XMLT_CUDA_CHECK(cudaStreamSynchronize(nullptr));  // entry_ids is read from other streams
  }
  row_loss = DeviceBuffer<double>(std::max<uint32_t>(rows, 1));
  loss_sum = DeviceBuffer<double>(1);
}

void Forward(const CudaContext& ctx, const DeviceModel& model, const DeviceBatch& batch,
             DeviceMlpWorkspace* ws, float* block, uint64_t block_values) {
  ForwardUnder(ctx, model, batch, nullptr, ws, block, block_values);
}

void TrainStep(const CudaContext& ctx, const DeviceModel& model, const DeviceBatch& batch,
               const DeviceStepRule& rule, DeviceMlpWorkspace* ws) {
  if (!(rule.dropout >= 0.0f && rule.dropout < 1.0f)) throw std::invalid_argument("dropout must be in [0, 1)");
  if (rule.input_adagrad && rule.velocity == nullptr && rule.velocity_bf16 == nullptr && rule.gradient == nullptr)
    throw std::invalid_argument("the first layer's Adagrad keeps its squares in the velocity buffer");
  if (rule.velocity != nullptr && rule.velocity_bf16 != nullptr)
    throw std::invalid_argument("the state is in fp32 or in bf16, not both");
  if ((rule.velocity_bf16 != nullptr || model.in_bf16()) && rule.gradient_block_values < GradientBlockValues(model.shape))
    throw std::invalid_argument("the block of a bf16 state or bf16 weights is smaller than GradientBlockValues");
  if (model.in_bf16() && rule.gradient != nullptr)
    throw std::invalid_argument("a model kept in bf16 steps its weights: it stores no gradient");
  ForwardUnder(ctx, model, batch, &rule, ws, rule.gradient_block, rule.gradient_block_values);
  const uint32_t rows = batch.num_rows;
  SoftmaxCrossEntropyBackward(ws->logits.data(), rows, model.shape.num_labels, batch.label_ptr,
                              batch.label_idx, batch.labeled_rows, ws->row_loss.data(),
                              ws->loss_sum.data(), ctx.stream);
  const size_t last = model.shape.num_layers() - 1;
  // Output layer: its delta is the logits' gradient; the hidden deltas alternate between buffers.
  float* delta_in = ws->delta.data();
  DenseBackward(ctx, model, last, rule, ws->activations[last - 1].data(), rows, ws->logits.data(),
                delta_in);
  for (size_t l = last - 1; l >= 1; --l) {
    HiddenBackward(ctx, rule, ws->activations[l].data(), uint64_t(rows) * model.shape.hidden[l], delta_in);
    float* next = delta_in == ws->delta.data() ? ws->delta_prev.data() : ws->delta.data();
    DenseBackward(ctx, model, l, rule, ws->activations[l - 1].data(), rows, delta_in, next);
    delta_in = next;
  }
  HiddenBackward(ctx, rule, ws->activations[0].data(), uint64_t(rows) * model.shape.hidden[0], delta_in);
  SparseInputBackward(ctx, model, batch, rule, delta_in, ws);
}

}  // namespace xmlt::kernels::cuda
