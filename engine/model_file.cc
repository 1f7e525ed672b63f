// Model file reading and writing; see model_file.h.
#include "engine/model_file.h"

#include <xxhash.h>

#include <array>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include "data/atomic_file.h"
#include "data/input_error.h"

namespace xmlt::engine {
namespace {

constexpr char kMagic[8] = {'X', 'M', 'L', 'T', 'M', 'O', 'D', 'L'};
constexpr uint32_t kVersion = 1;
constexpr uint32_t kMaxHiddenLayers = 64;
constexpr uint32_t kFlagNormalizeRows = 1;

// Little-endian fixed-size fields appended to a byte buffer (the file is only read on the same
// kind of machine it is written on: x86-64 or aarch64, both little-endian).
template <class T>
void Put(std::vector<char>* out, const T& value) {
  const char* bytes = reinterpret_cast<const char*>(&value);
  out->insert(out->end(), bytes, bytes + sizeof(T));
}

class Reader {
 public:
  Reader(const std::vector<char>& bytes, const std::string& path) : bytes_(bytes), path_(path) {}
  template <class T>
  T Get(const char* what) {
    if (bytes_.size() - pos_ < sizeof(T)) throw data::InputError(path_, 0, std::string("truncated model file (") + what + ")");
    T value;
    std::memcpy(&value, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return value;
  }
  size_t pos() const { return pos_; }

 private:
  const std::vector<char>& bytes_;
  const std::string& path_;
  size_t pos_ = 0;
};

}  // namespace

void SaveModel(const kernels::Model<float>& model, const std::string& path) {
  std::vector<char> header;
  header.insert(header.end(), kMagic, kMagic + sizeof(kMagic));
  Put(&header, kVersion);
  Put(&header, uint32_t(model.shape.hidden.size()));
  Put(&header, uint32_t(model.shape.normalize_rows ? kFlagNormalizeRows : 0));
  Put(&header, uint64_t(model.shape.num_features));
  Put(&header, uint64_t(model.shape.num_labels));
  for (uint32_t h : model.shape.hidden) Put(&header, h);
  Put(&header, uint64_t(model.params.size()));
  const size_t param_bytes = model.params.size() * sizeof(float);
  XXH3_state_t* state = XXH3_createState();
  XXH3_64bits_reset(state);
  XXH3_64bits_update(state, header.data(), header.size());
  XXH3_64bits_update(state, model.params.data(), param_bytes);
  const uint64_t checksum = XXH3_64bits_digest(state);
  XXH3_freeState(state);

  data::AtomicFile file(path);
  file.Write(header.data(), header.size());
  file.Write(model.params.data(), param_bytes);
  file.Write(&checksum, sizeof(checksum));
  file.Commit();
}

kernels::Model<float> LoadModel(const std::string& path) {
  std::error_code error;
  if (!std::filesystem::is_regular_file(path, error))
    throw data::InputError(path, 0, "cannot open model file: not a regular file");
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw data::InputError(path, 0, "cannot open model file");
  const std::streamoff size = in.tellg();
  in.seekg(0);
  std::vector<char> bytes(static_cast<size_t>(std::max<std::streamoff>(size, 0)));
  if (!in.read(bytes.data(), size)) throw data::InputError(path, 0, "cannot read model file");

  if (bytes.size() < sizeof(kMagic) || std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0)
    throw data::InputError(path, 0, "not an xmltrain model file");
  Reader reader(bytes, path);
  reader.Get<std::array<char, 8>>("magic");
  const uint32_t version = reader.Get<uint32_t>("version");
  if (version != kVersion)
    throw data::InputError(path, 0, "model file version " + std::to_string(version) +
                                        " is not supported (expected " + std::to_string(kVersion) + ")");
  const uint32_t layers = reader.Get<uint32_t>("layer count");
  if (layers == 0 || layers > kMaxHiddenLayers)
    throw data::InputError(path, 0, "bad hidden layer count " + std::to_string(layers));
  const uint32_t flags = reader.Get<uint32_t>("flags");
  if ((flags & ~kFlagNormalizeRows) != 0) throw data::InputError(path, 0, "unknown model flags " + std::to_string(flags));
  kernels::ModelShape shape;
  shape.normalize_rows = (flags & kFlagNormalizeRows) != 0;
  shape.num_features = reader.Get<uint64_t>("features");
  shape.num_labels = reader.Get<uint64_t>("labels");
  for (uint32_t i = 0; i < layers; ++i) shape.hidden.push_back(reader.Get<uint32_t>("hidden size"));
  const uint64_t count = reader.Get<uint64_t>("parameter count");
  try {
    kernels::ValidateShape(shape);
  } catch (const std::invalid_argument& e) {
    throw data::InputError(path, 0, std::string("bad model shape: ") + e.what());
  }
  if (count != shape.NumParameters())
    throw data::InputError(path, 0, "parameter count does not match the model shape " + shape.ToString());
  const size_t header_bytes = reader.pos();
  if (bytes.size() != header_bytes + count * sizeof(float) + sizeof(uint64_t))
    throw data::InputError(path, 0, "truncated or oversized model file (" + std::to_string(bytes.size()) +
                                        " bytes for shape " + shape.ToString() + ")");
  uint64_t stored;
  std::memcpy(&stored, bytes.data() + bytes.size() - sizeof(stored), sizeof(stored));
  if (XXH3_64bits(bytes.data(), bytes.size() - sizeof(stored)) != stored)
    throw data::InputError(path, 0, "checksum mismatch: the model file is corrupt");

  kernels::Model<float> model = kernels::ZeroModel<float>(shape);
  std::memcpy(model.params.data(), bytes.data() + header_bytes, count * sizeof(float));
  return model;
}

}  // namespace xmlt::engine
