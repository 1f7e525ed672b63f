// The sparse MLP's passes on the CPU; see sparse_mlp.h.
#include "kernels/cpu/sparse_mlp.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/parallel_sort.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

#include "kernels/dropout_mask.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/vector_ops.h"

namespace xmlt::kernels::cpu {
namespace {

// The first layer's rows are scattered over a table of up to hundreds of MB (782,585 features x
// 128 floats at Delicious-200K's shape): each row the batch touches is a cache miss the hardware
// cannot foresee. Asking for rows a few entries ahead overlaps those misses with the arithmetic.
constexpr uint64_t kPrefetchAhead = 4;

template <class T>
void PrefetchRow(const T* row, uint64_t units, bool for_write) {
  constexpr uint64_t kLine = 64 / sizeof(T);
  for (uint64_t u = 0; u < units; u += kLine) {
    if (for_write) {
      __builtin_prefetch(row + u, 1);
    } else {
      __builtin_prefetch(row + u, 0);
    }
  }
}

template <class T>
void ReluInPlace(T* values, uint64_t count) {
  for (uint64_t i = 0; i < count; ++i) values[i] = std::max(values[i], T(0));
}

// Inverted dropout on one hidden layer's activations (rows x units, after the ReLU), in place.
template <class T>
void ApplyDropout(const StepRule<T>& rule, size_t layer, uint32_t rows, uint64_t units, T* activations) {
  const uint64_t threshold = DropoutThreshold(double(rule.dropout));
  const T scale = T(1) / (T(1) - rule.dropout);
  tbb::parallel_for(tbb::blocked_range<uint32_t>(0, rows, 8), [&](const tbb::blocked_range<uint32_t>& range) {
    for (uint32_t r = range.begin(); r < range.end(); ++r) {
      const uint64_t row_key = DropoutRowKey(rule.dropout_key, layer, r);
      T* a = activations + uint64_t(r) * units;
      for (uint64_t u = 0; u < units; ++u) a[u] = DropoutKeepsUnit(row_key, u, threshold) ? a[u] * scale : T(0);
    }
  });
}

// z[r] = bias + sum_f x_rf * W0[f] for every row, then ReLU; W0 in fp32 (w) or kept in bf16 (w16).
template <class T>
void SparseInputForward(const Model<T>& model, const T* w, const uint16_t* w16, const T* bias,
                        const data::SparseBatch& batch, T* out) {
  const uint64_t units = model.shape.LayerOutputs(0);
  tbb::parallel_for(tbb::blocked_range<uint32_t>(0, batch.num_rows, 16),
                    [&](const tbb::blocked_range<uint32_t>& rows) {
                      for (uint32_t r = rows.begin(); r < rows.end(); ++r) {
                        T* z = out + uint64_t(r) * units;
                        std::copy(bias, bias + units, z);
                        const uint64_t end = batch.feature_ptr[rows.end()];
                        for (uint64_t e = batch.feature_ptr[r]; e < batch.feature_ptr[r + 1]; ++e) {
                          const T x = T(batch.feature_val[e]);
                          if (w16 != nullptr) {
                            if (e + kPrefetchAhead < end)
                              PrefetchRow(w16 + uint64_t(batch.feature_idx[e + kPrefetchAhead]) * units, units, false);
                            vector_ops::AxpyBf16(z, w16 + uint64_t(batch.feature_idx[e]) * units, x, units);
                            continue;
                          }
                          if (e + kPrefetchAhead < end)
                            PrefetchRow(w + uint64_t(batch.feature_idx[e + kPrefetchAhead]) * units, units, false);
                          const T* row = w + uint64_t(batch.feature_idx[e]) * units;
                          vector_ops::Axpy(z, row, x, units);
                        }
                        ReluInPlace(z, units);
                      }
                    });
}

// out = in * W^T + bias for a dense layer stored outputs x inputs (w, bias: its fp32 tensors);
// ReLU for hidden layers.
template <class T>
void DenseForward(const Model<T>& model, size_t layer, const T* w, const T* bias, const T* in, uint32_t rows, T* out,
                  bool relu) {
  const int64_t n_in = model.shape.LayerInputs(layer), n_out = model.shape.LayerOutputs(layer);
  tbb::parallel_for(tbb::blocked_range<uint32_t>(0, rows), [&](const tbb::blocked_range<uint32_t>& r) {
    for (uint32_t i = r.begin(); i < r.end(); ++i) std::copy(bias, bias + n_out, out + i * n_out);
  });
  Gemm<T>(Op::kNone, Op::kTranspose, rows, n_out, n_in, T(1), in, n_in, w, n_in, T(1), out, n_out);
  if (relu) {
    tbb::parallel_for(tbb::blocked_range<uint64_t>(0, uint64_t(rows) * n_out, 1 << 14),
                      [&](const tbb::blocked_range<uint64_t>& r) {
                        ReluInPlace(out + r.begin(), r.size());
                      });
  }
}

// dst[j] = beta * dst[j] + alpha * sum_r m[r][j] for a rows x cols matrix; blocks of columns in
// parallel, rows streamed so that the inner loop is contiguous and vectorizes. A TBB range may
// hold more than the grain's columns (auto_partitioner merges ranges), so each range is walked in
// blocks of kBlock: the stack array never sees more than kBlock columns.
template <class T>
void ColumnSums(const T* m, uint32_t rows, int64_t cols, T alpha, T beta, T* dst) {
  constexpr int64_t kBlock = 1024;
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, cols, kBlock), [&](const tbb::blocked_range<int64_t>& range) {
    for (int64_t j0 = range.begin(); j0 < range.end(); j0 += kBlock) {
      const int64_t width = std::min(kBlock, range.end() - j0);
      T sums[kBlock] = {};
      for (uint32_t r = 0; r < rows; ++r) {
        const T* row = m + int64_t(r) * cols + j0;
        for (int64_t j = 0; j < width; ++j) sums[j] += row[j];
      }
      for (int64_t j = 0; j < width; ++j) dst[j0 + j] = beta * dst[j0 + j] + alpha * sums[j];
    }
  });
}

