// Model layout, sizes and initialization.
#include <gtest/gtest.h>

#include <cmath>

#include "kernels/model.h"

namespace xmlt::kernels {
namespace {

TEST(Model, LayoutCoversTheFlatBufferWithoutGapsOrOverlap) {
  const ModelShape shape{100, {16, 8}, 30};
  EXPECT_EQ(shape.NumParameters(), 100u * 16 + 16 + 16 * 8 + 8 + 8 * 30 + 30);
  const std::vector<LayerView> layers = LayoutOf(shape);
  ASSERT_EQ(layers.size(), 3u);
  size_t offset = 0;
  for (const LayerView& layer : layers) {
    EXPECT_EQ(layer.weight.offset, offset);
    offset += layer.weight.size();
    EXPECT_EQ(layer.bias.offset, offset);
    offset += layer.bias.size();
  }
  EXPECT_EQ(offset, shape.NumParameters());
  EXPECT_EQ(layers[0].weight.rows, 100u);  // a row per feature
  EXPECT_EQ(layers[2].weight.rows, 30u);   // a row per label
  EXPECT_EQ(shape.ToString(), "100-16-8-30");
}

TEST(Model, InitIsDeterministicGlorotWithZeroBiases) {
  const ModelShape shape{2000, {64}, 500};
  const Model<float> a = InitModel<float>(shape, 7), b = InitModel<float>(shape, 7), c = InitModel<float>(shape, 8);
  EXPECT_EQ(a.params, b.params);
  EXPECT_NE(a.params, c.params);
  for (size_t l = 0; l < a.layers.size(); ++l) {
    for (uint64_t i = 0; i < a.layers[l].bias.size(); ++i) EXPECT_EQ(a.Bias(l)[i], 0.0f);
    double sum_sq = 0;
    for (uint64_t i = 0; i < a.layers[l].weight.size(); ++i) sum_sq += double(a.Weight(l)[i]) * a.Weight(l)[i];
    const double std_dev = std::sqrt(sum_sq / double(a.layers[l].weight.size()));
    const double expected = std::sqrt(2.0 / double(shape.LayerInputs(l) + shape.LayerOutputs(l)));
    EXPECT_NEAR(std_dev, expected, 0.05 * expected) << "layer " << l;
  }
}

TEST(Model, RejectsEmptyOrUnaddressableShapes) {
  EXPECT_THROW(ValidateShape({0, {8}, 5}), std::invalid_argument);
  EXPECT_THROW(ValidateShape({10, {}, 5}), std::invalid_argument);
  EXPECT_THROW(ValidateShape({10, {0}, 5}), std::invalid_argument);
  EXPECT_THROW(ValidateShape({10, {8}, 0}), std::invalid_argument);
  EXPECT_THROW(ValidateShape({uint64_t{1} << 33, {8}, 5}), std::invalid_argument);
  EXPECT_THROW(ValidateShape({uint64_t{1} << 31, {65536}, 5}), std::invalid_argument);
  EXPECT_NO_THROW(ValidateShape({135909, {128}, 670091}));
}

}  // namespace
}  // namespace xmlt::kernels
