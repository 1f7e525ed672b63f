// Model file reading and writing; see model_file.h.
#include "engine/model_file.h"

#include <sys/stat.h>
#include <xxhash.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <vector>

#include "data/atomic_file.h"
#include "data/byte_reader.h"
#include "data/byte_writer.h"
#include "data/input_error.h"

namespace xmlt::engine {
namespace {

constexpr char kMagic[8] = {'X', 'M', 'L', 'T', 'M', 'O', 'D', 'L'};
constexpr uint32_t kVersionMlp = 1;         // the MLP alone
constexpr uint32_t kVersionWithRanker = 2;  // the MLP, then the shortlist ranker
constexpr uint32_t kMaxHiddenLayers = 64;
constexpr uint32_t kFlagNormalizeRows = 1;

// Writes what it is given and hashes it on the way, so that the ranker's arrays, as large as the
// MLP at Table 1 shapes, are never copied into one buffer.
class HashedWriter {
 public:
  explicit HashedWriter(const std::string& path) : file_(path), state_(XXH3_createState()) {
    XXH3_64bits_reset(state_);
  }
  ~HashedWriter() { XXH3_freeState(state_); }
  void Put(const void* data, size_t size) {
    XXH3_64bits_update(state_, data, size);
    file_.Write(static_cast<const char*>(data), size);
  }
  template <class T>
  void PutArray(const std::vector<T>& values) { Put(values.data(), values.size() * sizeof(T)); }
  void Commit() {
    const uint64_t checksum = XXH3_64bits_digest(state_);
    file_.Write(reinterpret_cast<const char*>(&checksum), sizeof(checksum));
    file_.Commit();
  }

 private:
  data::AtomicFile file_;
  XXH3_state_t* state_;
};

void Save(const kernels::Model<float>& model, const kernels::ShortlistRanker* ranker, const std::string& path) {
  data::ByteWriter header;
  header.AppendBytes(kMagic, sizeof(kMagic));
  header.Append(ranker != nullptr ? kVersionWithRanker : kVersionMlp);
  header.Append(uint32_t(model.shape.hidden.size()));
  header.Append(uint32_t(model.shape.normalize_rows ? kFlagNormalizeRows : 0));
  header.Append(uint64_t(model.shape.num_features));
  header.Append(uint64_t(model.shape.num_labels));
  for (uint32_t h : model.shape.hidden) header.Append(h);
  header.Append(uint64_t(model.params.size()));
  HashedWriter file(path);
  file.Put(header.data(), header.size());
  file.PutArray(model.params);
  if (ranker != nullptr) {
    const kernels::LinearRanker& linear = ranker->linear;
    if (linear.num_features != model.shape.num_features || linear.num_labels != model.shape.num_labels)
      throw std::invalid_argument("the ranker's features and labels differ from the model's");
    data::ByteWriter fields;
    fields.Append(ranker->shortlist);
    fields.Append(uint32_t(ranker->form));
    fields.Append(ranker->blend);
    fields.Append(uint64_t(linear.num_pairs()));
    file.Put(fields.data(), fields.size());
    file.PutArray(linear.feature_ptr);
    file.PutArray(linear.pair_label);
    file.PutArray(linear.weight);
    file.PutArray(linear.bias);
  }
  file.Commit();
}

// Reads `count` values of T into a vector; the caller has checked that they are there.
template <class T>
std::vector<T> ReadArray(data::ByteReader& reader, uint64_t count, const char* what) {
  std::vector<T> values(count);
  std::memcpy(values.data(), reader.ReadBytes(count * sizeof(T), what), count * sizeof(T));
  return values;
}

// The ranker section, after the parameters; `left` is what remains of the file before its checksum.
std::shared_ptr<const kernels::ShortlistRanker> ReadRanker(data::ByteReader& reader, uint64_t left,
                                                           const kernels::ModelShape& shape, const std::string& path) {
  auto bad = [&](const std::string& what) { return data::InputError(path, 0, "bad ranker section: " + what); };
  constexpr uint64_t fixed = 2 * sizeof(uint32_t) + sizeof(float) + sizeof(uint64_t);
  if (left < fixed) throw bad("truncated");
  auto ranker = std::make_shared<kernels::ShortlistRanker>();
  ranker->shortlist = reader.Read<uint32_t>("ranker shortlist");
  const uint32_t form = reader.Read<uint32_t>("ranker blend form");
  ranker->blend = reader.Read<float>("ranker blend");
  const uint64_t pairs = reader.Read<uint64_t>("ranker pair count");
  if (ranker->shortlist == 0 || ranker->shortlist > kernels::kMaxShortlist)
    throw bad("shortlist " + std::to_string(ranker->shortlist) + " is not in 1.." + std::to_string(kernels::kMaxShortlist));
  if (form >= kernels::kBlendForms) throw bad("unknown blend form " + std::to_string(form));
  ranker->form = kernels::BlendForm(form);
  if (!(ranker->blend >= 0.0f && ranker->blend <= 1.0f)) throw bad("blend is not in [0, 1]");
  // ValidateShape bounds features and labels by 2^40 together; pairs by what the file holds.
  const uint64_t pointer_bytes = (shape.num_features + 1) * sizeof(uint64_t);
  const uint64_t bias_bytes = shape.num_labels * sizeof(float);
  const uint64_t rest = left - fixed;
  if (rest < pointer_bytes + bias_bytes || (rest - pointer_bytes - bias_bytes) / 8 < pairs ||
      rest != pointer_bytes + bias_bytes + pairs * 8)
    throw bad("its length does not match its " + std::to_string(pairs) + " pairs");
  kernels::LinearRanker& linear = ranker->linear;
  linear.num_features = shape.num_features;
  linear.num_labels = shape.num_labels;
  linear.feature_ptr = ReadArray<uint64_t>(reader, shape.num_features + 1, "ranker feature offsets");
  linear.pair_label = ReadArray<uint32_t>(reader, pairs, "ranker pair labels");
  linear.weight = ReadArray<float>(reader, pairs, "ranker weights");
  linear.bias = ReadArray<float>(reader, shape.num_labels, "ranker biases");
  // Scoring indexes by these unchecked: offsets from 0 to the pair count, ascending, and each
  // feature's labels strictly ascending and within the model.
  if (linear.feature_ptr.front() != 0 || linear.feature_ptr.back() != pairs) throw bad("feature offsets do not span the pairs");
  for (uint64_t f = 0; f < shape.num_features; ++f)
    if (linear.feature_ptr[f + 1] < linear.feature_ptr[f])
      throw bad("feature offsets are not ascending at feature " + std::to_string(f));
  for (uint64_t f = 0; f < shape.num_features; ++f) {
    const uint64_t begin = linear.feature_ptr[f], end = linear.feature_ptr[f + 1];
    for (uint64_t p = begin; p < end; ++p)
      if (linear.pair_label[p] >= shape.num_labels || (p > begin && linear.pair_label[p] <= linear.pair_label[p - 1]))
        throw bad("labels of feature " + std::to_string(f) + " are not ascending ids below " +
                  std::to_string(shape.num_labels));
  }
  kernels::AddDenseLookups(&linear, kernels::kRankerDenseLookupBytes);
  return ranker;
}

}  // namespace

void SaveModel(const TrainedModel& model, const std::string& path) { Save(model.mlp, model.ranker.get(), path); }

void SaveModel(const kernels::Model<float>& model, const std::string& path) { Save(model, nullptr, path); }

TrainedModel LoadModel(const std::string& path) {
  // A missing file is said as such ("No such file or directory"), not as "not a regular file".
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0)
    throw data::InputError(path, 0, std::string("cannot open model file: ") + std::strerror(errno));
  if (!S_ISREG(info.st_mode)) throw data::InputError(path, 0, "cannot open model file: not a regular file");
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw data::InputError(path, 0, "cannot open model file");
  const std::streamoff size = in.tellg();
  in.seekg(0);
  std::vector<char> bytes(static_cast<size_t>(std::max<std::streamoff>(size, 0)));
  if (!in.read(bytes.data(), size)) throw data::InputError(path, 0, "cannot read model file");

