// Model file reading and writing; see model_file.h.
#include "engine/model_file.h"

#include <xxhash.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include "data/atomic_file.h"
#include "data/byte_reader.h"
#include "data/byte_writer.h"
#include "data/input_error.h"

namespace xmlt::engine {
namespace {

constexpr char kMagic[8] = {'X', 'M', 'L', 'T', 'M', 'O', 'D', 'L'};
constexpr uint32_t kVersion = 1;
constexpr uint32_t kMaxHiddenLayers = 64;
constexpr uint32_t kFlagNormalizeRows = 1;

}  // namespace

void SaveModel(const kernels::Model<float>& model, const std::string& path) {
  data::ByteWriter header;
  header.AppendBytes(kMagic, sizeof(kMagic));
  header.Append(kVersion);
  header.Append(uint32_t(model.shape.hidden.size()));
  header.Append(uint32_t(model.shape.normalize_rows ? kFlagNormalizeRows : 0));
  header.Append(uint64_t(model.shape.num_features));
  header.Append(uint64_t(model.shape.num_labels));
  for (uint32_t h : model.shape.hidden) header.Append(h);
  header.Append(uint64_t(model.params.size()));
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
  data::ByteReader reader(bytes.data(), bytes.size(), path, "model file");
  reader.ReadBytes(sizeof(kMagic), "magic");
  const uint32_t version = reader.Read<uint32_t>("version");
  if (version != kVersion)
    throw data::InputError(path, 0, "model file version " + std::to_string(version) +
                                        " is not supported (expected " + std::to_string(kVersion) + ")");
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
  // The exact length, checked as a whole so that a file too long is refused too. ValidateShape
  // bounds count by 2^40, so the product cannot wrap around.
  if (reader.remaining() != count * sizeof(float) + sizeof(uint64_t))
    throw data::InputError(path, 0, "truncated or oversized model file (" + std::to_string(bytes.size()) +
                                        " bytes for shape " + shape.ToString() + ")");
  const char* params = reader.ReadBytes(count * sizeof(float), "parameters");
  const uint64_t stored = reader.Read<uint64_t>("checksum");
  if (XXH3_64bits(bytes.data(), bytes.size() - sizeof(stored)) != stored)
    throw data::InputError(path, 0, "checksum mismatch: the model file is corrupt");

  kernels::Model<float> model = kernels::ZeroModel<float>(shape);
  std::memcpy(model.params.data(), params, count * sizeof(float));
  return model;
}

}  // namespace xmlt::engine