// Applies the rule to a dense tensor whose gradient is `scale_g * (product)`: `accumulate(alpha,
// beta, dst)` must compute dst = beta * dst + alpha * g.
// `decay` is the weight decay of this tensor (0 for biases): g += decay * param. `offset` is the
// tensor's offset in the parameters, where its velocity is (rule.velocity or rule.velocity_bf16);
// a bf16 velocity is widened into `scratch` for the product and rounded back after the step.
template <class T, class Accumulate>
void ApplyDense(const StepRule<T>& rule, T* param, uint64_t offset, uint64_t size, T decay, std::vector<T>* scratch,
                Accumulate accumulate) {
  T* grad = rule.gradient == nullptr ? nullptr : rule.gradient->params.data() + offset;
  T* velocity = rule.velocity == nullptr ? nullptr : rule.velocity->params.data() + offset;
  if (rule.velocity_bf16 != nullptr) {
    uint16_t* stored = rule.velocity_bf16 + offset;
    scratch->resize(std::max<size_t>(scratch->size(), size));
    velocity = scratch->data();
    for (uint64_t i = 0; i < size; ++i) velocity[i] = T(WidenBf16(stored[i]));
    accumulate(T(1), rule.momentum, velocity);
    tbb::parallel_for(tbb::blocked_range<uint64_t>(0, size, 1 << 14), [&](const tbb::blocked_range<uint64_t>& r) {
      if (decay != T(0))
        for (uint64_t i = r.begin(); i < r.end(); ++i) velocity[i] += decay * param[i];
      for (uint64_t i = r.begin(); i < r.end(); ++i) param[i] -= rule.lr * velocity[i];
      vector_ops::RoundBf16(velocity + r.begin(), stored + r.begin(), r.end() - r.begin(), rule.rounding_key,
                            offset + r.begin());
    });
  } else if (rule.gradient != nullptr) {
    accumulate(T(1), T(0), grad);
    if (decay != T(0))
      tbb::parallel_for(tbb::blocked_range<uint64_t>(0, size, 1 << 14), [&](const tbb::blocked_range<uint64_t>& r) {
        for (uint64_t i = r.begin(); i < r.end(); ++i) grad[i] += decay * param[i];
      });
  } else if (rule.velocity != nullptr) {
    accumulate(T(1), rule.momentum, velocity);
    tbb::parallel_for(tbb::blocked_range<uint64_t>(0, size, 1 << 14),
                      [&](const tbb::blocked_range<uint64_t>& r) {
                        if (decay != T(0))
                          for (uint64_t i = r.begin(); i < r.end(); ++i) velocity[i] += decay * param[i];
                        for (uint64_t i = r.begin(); i < r.end(); ++i) param[i] -= rule.lr * velocity[i];
                      });
  } else {
    // w - lr (g + decay w) = (1 - lr decay) w - lr g: the decay is the product's beta (1 without it).
    accumulate(-rule.lr, T(1) - rule.lr * decay, param);
  }
}