  if (bytes.size() < sizeof(kMagic) || std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0)
    throw data::InputError(path, 0, "not an xmltrain model file");
  data::ByteReader reader(bytes.data(), bytes.size(), path, "model file");
  reader.ReadBytes(sizeof(kMagic), "magic");
  const uint32_t version = reader.Read<uint32_t>("version");
  if (version != kVersionMlp && version != kVersionWithRanker)
    throw data::InputError(path, 0, "model file version " + std::to_string(version) + " is not supported (expected " +
                                        std::to_string(kVersionMlp) + " or " + std::to_string(kVersionWithRanker) + ")");
  const uint32_t layers = reader.Read<uint32_t>("layer count");
  if (layers == 0 || layers > kMaxHiddenLayers)
    throw data::InputError(path, 0, "bad hidden layer count " + std::to_string(layers));
  const uint32_t flags = reader.Read<uint32_t>("flags");
  if ((flags & ~kFlagNormalizeRows) != 0) throw data::InputError(path, 0, "unknown model flags " + std::to_string(flags));
  kernels::ModelShape shape;
  shape.normalize_rows = (flags & kFlagNormalizeRows) != 0;
  shape.num_features = reader.Read<uint64_t>("features");
  shape.num_labels = reader.Read<uint64_t>("labels");
  for (uint32_t i = 0; i < layers; ++i) shape.hidden.push_back(reader.Read<uint32_t>("hidden size"));
  const uint64_t count = reader.Read<uint64_t>("parameter count");
  try {
    kernels::ValidateShape(shape);
  } catch (const std::invalid_argument& e) {
    throw data::InputError(path, 0, std::string("bad model shape: ") + e.what());
  }
  if (count != shape.NumParameters())
    throw data::InputError(path, 0, "parameter count does not match the model shape " + shape.ToString());
  // The exact length, checked as a whole so that a file too long is refused too (the ranker's
  // section checks its own). ValidateShape bounds count by 2^40, so the product cannot wrap around.
  const uint64_t param_bytes = count * sizeof(float);
  if (reader.remaining() < param_bytes + sizeof(uint64_t) ||
      (version == kVersionMlp && reader.remaining() != param_bytes + sizeof(uint64_t)))
    throw data::InputError(path, 0, "truncated or oversized model file (" + std::to_string(bytes.size()) +
                                        " bytes for shape " + shape.ToString() + ")");
  // The checksum first: a corrupt ranker section is then said to be corrupt, not malformed.
  const uint64_t stored = reader.ReadLast<uint64_t>("checksum");
  if (XXH3_64bits(bytes.data(), bytes.size() - sizeof(stored)) != stored)
    throw data::InputError(path, 0, "checksum mismatch: the model file is corrupt");
  const char* params = reader.ReadBytes(param_bytes, "parameters");

  TrainedModel model;
  model.mlp = kernels::ZeroModel<float>(shape);
  std::memcpy(model.mlp.params.data(), params, param_bytes);
  if (version == kVersionWithRanker)
    model.ranker = ReadRanker(reader, reader.remaining(), shape, path);
  return model;
}

}  // namespace xmlt::engine
