// Tests of the model file: exact round trips, and every way a file can be foreign, truncated,
// corrupt or absurd being rejected with a data::InputError that names the file.
#include "engine/model_file.h"

#include <gtest/gtest.h>
#include <xxhash.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "data/input_error.h"
#include "kernels/ranker/linear_ranker.h"
#include "tests/make_dataset.h"
#include "tests/test_support.h"

namespace xmlt::engine {
namespace {

using kernels::Model;
using kernels::ModelShape;

ModelShape Shape(uint64_t features, std::vector<uint32_t> hidden, uint64_t labels, bool normalize) {
  ModelShape shape;
  shape.num_features = features;
  shape.hidden = std::move(hidden);
  shape.num_labels = labels;
  shape.normalize_rows = normalize;
  return shape;
}

// Every parameter random (biases included, which InitModel leaves at zero), with a few special
// values whose bit patterns a lossy writer would change.
Model<float> RandomModel(const ModelShape& shape, uint64_t seed) {
  Model<float> model = kernels::InitModel<float>(shape, seed);
  std::mt19937_64 rng(seed + 7);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  for (float& p : model.params) p = normal(rng);
  model.params[0] = -0.0f;
  model.params[1] = 1e-40f;  // subnormal
  model.params.back() = 3.4e38f;
  return model;
}

// The header layout, written independently of the code under test so that tests can forge files:
// magic, version, layer count, flags, features, labels, hidden sizes, parameter count.
struct Header {
  std::string magic = "XMLTMODL";
  uint32_t version = 1;
  uint32_t layers = 1;
  uint32_t flags = 0;
  uint64_t features = 4;
  uint64_t labels = 3;
  std::vector<uint32_t> hidden{2};
  uint64_t count = 0;
};

template <class T>
void Append(std::string* out, T value) {
  out->append(reinterpret_cast<const char*>(&value), sizeof(T));
}

std::string Serialize(const Header& h) {
  std::string out = h.magic;
  Append(&out, h.version);
  Append(&out, h.layers);
  Append(&out, h.flags);
  Append(&out, h.features);
  Append(&out, h.labels);
  for (uint32_t size : h.hidden) Append(&out, size);
  Append(&out, h.count);
  return out;
}

size_t HeaderBytes(size_t layers) { return 8 + 4 + 4 + 4 + 8 + 8 + 4 * layers + 8; }

// Expects LoadModel(path) to throw InputError for `path` with `fragment` in the message.
void ExpectLoadError(const std::string& path, const std::string& fragment) {
  try {
    LoadModel(path);
    ADD_FAILURE() << "no error loading " << path << " (expected '" << fragment << "')";
  } catch (const data::InputError& e) {
    EXPECT_EQ(e.file(), path);
    const std::string what = e.what();
    EXPECT_EQ(what.rfind(path, 0), 0u) << "message does not start with the file: " << what;
    EXPECT_NE(what.find(fragment), std::string::npos) << what;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected data::InputError for " << path << ", got: " << e.what();
  }
}

void ExpectBitEqual(const std::vector<float>& a, const std::vector<float>& b) {
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0);
}

TEST(ModelFileTest, RoundTripKeepsShapeAndEveryParameterBit) {
  testing::TempDir dir;
  for (bool normalize : {false, true}) {
    const ModelShape shape = Shape(37, {5, 3}, 11, normalize);
    const Model<float> model = RandomModel(shape, normalize ? 2 : 1);
    const std::string path = dir.File(normalize ? "n.model" : "plain.model");
    SaveModel(model, path);
    const Model<float> loaded = LoadModel(path).mlp;
    EXPECT_TRUE(loaded.shape == shape) << loaded.shape.ToString();
    EXPECT_EQ(loaded.shape.normalize_rows, normalize);
    EXPECT_EQ(loaded.shape.hidden, (std::vector<uint32_t>{5, 3}));
    ASSERT_EQ(loaded.layers.size(), 3u);
    for (size_t l = 0; l < 3; ++l) {
      EXPECT_EQ(loaded.layers[l].weight.offset, model.layers[l].weight.offset);
      EXPECT_EQ(loaded.layers[l].bias.offset, model.layers[l].bias.offset);
    }
    ExpectBitEqual(loaded.params, model.params);
    // The file is exactly header + parameters + 8-byte checksum.
    EXPECT_EQ(std::filesystem::file_size(path), HeaderBytes(2) + model.params.size() * 4 + 8);
  }
}

TEST(ModelFileTest, SaveReplacesAnExistingFileAndLeavesNoTemporaries) {
  testing::TempDir dir;
  const std::string path = dir.File("m.model");
  SaveModel(RandomModel(Shape(6, {4}, 3, true), 1), path);
  const Model<float> second = RandomModel(Shape(9, {2}, 5, false), 2);
  SaveModel(second, path);
  const Model<float> loaded = LoadModel(path).mlp;
  EXPECT_TRUE(loaded.shape == second.shape);
  ExpectBitEqual(loaded.params, second.params);
  size_t entries = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    ++entries;
    EXPECT_EQ(entry.path().filename(), "m.model");
  }
  EXPECT_EQ(entries, 1u);
}