template <class T>
T* TensorIn(Model<T>* model, const TensorView& view) {
  return model == nullptr ? nullptr : model->params.data() + view.offset;
}

template <class T>
uint16_t* TensorIn(uint16_t* state, const TensorView& view) {
  return state == nullptr ? nullptr : state + view.offset;
}

// Backward through a dense layer given delta = dLoss/dOut (rows x outputs): writes dLoss/dIn into
// delta_in (unless null), then applies the rule to the weight and bias (where ws places them).
template <class T>
void DenseBackward(const Model<T>& model, size_t layer, const StepRule<T>& rule, const T* in,
                   uint32_t rows, const T* delta, T* delta_in, MlpWorkspace<T>* ws) {
  const int64_t n_in = model.shape.LayerInputs(layer), n_out = model.shape.LayerOutputs(layer);
  const LayerView& view = model.layers[layer];
  T* w = ws->weight_at[layer];
  std::vector<T>* scratch = &ws->velocity_scratch;
  // The input gradient uses the weights before this step changes them.
  if (delta_in != nullptr)
    Gemm<T>(Op::kNone, Op::kNone, rows, n_in, n_out, T(1), delta, n_out, w, n_in, T(0), delta_in,
            n_in);
  ApplyDense(rule, w, view.weight.offset, view.weight.size(), rule.weight_decay, scratch,
             [&](T alpha, T beta, T* dst) {
               Gemm<T>(Op::kTranspose, Op::kNone, n_out, n_in, rows, alpha, delta, n_out, in, n_in,
                       beta, dst, n_in);
             });
  ApplyDense(rule, ws->bias_at[layer], view.bias.offset, view.bias.size(), T(0), scratch,
             [&](T alpha, T beta, T* dst) { ColumnSums(delta, rows, n_out, alpha, beta, dst); });
}

