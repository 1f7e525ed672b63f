// SLIDE's training step; see sampled_step.h.
#include "kernels/lsh/sampled_step.h"

#include <tbb/blocked_range.h>
#include <tbb/enumerable_thread_specific.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "kernels/dropout_mask.h"
#include "kernels/cpu/sparse_mlp.h"
#include "kernels/cpu/vector_ops.h"

namespace xmlt::kernels::lsh {

namespace {

// Inverted dropout on one row's activations of hidden layer `layer`, in place.
void DropOut(const SampledRegularization& rule, size_t layer, uint32_t row,
             std::vector<float>* activation) {
  const uint64_t key = DropoutRowKey(rule.dropout_key, layer, row);
  const uint64_t threshold = DropoutThreshold(double(rule.dropout));
  const float scale = 1.0f / (1.0f - rule.dropout);
  float* a = activation->data();
  for (uint64_t u = 0; u < activation->size(); ++u)
    a[u] = DropoutKeepsUnit(key, u, threshold) ? a[u] * scale : 0.0f;
}

// delta *= the derivative of ReLU then dropout at the activation they gave: a unit passed the
// gradient (scaled by 1 / (1 - dropout)) exactly where its activation is positive.
void HiddenBackward(const std::vector<float>& activation, float dropout, float* delta) {
  const float scale = 1.0f / (1.0f - dropout);
  for (size_t u = 0; u < activation.size(); ++u)
    delta[u] = activation[u] > 0.0f ? delta[u] * scale : 0.0f;
}

}  // namespace

void SampledForwardHidden(const Model<float>& model, const data::SparseBatch& batch, uint32_t row,
                          SampledRowScratch* s, const SampledRegularization& regularization) {
  if (!(regularization.dropout >= 0.0f && regularization.dropout < 1.0f))
    throw std::invalid_argument("SampledForwardHidden: dropout must be in [0, 1)");
  const bool dropout = regularization.dropout != 0.0f;
  const ModelShape& shape = model.shape;
  const size_t hidden_layers = shape.hidden.size();
  s->hidden.resize(hidden_layers);
  // Layer 0: the row's features gather rows of the first weight (features x units).
  const uint32_t units0 = shape.hidden[0];
  std::vector<float>& h0 = s->hidden[0];
  h0.assign(model.Bias(0), model.Bias(0) + units0);
  const float* w0 = model.Weight(0);
  for (uint64_t e = batch.feature_ptr[row]; e < batch.feature_ptr[row + 1]; ++e) {
    const uint32_t feature = batch.feature_idx[e];
    if (feature >= shape.num_features)
      continue;  // beyond the model: ignored, as the dense step does
    const float x = batch.feature_val[e];
    const float* w = w0 + uint64_t(feature) * units0;
    for (uint32_t u = 0; u < units0; ++u) h0[u] += x * w[u];
  }
  for (float& v : h0) v = std::max(v, 0.0f);
  if (dropout) DropOut(regularization, 0, row, &h0);
  // Dense hidden layers: outputs x inputs.
  for (size_t l = 1; l < hidden_layers; ++l) {
    const uint32_t in = shape.hidden[l - 1], out = shape.hidden[l];
    const float* w = model.Weight(l);
    const float* b = model.Bias(l);
    std::vector<float>& h = s->hidden[l];
    h.resize(out);
    for (uint32_t o = 0; o < out; ++o) {
      float z = 0.0f;
      const float* wo = w + uint64_t(o) * in;
      const float* below = s->hidden[l - 1].data();
#pragma omp simd reduction(+ : z)
      for (uint32_t i = 0; i < in; ++i) z += wo[i] * below[i];
      h[o] = std::max(z + b[o], 0.0f);
    }
    if (dropout) DropOut(regularization, l, row, &h);
  }
}

void SampledActiveLabels(const LabelTables& tables, const data::SparseBatch& batch,
                         uint32_t row, size_t bucket_cap, size_t min_active, std::mt19937_64* rng,
                         SampledRowScratch* s) {
  const size_t labels = tables.labels();
  if (s->seen.size() != labels) {
    s->seen.assign(labels, 0);
    s->stamp = 0;
  }
  if (++s->stamp == 0) {  // wrapped: every old stamp could collide
    std::fill(s->seen.begin(), s->seen.end(), 0u);
    s->stamp = 1;
  }
  s->active.clear();
  tables.Query(s->hidden.back().data(), bucket_cap, &s->seen, s->stamp, &s->active);
  for (uint64_t i = batch.label_ptr[row]; i < batch.label_ptr[row + 1]; ++i) {
    const uint32_t label = batch.label_idx[i];
    if (label >= labels || s->seen[label] == s->stamp) continue;
    s->seen[label] = s->stamp;
    s->active.push_back(label);
  }
  const size_t target = std::min(min_active, labels);
  s->padded_from = s->active.size();
  const size_t left_out = labels - s->active.size();
  std::uniform_int_distribution<uint32_t> any(0, uint32_t(labels - 1));
  // Rejection sampling while the set is at most half the labels; a sweep from a random start past
  // that, where rejections would dominate.
  while (s->active.size() < target && 2 * s->active.size() < labels) {
    const uint32_t label = any(*rng);
    if (s->seen[label] == s->stamp) continue;
    s->seen[label] = s->stamp;
    s->active.push_back(label);
  }
  for (uint32_t label = any(*rng), n = 0; s->active.size() < target && n < labels;
       ++n, label = (label + 1) % labels) {
    if (s->seen[label] == s->stamp) continue;
    s->seen[label] = s->stamp;
    s->active.push_back(label);
  }
  const size_t drawn = s->active.size() - s->padded_from;
  s->padding_log_weight = drawn == 0 ? 0.0f : float(std::log(double(left_out) / double(drawn)));
}

double SampledBackward(Model<float>* model, const data::SparseBatch& batch, uint32_t row, float lr,
                       SampledRowScratch* s, std::vector<uint8_t>* touched,
                       const SampledRegularization& regularization) {
  const ModelShape& shape = model->shape;
  const bool adagrad = regularization.input_lr > 0.0f;
  if (adagrad && regularization.input_squares == nullptr)
    throw std::invalid_argument("SampledBackward: the first layer's Adagrad needs its squares");
  const uint64_t begin = batch.label_ptr[row], end = batch.label_ptr[row + 1];
  if (begin == end) return 0.0;
  const size_t last = shape.num_layers() - 1;
  const uint32_t width = shape.hidden.back();
  const std::vector<float>& top = s->hidden.back();
  float* w_out = model->Weight(last);
  float* b_out = model->Bias(last);
  // Logits of the active labels, their softmax, and the loss against the row's labels.
  const size_t n = s->active.size();
  s->logits.resize(n);
  float max = -INFINITY;
  // The active rows are scattered over the whole layer (hundreds of MB at 670,091 labels): each
  // is a miss to memory, so the rows a few labels ahead are requested while this one is summed.
  constexpr size_t kAhead = 8;
  const uint64_t row_bytes = uint64_t(width) * sizeof(float);
  for (size_t a = 0; a < n; ++a) {
    if (a + kAhead < n) {
      const char* next =
          reinterpret_cast<const char*>(w_out + uint64_t(s->active[a + kAhead]) * width);
      for (uint64_t line = 0; line < row_bytes; line += 64) __builtin_prefetch(next + line);
      __builtin_prefetch(b_out + s->active[a + kAhead]);
    }
    const float* w = w_out + uint64_t(s->active[a]) * width;
    float z = 0.0f;
#pragma omp simd reduction(+ : z)
    for (uint32_t u = 0; u < width; ++u) z += w[u] * top[u];
    z += b_out[s->active[a]];
    if (a >= s->padded_from) z += s->padding_log_weight;
    s->logits[a] = z;
    max = std::max(max, z);
  }
  double sum = 0.0;
  for (size_t a = 0; a < n; ++a) sum += std::exp(double(s->logits[a]) - max);
  const double log_sum = std::log(sum) + max;
  const double target = 1.0 / double(end - begin);
  double loss = 0.0;
  for (uint64_t i = begin; i < end; ++i) {
    const uint32_t label = batch.label_idx[i];
    const auto at = std::find(s->active.begin(), s->active.end(), label);
    if (at == s->active.end())
      throw std::logic_error("SampledBackward: a label of the row is not active");
    loss -= target * (double(s->logits[size_t(at - s->active.begin())]) - log_sum);
  }
  // d loss / d z_a = p_a - y_a; the label's targets are subtracted below, by search per label.
  std::vector<float>& delta = s->delta;
  delta.assign(width, 0.0f);
  for (size_t a = 0; a < n; ++a) s->logits[a] = float(std::exp(double(s->logits[a]) - log_sum));
  for (uint64_t i = begin; i < end; ++i) {
    const auto at = std::find(s->active.begin(), s->active.end(), batch.label_idx[i]);
    s->logits[size_t(at - s->active.begin())] -= float(target);
  }
  // The hidden gradient with the output weights before this step, then the update of the active
  // rows.
  for (size_t a = 0; a < n; ++a) {
    const float g = s->logits[a];
    const uint32_t label = s->active[a];
    float* w = w_out + uint64_t(label) * width;
    float* d = delta.data();
    const float* x = top.data();
    const float step = lr * g;
#pragma omp simd
    for (uint32_t u = 0; u < width; ++u) {
      d[u] += g * w[u];
      w[u] -= step * x[u];
    }
    b_out[label] -= lr * g;
    if (touched != nullptr) (*touched)[label] = 1;
  }
  // Down the dense hidden layers (outputs x inputs), ReLU's gradient first.
  for (size_t l = last - 1; l >= 1; --l) {
    const uint32_t in = shape.hidden[l - 1], out = shape.hidden[l];
    HiddenBackward(s->hidden[l], regularization.dropout, delta.data());
    std::vector<float>& below = s->delta_below;
    below.assign(in, 0.0f);
    float* w = model->Weight(l);
    float* b = model->Bias(l);
    for (uint32_t o = 0; o < out; ++o) {
      const float g = delta[o];
      if (g == 0.0f) continue;
      float* wo = w + uint64_t(o) * in;
      for (uint32_t i = 0; i < in; ++i) {
        below[i] += g * wo[i];
        wo[i] -= lr * g * s->hidden[l - 1][i];
      }
      b[o] -= lr * g;
    }
    delta.swap(below);
  }
  // The first layer: only the rows of the row's features.
  const uint32_t units0 = shape.hidden[0];
  HiddenBackward(s->hidden[0], regularization.dropout, delta.data());
  float* w0 = model->Weight(0);
  for (uint64_t e = batch.feature_ptr[row]; e < batch.feature_ptr[row + 1]; ++e) {
    const uint32_t feature = batch.feature_idx[e];
    if (feature >= shape.num_features) continue;
    const float x = batch.feature_val[e];
    float* w = w0 + uint64_t(feature) * units0;
    if (adagrad) {
      float* squares = regularization.input_squares + uint64_t(feature) * units0;
      cpu::vector_ops::Adagrad(w, squares, delta.data(), x * regularization.gradient_scale, regularization.input_lr,
                          float(cpu::kAdagradEpsilon), units0);
    } else {
      for (uint32_t u = 0; u < units0; ++u) w[u] -= lr * x * delta[u];
    }
  }
  float* b0 = model->Bias(0);
  for (uint32_t u = 0; u < units0; ++u) b0[u] -= lr * delta[u];
  return loss;
}

cpu::LossResult SampledTrainStep(Model<float>* model, const data::SparseBatch& batch, float lr,
                            const LabelTables& tables, const SampledStepOptions& options,
                            uint64_t step, std::vector<uint8_t>* touched, SampledStepStats* stats,
                            SampledRegularization regularization) {
  if (tables.labels() != model->shape.num_labels)
    throw std::invalid_argument("SampledTrainStep: the tables are not over this model's labels");
  cpu::LossResult result;
  for (uint32_t r = 0; r < batch.num_rows; ++r) result.labeled_rows += batch.NumLabels(r) > 0;
  if (result.labeled_rows == 0) return result;
  const float row_lr = lr / float(result.labeled_rows);
  regularization.gradient_scale = 1.0f / float(result.labeled_rows);
  static tbb::enumerable_thread_specific<SampledRowScratch> scratch;
  std::vector<double> losses(batch.num_rows, 0.0);
  std::vector<uint32_t> active(batch.num_rows, 0), padding(batch.num_rows, 0);
  tbb::parallel_for(tbb::blocked_range<uint32_t>(0, batch.num_rows, 1), [&](const auto& range) {
    SampledRowScratch& s = scratch.local();
    for (uint32_t r = range.begin(); r != range.end(); ++r) {
      if (batch.NumLabels(r) == 0) continue;
      // Each row's padding from its own stream: the same labels whichever thread runs it.
      std::mt19937_64 rng(options.seed ^ (step * 0x9E3779B97F4A7C15ull) ^ (uint64_t(r) << 40));
      SampledForwardHidden(*model, batch, r, &s, regularization);
      SampledActiveLabels(tables, batch, r, options.bucket_cap, options.min_active, &rng, &s);
      if (!options.weight_padding) s.padding_log_weight = 0.0f;
      losses[r] = SampledBackward(model, batch, r, row_lr, &s, touched, regularization);
      active[r] = uint32_t(s.active.size());
      padding[r] = uint32_t(s.active.size() - s.padded_from);
    }
  });
  for (const double loss : losses) result.loss_sum += loss;
  if (stats != nullptr) {
    stats->rows += result.labeled_rows;
    for (uint32_t r = 0; r < batch.num_rows; ++r)
      stats->active_labels += active[r], stats->padding_labels += padding[r];
  }
  return result;
}

}  // namespace xmlt::kernels::lsh