TEST(ModelFileTest, SaveIntoAMissingDirectoryThrows) {
  testing::TempDir dir;
  EXPECT_ANY_THROW(SaveModel(RandomModel(Shape(6, {4}, 3, true), 1), dir.File("no/such/m.model")));
}

TEST(ModelFileTest, MissingFileIsAnInputErrorNamingIt) {
  testing::TempDir dir;
  EXPECT_THROW(LoadModel(dir.File("absent.model")), data::InputError);
  ExpectLoadError(dir.File("absent.model"), "");
}

// Regression: std::ifstream opens a directory on Linux and tellg() then reports 2^63-1 bytes; the
// loader must refuse it as bad input, not die allocating.
TEST(ModelFileTest, DirectoryInsteadOfAFileIsAnInputError) {
  testing::TempDir dir;
  ExpectLoadError(dir.path(), "");
}

TEST(ModelFileTest, WrongMagicIsRejected) {
  testing::TempDir dir;
  const std::string path = dir.File("foreign.model");
  SaveModel(RandomModel(Shape(6, {4}, 3, true), 1), path);
  std::string bytes = testing::ReadFile(path);
  bytes[3] = 'X';  // "XMLXMODL"
  testing::WriteFile(path, bytes);
  ExpectLoadError(path, "not an xmltrain model file");

  testing::WriteFile(path, "3 4 5\n0 1:1\n");  // a data file passed as a model
  ExpectLoadError(path, "not an xmltrain model file");
}

TEST(ModelFileTest, UnsupportedVersionIsRejectedWithBothVersions) {
  testing::TempDir dir;
  const std::string path = dir.File("v3.model");
  SaveModel(RandomModel(Shape(6, {4}, 3, true), 1), path);
  std::string bytes = testing::ReadFile(path);
  const uint32_t version = 3;
  std::memcpy(&bytes[8], &version, sizeof(version));
  testing::WriteFile(path, bytes);
  ExpectLoadError(path, "version 3 is not supported (expected 1 or 2)");
}

TEST(ModelFileTest, TruncatedFilesAreRejectedAtEveryCutPoint) {
  testing::TempDir dir;
  const std::string good = dir.File("good.model");
  SaveModel(RandomModel(Shape(20, {6, 4}, 7, false), 3), good);
  const std::string bytes = testing::ReadFile(good);
  const size_t header = HeaderBytes(2);
  const std::vector<size_t> cuts = {0,
                                    4,
                                    8,
                                    10,
                                    14,
                                    20,
                                    30,
                                    header - 1,
                                    header,
                                    header + 1,
                                    header + 100,
                                    bytes.size() - 9,
                                    bytes.size() - 8,
                                    bytes.size() - 1};
  const std::string path = dir.File("cut.model");
  for (size_t cut : cuts) {
    SCOPED_TRACE("cut at " + std::to_string(cut) + " of " + std::to_string(bytes.size()));
    ASSERT_LT(cut, bytes.size());
    testing::WriteFile(path, bytes.substr(0, cut));
    ExpectLoadError(path, "");
  }
  // Trailing garbage is as wrong as missing bytes.
  testing::WriteFile(path, bytes + "x");
  ExpectLoadError(path, "oversized");
}

