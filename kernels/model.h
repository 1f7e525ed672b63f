// The sparse MLP's parameters: one flat buffer (so merges and collectives see a plain vector) with
// a view per tensor. Layer 0 maps sparse features to the first hidden layer; the last layer maps
// the last hidden layer to the labels.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace xmlt::kernels {

struct ModelShape {
  uint64_t num_features = 0;
  std::vector<uint32_t> hidden;  // sizes of the hidden layers, at least one
  uint64_t num_labels = 0;
  // Part of the model's definition rather than its size: inputs are scaled to unit L2 rows before
  // the first layer (data/row_normalization.h), in training and in every later use of the model.
  bool normalize_rows = true;

  size_t num_layers() const { return hidden.size() + 1; }
  uint64_t LayerInputs(size_t layer) const { return layer == 0 ? num_features : hidden[layer - 1]; }
  uint64_t LayerOutputs(size_t layer) const {
    return layer + 1 == num_layers() ? num_labels : hidden[layer];
  }
  uint64_t NumParameters() const;
  std::string ToString() const;  // "1836-128-159"
  bool operator==(const ModelShape& other) const {
    return num_features == other.num_features && hidden == other.hidden &&
           num_labels == other.num_labels && normalize_rows == other.normalize_rows;
  }
};

// Where a tensor lives inside the flat parameter buffer (row-major rows x cols).
struct TensorView {
  size_t offset = 0;
  uint64_t rows = 0, cols = 0;
  uint64_t size() const { return rows * cols; }
};

// Layout of one layer. Layer 0's weight is inputs x outputs (a row per feature, so a sparse input
// gathers whole rows); every other weight is outputs x inputs (a row per unit, as in y = W x).
struct LayerView {
  TensorView weight;
  TensorView bias;  // 1 x outputs
};

std::vector<LayerView> LayoutOf(const ModelShape& shape);

// Throws std::invalid_argument when a size is zero or the model would not be addressable.
void ValidateShape(const ModelShape& shape);

template <class T>
struct Model {
  ModelShape shape;
  std::vector<LayerView> layers;
  std::vector<T> params;

  T* Weight(size_t layer) { return params.data() + layers[layer].weight.offset; }
  const T* Weight(size_t layer) const { return params.data() + layers[layer].weight.offset; }
  T* Bias(size_t layer) { return params.data() + layers[layer].bias.offset; }
  const T* Bias(size_t layer) const { return params.data() + layers[layer].bias.offset; }
};

// Glorot-normal weights (std sqrt(2 / (fan_in + fan_out))), zero biases; deterministic for a seed.
template <class T>
Model<T> InitModel(const ModelShape& shape, uint64_t seed);

// An empty model of the shape with all parameters zero (gradients, momentum buffers).
template <class T>
Model<T> ZeroModel(const ModelShape& shape);

}  // namespace xmlt::kernels