// Gradient of the first layer: bias from all rows, weight rows only for the features present.
// Batch entries are grouped by feature (a sort of at most a few ten thousand ids), so that each
// feature row is reduced and updated by one thread without atomics.
// Rows kept in bf16 are widened into a thread's buffer, step there, and are stored rounded.
template <class T>
void SparseInputBackward(const Model<T>& model, const data::SparseBatch& batch, const StepRule<T>& rule,
                         const T* delta, MlpWorkspace<T>* ws) {
  const uint64_t units = model.shape.LayerOutputs(0);
  const LayerView& view = model.layers[0];
  // Entry ids are 32-bit here (the sort and grouping buffers); a larger batch must not wrap.
  if (batch.feature_idx.size() > UINT32_MAX) throw std::length_error("batch has more than 2^32-1 feature entries");
  const uint32_t nnz = uint32_t(batch.feature_idx.size());
  ws->entry_row.resize(nnz);
  for (uint32_t r = 0; r < batch.num_rows; ++r)
    std::fill(ws->entry_row.begin() + batch.feature_ptr[r], ws->entry_row.begin() + batch.feature_ptr[r + 1], r);
  // Sorting the (feature, entry) pairs as plain 64-bit keys: no comparator reaching into the
  // batch, and the same order (by feature, then by entry).
  ws->by_feature.resize(nnz);
  const uint32_t* feature = batch.feature_idx.data();
  for (uint32_t e = 0; e < nnz; ++e) ws->by_feature[e] = uint64_t(feature[e]) << 32 | e;
  tbb::parallel_sort(ws->by_feature.begin(), ws->by_feature.end());
  auto entry = [ws](uint32_t i) { return uint32_t(ws->by_feature[i]); };
  auto feature_at = [ws](uint32_t i) { return uint32_t(ws->by_feature[i] >> 32); };
  ws->group_begin.clear();
  for (uint32_t i = 0; i < nnz; ++i)
    if (i == 0 || feature_at(i) != feature_at(i - 1)) ws->group_begin.push_back(i);
  ws->group_begin.push_back(nnz);

  T* w = ws->weight_at[0];
  uint16_t* w16 = TensorIn<T>(rule.weights_bf16, view.weight);
  T* grad = TensorIn(rule.gradient, view.weight);
  T* velocity = TensorIn(rule.velocity, view.weight);
  uint16_t* velocity_bf16 = TensorIn<T>(rule.velocity_bf16, view.weight);
  const T decay = rule.weight_decay;
  const size_t groups = ws->group_begin.size() - 1;
  tbb::parallel_for(tbb::blocked_range<size_t>(0, groups, 8), [&](const tbb::blocked_range<size_t>& range) {
    // One buffer per thread, grown once: no allocation per batch in the training loop.
    thread_local std::vector<T> g, widened;
    g.resize(units);
    if (w16 != nullptr) widened.resize(units);
    for (size_t k = range.begin(); k < range.end(); ++k) {
      if (k + kPrefetchAhead < range.end()) {
        const uint64_t ahead = uint64_t(feature_at(ws->group_begin[k + kPrefetchAhead])) * units;
        if (w16 != nullptr) {
          PrefetchRow(w16 + ahead, units, true);
        } else {
          PrefetchRow(w + ahead, units, true);
        }
        if (velocity != nullptr) PrefetchRow(velocity + ahead, units, true);
        if (velocity_bf16 != nullptr) PrefetchRow(velocity_bf16 + ahead, units, true);
      }
      std::fill(g.begin(), g.end(), T(0));
      for (uint32_t i = ws->group_begin[k]; i < ws->group_begin[k + 1]; ++i) {
        const uint32_t e = entry(i);
        const T x = T(batch.feature_val[e]);
        const T* d = delta + uint64_t(ws->entry_row[e]) * units;
        vector_ops::Axpy(g.data(), d, x, units);
      }
      const uint64_t offset = uint64_t(feature_at(ws->group_begin[k])) * units;
      T* row = w16 != nullptr ? widened.data() : w + offset;
      if (w16 != nullptr) vector_ops::WidenBf16s(w16 + offset, row, units);
      // Lazy weight decay: the rows of the batch's features, the only ones this step touches.
      if (decay != T(0))
        vector_ops::Axpy(g.data(), row, decay, units);
      if (grad != nullptr) {
        std::copy(g.begin(), g.end(), grad + offset);
      } else if (velocity_bf16 != nullptr && rule.input_adagrad) {
        vector_ops::AdagradBf16(row, velocity_bf16 + offset, g.data(), T(1), rule.input_lr, T(kAdagradEpsilon),
                                units, rule.rounding_key, view.weight.offset + offset);
      } else if (velocity_bf16 != nullptr) {
        vector_ops::MomentumBf16(row, velocity_bf16 + offset, g.data(), rule.momentum, rule.lr, units,
                                 rule.rounding_key, view.weight.offset + offset);
      } else if (rule.input_adagrad) {
        vector_ops::Adagrad(row, velocity + offset, g.data(), T(1), rule.input_lr, T(kAdagradEpsilon), units);
      } else if (velocity != nullptr) {
        vector_ops::Momentum(row, velocity + offset, g.data(), rule.momentum, rule.lr, units);
      } else {
        vector_ops::Sgd(row, g.data(), rule.lr, units);
      }
      if (w16 != nullptr)
        vector_ops::RoundBf16(row, w16 + offset, units, rule.weights_rounding_key, view.weight.offset + offset);
    }
  });
  ApplyDense(rule, ws->bias_at[0], view.bias.offset, units, T(0), &ws->velocity_scratch,
             [&](T alpha, T beta, T* dst) { ColumnSums(delta, batch.num_rows, int64_t(units), alpha, beta, dst); });
}

// delta *= relu'(activation): the ReLU passed the gradient only where its output was positive.
template <class T>
void ReluBackward(const T* activation, uint64_t count, T* delta) {
  tbb::parallel_for(tbb::blocked_range<uint64_t>(0, count, 1 << 14),
                    [&](const tbb::blocked_range<uint64_t>& r) {
                      for (uint64_t i = r.begin(); i < r.end(); ++i)
                        if (activation[i] <= T(0)) delta[i] = T(0);
                    });
}