TEST(ModelFileTest, FlippedByteAnywhereAfterTheHeaderIsAChecksumError) {
  testing::TempDir dir;
  const std::string good = dir.File("good.model");
  const Model<float> model = RandomModel(Shape(20, {6}, 7, false), 4);
  SaveModel(model, good);
  const std::string bytes = testing::ReadFile(good);
  const size_t header = HeaderBytes(1);
  const std::string path = dir.File("flipped.model");
  // First parameter byte, one in the middle, the last one, and the checksum itself.
  for (size_t at : {header, header + model.params.size() * 2, bytes.size() - 9, bytes.size() - 1}) {
    SCOPED_TRACE("flipped byte " + std::to_string(at));
    std::string corrupt = bytes;
    corrupt[at] = char(corrupt[at] ^ 0x10);
    testing::WriteFile(path, corrupt);
    ExpectLoadError(path, "checksum");
  }
}

TEST(ModelFileTest, HeaderFieldChangedConsistentlyIsStillCaught) {
  // Flags changed to "normalize rows": the shape is valid and the size matches, so only the
  // checksum (which covers the header too) can notice.
  testing::TempDir dir;
  const std::string path = dir.File("m.model");
  SaveModel(RandomModel(Shape(20, {6}, 7, false), 4), path);
  std::string bytes = testing::ReadFile(path);
  const uint32_t flags = 1;
  std::memcpy(&bytes[16], &flags, sizeof(flags));
  testing::WriteFile(path, bytes);
  ExpectLoadError(path, "checksum");
}

TEST(ModelFileTest, UnknownFlagsAreRejected) {
  testing::TempDir dir;
  Header h;
  h.flags = 6;
  h.count = (4 + 1) * 2 + (2 + 1) * 3;
  const std::string path = dir.File("flags.model");
  testing::WriteFile(path, Serialize(h) + std::string(h.count * 4 + 8, '\0'));
  ExpectLoadError(path, "unknown model flags");
}

// Forged headers whose sizes would need absurd allocations must fail with an InputError rather
// than std::bad_alloc or a crash; the parameter bytes appended are few, whatever the header says.
TEST(ModelFileTest, AbsurdHeaderSizesAreRejectedBeforeAllocation) {
  testing::TempDir dir;
  const std::string path = dir.File("absurd.model");
  auto expect = [&](const Header& h, const std::string& fragment) {
    testing::WriteFile(path, Serialize(h) + std::string(64, '\0'));
    ExpectLoadError(path, fragment);
  };
  const uint64_t small_count = (4 + 1) * 2 + (2 + 1) * 3;
  {
    Header h;
    h.hidden = {0};
    h.count = small_count;
    SCOPED_TRACE("hidden size 0");
    expect(h, "bad model shape");
  }
  {
    Header h;
    h.features = uint64_t{1} << 40;
    h.count = ((uint64_t{1} << 40) + 1) * 2 + (2 + 1) * 3;
    SCOPED_TRACE("2^40 features");
    expect(h, "bad model shape");
  }
  {
    Header h;
    h.features = 0;
    h.count = 0;
    SCOPED_TRACE("0 features");
    expect(h, "bad model shape");
  }
  {
    Header h;
    h.labels = 0;
    h.count = 0;
    SCOPED_TRACE("0 labels");
    expect(h, "bad model shape");
  }
  {
    Header h;
    h.layers = 0;
    h.hidden = {};
    SCOPED_TRACE("0 hidden layers");
    expect(h, "bad hidden layer count 0");
  }
  {
    // Four billion layers: the count alone must stop the reader, not a loop or a vector of them.
    Header h;
    h.layers = 0xFFFFFFFFu;
    SCOPED_TRACE("2^32-1 hidden layers");
    expect(h, "bad hidden layer count");
  }
  {
    // A valid shape of 2^39 parameters (2 TiB) whose count matches: only the file length can
    // tell, and it must be compared before the parameters are allocated.
    Header h;
    h.features = 0xFFFFFFFFull;
    h.hidden = {128};
    h.labels = 10;
    h.count = (h.features + 1) * 128 + (128 + 1) * 10;
    SCOPED_TRACE("valid 2 TiB shape in a small file");
    expect(h, "truncated");
  }
  {
    Header h;
    h.count = 12345;  // does not match 4-2-3
    SCOPED_TRACE("parameter count mismatch");
    expect(h, "parameter count");
  }
  {
    Header h;
    h.count = ~uint64_t{0};
    SCOPED_TRACE("parameter count 2^64-1");
    expect(h, "parameter count");
  }
}

