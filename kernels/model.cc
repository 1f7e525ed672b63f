// Model layout and initialization; see model.h.
#include "kernels/model.h"

#include <cmath>
#include <limits>
#include <random>
#include <stdexcept>

namespace xmlt::kernels {

uint64_t ModelShape::NumParameters() const {
  uint64_t total = 0;
  for (size_t l = 0; l < num_layers(); ++l) total += (LayerInputs(l) + 1) * LayerOutputs(l);
  return total;
}

std::string ModelShape::ToString() const {
  std::string text = std::to_string(num_features);
  for (uint32_t h : hidden) text += "-" + std::to_string(h);
  return text + "-" + std::to_string(num_labels);
}

void ValidateShape(const ModelShape& shape) {
  if (shape.num_features == 0) throw std::invalid_argument("the model needs at least one feature");
  if (shape.num_labels == 0) throw std::invalid_argument("the model needs at least one label");
  if (shape.hidden.empty()) throw std::invalid_argument("the model needs a hidden layer");
  constexpr uint64_t kMaxIds = std::numeric_limits<uint32_t>::max();
  if (shape.num_features > kMaxIds || shape.num_labels > kMaxIds)
    throw std::invalid_argument("more than 2^32-1 features or labels");
  uint64_t total = 0;
  for (size_t l = 0; l < shape.num_layers(); ++l) {
    const uint64_t in = shape.LayerInputs(l), out = shape.LayerOutputs(l);
    if (out == 0) throw std::invalid_argument("hidden layer " + std::to_string(l) + " has size 0");
    // Checked before multiplying so that absurd sizes cannot wrap around.
    if (in + 1 > (uint64_t{1} << 40) / out) throw std::invalid_argument("the model is too large");
    total += (in + 1) * out;
  }
  if (total > (uint64_t{1} << 40)) throw std::invalid_argument("the model is too large");
}

std::vector<LayerView> LayoutOf(const ModelShape& shape) {
  std::vector<LayerView> layers(shape.num_layers());
  size_t offset = 0;
  for (size_t l = 0; l < layers.size(); ++l) {
    const uint64_t in = shape.LayerInputs(l), out = shape.LayerOutputs(l);
    layers[l].weight = l == 0 ? TensorView{offset, in, out} : TensorView{offset, out, in};
    offset += in * out;
    layers[l].bias = TensorView{offset, 1, out};
    offset += out;
  }
  return layers;
}

template <class T>
Model<T> ZeroModel(const ModelShape& shape) {
  ValidateShape(shape);
  Model<T> model;
  model.shape = shape;
  model.layers = LayoutOf(shape);
  model.params.assign(shape.NumParameters(), T(0));
  return model;
}

template <class T>
Model<T> InitModel(const ModelShape& shape, uint64_t seed) {
  Model<T> model = ZeroModel<T>(shape);
  std::mt19937_64 rng(seed);
  for (size_t l = 0; l < model.layers.size(); ++l) {
    const double fan_in = double(shape.LayerInputs(l)), fan_out = double(shape.LayerOutputs(l));
    std::normal_distribution<double> normal(0.0, std::sqrt(2.0 / (fan_in + fan_out)));
    T* w = model.Weight(l);
    for (uint64_t i = 0; i < model.layers[l].weight.size(); ++i) w[i] = T(normal(rng));
  }
  return model;
}

template Model<float> InitModel<float>(const ModelShape&, uint64_t);
template Model<double> InitModel<double>(const ModelShape&, uint64_t);
template Model<float> ZeroModel<float>(const ModelShape&);
template Model<double> ZeroModel<double>(const ModelShape&);

}  // namespace xmlt::kernels