// Dropout and ReLU backward together: the activation kept is positive exactly where the unit
// passed the gradient, scaled by 1 / (1 - dropout); a dropped or inactive unit passes nothing.
template <class T>
void DropoutReluBackward(const T* activation, uint64_t count, T dropout, T* delta) {
  const T scale = T(1) / (T(1) - dropout);
  tbb::parallel_for(tbb::blocked_range<uint64_t>(0, count, 1 << 14),
                    [&](const tbb::blocked_range<uint64_t>& r) {
                      for (uint64_t i = r.begin(); i < r.end(); ++i)
                        delta[i] = activation[i] > T(0) ? delta[i] * scale : T(0);
                    });
}

template <class T>
void HiddenBackward(const StepRule<T>& rule, const T* activation, uint64_t count, T* delta) {
  if (rule.dropout != T(0)) {
    DropoutReluBackward(activation, count, rule.dropout, delta);
  } else {
    ReluBackward(activation, count, delta);
  }
}

}  // namespace

bool DropoutKeeps(uint64_t key, size_t layer, uint32_t row, uint64_t unit, double dropout) {
  return DropoutKeepsUnit(DropoutRowKey(key, layer, row), unit, DropoutThreshold(dropout));
}

template <class T>
MlpWorkspace<T>::MlpWorkspace(const ModelShape& shape, uint32_t rows, OutputMath math)
    : max_rows(rows), output(shape.num_labels, shape.hidden.back(), rows, math) {
  uint64_t widest = 0;
  for (uint32_t h : shape.hidden) {
    activations.emplace_back(uint64_t(rows) * h);
    widest = std::max<uint64_t>(widest, h);
  }
  // The bf16 training step keeps its logits block by block; Forward sizes this when it needs it.
  if (math == OutputMath::kFp32) logits.resize(uint64_t(rows) * shape.num_labels);
  delta.resize(uint64_t(rows) * widest);
  delta_prev.resize(uint64_t(rows) * widest);
}

// Points ws->weight_at and ws->bias_at at the model's own tensors or, with rule.weights_bf16, at
// the small tensors widened into ws->widened (the first and the last layer's weights stay null).
template <class T>
void PlaceTensors(const Model<T>& model, const StepRule<T>* rule, MlpWorkspace<T>* ws) {
  const size_t layers = model.shape.num_layers();
  ws->weight_at.assign(layers, nullptr);
  ws->bias_at.assign(layers, nullptr);
  const uint16_t* stored = rule != nullptr ? rule->weights_bf16 : nullptr;
  if (stored == nullptr) {
    // The passes write through these only in TrainStep, which owns the model mutably.
    T* params = const_cast<T*>(model.params.data());
    for (size_t l = 0; l < layers; ++l) {
      ws->weight_at[l] = params + model.layers[l].weight.offset;
      ws->bias_at[l] = params + model.layers[l].bias.offset;
    }
    return;
  }
  auto small_weight = [layers](size_t l) { return l != 0 && l + 1 != layers; };
  size_t total = 0;
  for (size_t l = 0; l < layers; ++l)
    total += model.layers[l].bias.size() + (small_weight(l) ? model.layers[l].weight.size() : 0);
  ws->widened.resize(total);  // grown once
  T* at = ws->widened.data();
  auto widen = [&](const TensorView& view) {
    vector_ops::WidenBf16s(stored + view.offset, at, view.size());
    T* placed = at;
    at += view.size();
    return placed;
  };
  for (size_t l = 0; l < layers; ++l) {
    if (small_weight(l)) ws->weight_at[l] = widen(model.layers[l].weight);
    ws->bias_at[l] = widen(model.layers[l].bias);
  }
}

// After a step with weights in bf16: the small tensors it stepped in ws->widened, stored back rounded.
template <class T>
void StoreWidened(const Model<T>& model, const StepRule<T>& rule, MlpWorkspace<T>* ws) {
  const size_t layers = model.shape.num_layers();
  auto store = [&](const T* values, const TensorView& view) {
    vector_ops::RoundBf16(values, rule.weights_bf16 + view.offset, view.size(), rule.weights_rounding_key, view.offset);
  };
  for (size_t l = 0; l < layers; ++l) {
    if (ws->weight_at[l] != nullptr && l != 0 && l + 1 != layers) store(ws->weight_at[l], model.layers[l].weight);
    store(ws->bias_at[l], model.layers[l].bias);
  }
}