TEST(ModelFileTest, ForgedHeaderMatchesTheRealFormat) {
  // The forging helper writes what SaveModel writes, so the rejections above are about the forged
  // fields, not about a forgery in the wrong layout.
  testing::TempDir dir;
  const Model<float> model = RandomModel(Shape(4, {2}, 3, false), 9);
  const std::string path = dir.File("real.model");
  SaveModel(model, path);
  Header h;
  h.count = model.params.size();
  const std::string forged_header = Serialize(h);
  const std::string bytes = testing::ReadFile(path);
  EXPECT_EQ(bytes.substr(0, forged_header.size()), forged_header);
}

// A ranker for `shape`: the pairs of a few rows over its features and labels, random weights and
// biases, and the given shortlist and blend.
std::shared_ptr<kernels::ShortlistRanker> RandomRanker(const ModelShape& shape, uint32_t shortlist, float blend,
                                                       uint64_t seed) {
  std::mt19937_64 rng(seed);
  const data::Dataset rows = testing::MakeDataset(
      {{{{0, 1.0f}, {2, 1.0f}}, {0, 2}}, {{{1, 1.0f}, {2, 1.0f}, {3, 1.0f}}, {1}}, {{{3, 1.0f}}, {0, 1, 2}}},
      shape.num_features, shape.num_labels);
  auto ranker = std::make_shared<kernels::ShortlistRanker>();
  ranker->linear = kernels::BuildLinearRanker(rows, 1000);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (float& w : ranker->linear.weight) w = normal(rng);
  for (float& b : ranker->linear.bias) b = normal(rng);
  ranker->shortlist = shortlist;
  ranker->blend = blend;
  return ranker;
}

// Replaces the last 8 bytes by the XXH3-64 of the rest, as SaveModel closes a file.
void Reseal(std::string* bytes) {
  const uint64_t checksum = XXH3_64bits(bytes->data(), bytes->size() - 8);
  std::memcpy(&(*bytes)[bytes->size() - 8], &checksum, 8);
}

TEST(ModelFileTest, RoundTripWithARankerKeepsItsPairsWeightsAndBlend) {
  testing::TempDir dir;
  const ModelShape shape = Shape(6, {4}, 3, true);
  const std::shared_ptr<kernels::ShortlistRanker> ranker = RandomRanker(shape, 7, 0.3f, 1);
  ranker->form = kernels::BlendForm::kGeometric;
  TrainedModel model{RandomModel(shape, 5), ranker};
  const std::string path = dir.File("ranked.model");
  SaveModel(model, path);
  const std::string bytes = testing::ReadFile(path);
  uint32_t version = 0;
  std::memcpy(&version, &bytes[8], 4);
  EXPECT_EQ(version, 2u);
  const TrainedModel loaded = LoadModel(path);
  ExpectBitEqual(loaded.mlp.params, model.mlp.params);
  ASSERT_NE(loaded.ranker, nullptr);
  EXPECT_EQ(loaded.ranker->shortlist, 7u);
  EXPECT_EQ(loaded.ranker->blend, 0.3f);
  EXPECT_EQ(loaded.ranker->linear.num_features, 6u);
  EXPECT_EQ(loaded.ranker->linear.num_labels, 3u);
  EXPECT_EQ(loaded.ranker->linear.feature_ptr, model.ranker->linear.feature_ptr);
  EXPECT_EQ(loaded.ranker->linear.pair_label, model.ranker->linear.pair_label);
  ExpectBitEqual(loaded.ranker->linear.weight, model.ranker->linear.weight);
  ExpectBitEqual(loaded.ranker->linear.bias, model.ranker->linear.bias);
  EXPECT_EQ(loaded.ranker->form, kernels::BlendForm::kGeometric);
  // Header, parameters, shortlist, form and blend, pair count, offsets, labels and weights,
  // biases, checksum.
  const uint64_t pairs = model.ranker->linear.num_pairs();
  EXPECT_EQ(bytes.size(),
            HeaderBytes(1) + model.mlp.params.size() * 4 + 4 + 4 + 4 + 8 + (6 + 1) * 8 + pairs * 8 + 3 * 4 + 8);
  // Canonical: written again, the same bytes.
  const std::string again = dir.File("again.model");
  SaveModel(loaded, again);
  EXPECT_EQ(testing::ReadFile(again), bytes);
}