// The hidden layers' forward pass, up to the last hidden layer's activations; with a training
// rule whose dropout is not 0, each layer's activations are masked before the next layer reads them.
template <class T>
void HiddenForward(const Model<T>& model, const data::SparseBatch& batch, const StepRule<T>* rule,
                   MlpWorkspace<T>* ws) {
  if (batch.num_rows > ws->max_rows) throw std::logic_error("batch larger than the workspace");
  const bool dropout = rule != nullptr && rule->dropout != T(0);
  PlaceTensors(model, rule, ws);
  const uint16_t* w16 = rule != nullptr && rule->weights_bf16 != nullptr ? rule->weights_bf16 + model.layers[0].weight.offset : nullptr;
  SparseInputForward(model, ws->weight_at[0], w16, ws->bias_at[0], batch, ws->activations[0].data());
  if (dropout) ApplyDropout(*rule, 0, batch.num_rows, model.shape.hidden[0], ws->activations[0].data());
  const size_t last = model.shape.num_layers() - 1;
  for (size_t l = 1; l < last; ++l) {
    DenseForward(model, l, ws->weight_at[l], ws->bias_at[l], ws->activations[l - 1].data(), batch.num_rows,
                 ws->activations[l].data(), true);
    if (dropout) ApplyDropout(*rule, l, batch.num_rows, model.shape.hidden[l], ws->activations[l].data());
  }
}

template <class T>
void LogitsForward(const Model<T>& model, const data::SparseBatch& batch, const StepRule<T>* rule,
                   MlpWorkspace<T>* ws) {
  HiddenForward(model, batch, rule, ws);
  const size_t last = model.shape.num_layers() - 1;
  ws->logits.resize(std::max<uint64_t>(ws->logits.size(), uint64_t(ws->max_rows) * model.shape.num_labels));
  DenseForward(model, last, model.Weight(last), model.Bias(last), ws->activations[last - 1].data(), batch.num_rows,
               ws->logits.data(), false);
}

template <class T>
void Forward(const Model<T>& model, const data::SparseBatch& batch, MlpWorkspace<T>* ws) {
  LogitsForward<T>(model, batch, nullptr, ws);
}

template <class T>
void HiddenActivations(const Model<T>& model, const data::SparseBatch& batch, std::vector<std::vector<T>>* activations) {
  const size_t last = model.shape.num_layers() - 1;
  activations->resize(last);
  for (size_t l = 0; l < last; ++l)
    (*activations)[l].resize(std::max<uint64_t>((*activations)[l].size(), uint64_t(batch.num_rows) * model.shape.hidden[l]));
  SparseInputForward(model, model.Weight(0), static_cast<const uint16_t*>(nullptr), model.Bias(0), batch,
                     (*activations)[0].data());
  for (size_t l = 1; l < last; ++l)
    DenseForward(model, l, model.Weight(l), model.Bias(l), (*activations)[l - 1].data(), batch.num_rows,
                 (*activations)[l].data(), true);
}

template <class T>
void TrainingForward(const Model<T>& model, const data::SparseBatch& batch, const StepRule<T>& rule,
                     MlpWorkspace<T>* ws) {
  if (rule.weights_bf16 != nullptr) throw std::invalid_argument("TrainingForward reads an fp32 model");
  LogitsForward(model, batch, &rule, ws);
}

template <class T>
double WeightDecayPenalty(const Model<T>& model, const data::SparseBatch& batch, double weight_decay) {
  double sum = 0;
  for (size_t l = 1; l < model.shape.num_layers(); ++l) {
    const T* w = model.Weight(l);
    for (uint64_t i = 0; i < model.layers[l].weight.size(); ++i) sum += double(w[i]) * double(w[i]);
  }
  std::vector<uint32_t> features(batch.feature_idx.begin(), batch.feature_idx.end());
  std::sort(features.begin(), features.end());
  features.erase(std::unique(features.begin(), features.end()), features.end());
  const uint64_t units = model.shape.LayerOutputs(0);
  for (uint32_t f : features) {
    const T* row = model.Weight(0) + uint64_t(f) * units;
    for (uint64_t u = 0; u < units; ++u) sum += double(row[u]) * double(row[u]);
  }
  return weight_decay / 2 * sum;
}

template <class T>
LossResult TrainStep(Model<T>* model, const data::SparseBatch& batch, const StepRule<T>& rule,
                     MlpWorkspace<T>* ws) {
  if (!(rule.dropout >= T(0) && rule.dropout < T(1))) throw std::invalid_argument("dropout must be in [0, 1)");
  if (!(rule.weight_decay >= T(0)) || !std::isfinite(rule.weight_decay))
    throw std::invalid_argument("weight decay must be a finite number >= 0");
  if (rule.velocity_bf16 != nullptr && (rule.velocity != nullptr || rule.gradient != nullptr ||
                                        ws->output.math != OutputMath::kBf16))
    throw std::invalid_argument("a bf16 velocity takes the place of the fp32 one, steps the weights (no gradient "
                                "output) and needs the output layer's products in bf16");
  if (rule.input_adagrad && ((rule.velocity == nullptr && rule.velocity_bf16 == nullptr) || rule.gradient != nullptr))
    throw std::invalid_argument("the first layer's Adagrad keeps its squares in the velocity buffer and updates "
                                "the weights: it needs a velocity and no gradient output");
  if (rule.weights_bf16 != nullptr && (rule.gradient != nullptr || ws->output.math != OutputMath::kBf16))
    throw std::invalid_argument("weights kept in bf16 are stepped in place (no gradient output) and need the output "
                                "layer's products in bf16");
  if (rule.weights_bf16 == nullptr && model->params.size() != model->shape.NumParameters())
    throw std::invalid_argument("the model's parameters are not there (kept in bf16?)");
  HiddenForward(*model, batch, &rule, ws);
  const size_t last = model->shape.num_layers() - 1;
  const uint32_t rows = batch.num_rows;
  const T* top = ws->activations[last - 1].data();
  // Output layer, fused: logits and softmax statistics, then gradient and update block by block.
  OutputTensors<T> output;
  output.weight = ws->weight_at[last];
  output.weight_bf16 = rule.weights_bf16 != nullptr ? rule.weights_bf16 + model->layers[last].weight.offset : nullptr;
  output.bias = ws->bias_at[last];
  const LossResult loss = OutputLayerForward(*model, output, batch, top, ws->logits.data(), &ws->output);
  T* delta_in = ws->delta.data();
  OutputLayerBackward(*model, output, batch, rule, top, ws->logits.data(), delta_in, &ws->output);
  // Hidden layers: the deltas alternate between the two buffers.
  for (size_t l = last - 1; l >= 1; --l) {
    HiddenBackward(rule, ws->activations[l].data(), uint64_t(rows) * model->shape.hidden[l], delta_in);
    T* next = delta_in == ws->delta.data() ? ws->delta_prev.data() : ws->delta.data();
    DenseBackward(*model, l, rule, ws->activations[l - 1].data(), rows, delta_in, next, ws);
    delta_in = next;
  }
  HiddenBackward(rule, ws->activations[0].data(), uint64_t(rows) * model->shape.hidden[0], delta_in);
  SparseInputBackward(*model, batch, rule, delta_in, ws);
  if (rule.weights_bf16 != nullptr) StoreWidened(*model, rule, ws);
  return loss;
}

template struct MlpWorkspace<float>;
template struct MlpWorkspace<double>;
template void Forward<float>(const Model<float>&, const data::SparseBatch&, MlpWorkspace<float>*);
template void Forward<double>(const Model<double>&, const data::SparseBatch&, MlpWorkspace<double>*);
template void HiddenActivations<float>(const Model<float>&, const data::SparseBatch&,
                                       std::vector<std::vector<float>>*);
template void HiddenActivations<double>(const Model<double>&, const data::SparseBatch&,
                                        std::vector<std::vector<double>>*);
template void TrainingForward<float>(const Model<float>&, const data::SparseBatch&, const StepRule<float>&,
                                     MlpWorkspace<float>*);
template void TrainingForward<double>(const Model<double>&, const data::SparseBatch&, const StepRule<double>&,
                                      MlpWorkspace<double>*);
template double WeightDecayPenalty<float>(const Model<float>&, const data::SparseBatch&, double);
template double WeightDecayPenalty<double>(const Model<double>&, const data::SparseBatch&, double);
template LossResult TrainStep<float>(Model<float>*, const data::SparseBatch&, const StepRule<float>&,
                                     MlpWorkspace<float>*);
template LossResult TrainStep<double>(Model<double>*, const data::SparseBatch&,
                                      const StepRule<double>&, MlpWorkspace<double>*);

}  // namespace xmlt::kernels::cpu