TEST(ModelFileTest, AnMlpAloneIsStillWrittenAsVersionOne) {
  testing::TempDir dir;
  const Model<float> mlp = RandomModel(Shape(6, {4}, 3, true), 5);
  SaveModel(mlp, dir.File("plain.model"));
  SaveModel(TrainedModel{mlp, nullptr}, dir.File("trained.model"));
  const std::string bytes = testing::ReadFile(dir.File("plain.model"));
  EXPECT_EQ(testing::ReadFile(dir.File("trained.model")), bytes);
  uint32_t version = 0;
  std::memcpy(&version, &bytes[8], 4);
  EXPECT_EQ(version, 1u);
  EXPECT_EQ(LoadModel(dir.File("plain.model")).ranker, nullptr);
}

TEST(ModelFileTest, ARankerOfOtherShapesIsNotSaved) {
  testing::TempDir dir;
  TrainedModel model{RandomModel(Shape(6, {4}, 3, true), 5), RandomRanker(Shape(6, {4}, 4, true), 7, 0.3f, 1)};
  EXPECT_THROW(SaveModel(model, dir.File("m.model")), std::invalid_argument);
}

// Each defect of the ranker's section, resealed so that the checksum passes, is refused by name
// before anything it sizes is allocated.
TEST(ModelFileTest, RankerSectionDefectsAreInputErrors) {
  testing::TempDir dir;
  const ModelShape shape = Shape(6, {4}, 3, true);
  TrainedModel model{RandomModel(shape, 5), RandomRanker(shape, 7, 0.3f, 1)};
  const std::string good = dir.File("good.model");
  SaveModel(model, good);
  const std::string bytes = testing::ReadFile(good);
  const size_t section = HeaderBytes(1) + model.mlp.params.size() * 4;
  const uint64_t pairs = model.ranker->linear.num_pairs();
  const size_t offsets = section + 20, labels = offsets + (6 + 1) * 8;
  const std::string path = dir.File("bad.model");
  auto expect = [&](const std::string& what, auto edit, const std::string& fragment) {
    SCOPED_TRACE(what);
    std::string forged = bytes;
    edit(&forged);
    Reseal(&forged);
    testing::WriteFile(path, forged);
    ExpectLoadError(path, fragment);
  };
  auto put32 = [](std::string* b, size_t at, uint32_t v) { std::memcpy(&(*b)[at], &v, 4); };
  auto put64 = [](std::string* b, size_t at, uint64_t v) { std::memcpy(&(*b)[at], &v, 8); };
  expect("shortlist 0", [&](std::string* b) { put32(b, section, 0); }, "shortlist 0 is not in 1..1000");
  expect("shortlist 1001", [&](std::string* b) { put32(b, section, 1001); }, "shortlist 1001");
  expect("form 2", [&](std::string* b) { put32(b, section + 4, 2); }, "unknown blend form 2");
  expect("blend 1.5", [&](std::string* b) { const float v = 1.5f; std::memcpy(&(*b)[section + 8], &v, 4); },
         "blend is not in [0, 1]");
  expect("blend NaN", [&](std::string* b) { put32(b, section + 8, 0x7fc00000u); }, "blend is not in [0, 1]");
  expect("pairs 2^60", [&](std::string* b) { put64(b, section + 12, uint64_t{1} << 60); }, "length does not match");
  expect("one pair more", [&](std::string* b) { put64(b, section + 12, pairs + 1); }, "length does not match");
  expect("offsets not from 0", [&](std::string* b) { put64(b, offsets, 1); }, "do not span the pairs");
  expect("offsets descending", [&](std::string* b) { put64(b, offsets + 8, pairs); }, "not ascending at feature");
  expect("a label beyond the model", [&](std::string* b) { put32(b, labels, 3); }, "not ascending ids below 3");
  expect("labels repeated", [&](std::string* b) {
    // Feature 2 has labels 0, 1, 2 (rows 0 and 1): its second made equal to its first.
    const uint64_t at = model.ranker->linear.feature_ptr[2];
    put32(b, labels + (at + 1) * 4, model.ranker->linear.pair_label[at]);
  }, "labels of feature 2");
  expect("no section behind a version 2", [&](std::string* b) {
    *b = b->substr(0, section) + std::string(8, '\0');
  }, "bad ranker section: truncated");
}

}  // namespace
}  // namespace xmlt::engine
