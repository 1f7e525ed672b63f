// Fuzz target: the model file, read with LoadModel as `xmltrain eval` and `predict` do. An input
// that starts with the model magic is first re-sealed (its last 8 bytes replaced by the XXH3-64 of
// the rest), so the fuzzer gets past the checksum to the shape and size checks behind it. The
// format is canonical: whatever is accepted must be written back by SaveModel byte for byte.
#include <xxhash.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <vector>

#include "data/input_error.h"
#include "engine/model_file.h"
#include "tests/fuzz/dataset_invariants.h"
#include "tests/fuzz/fuzz_scratch.h"

namespace {

constexpr char kMagic[8] = {'X', 'M', 'L', 'T', 'M', 'O', 'D', 'L'};

void Reseal(std::vector<uint8_t>* file) {
  if (file->size() < sizeof kMagic + sizeof(uint64_t) ||
      std::memcmp(file->data(), kMagic, sizeof kMagic) != 0) {
    return;
  }
  const size_t body = file->size() - sizeof(uint64_t);
  const uint64_t checksum = XXH3_64bits(file->data(), body);
  std::memcpy(file->data() + body, &checksum, sizeof checksum);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace xmlt;
  std::vector<uint8_t> file(data, data + size);
  Reseal(&file);
  const std::string path = fuzz::Scratch().Write("input.model", file.data(), file.size());
  engine::TrainedModel model;
  try {
    model = engine::LoadModel(path);
  } catch (const data::InputError&) {
    return 0;  // a rejection is the reader doing its job
  }
  if (model.mlp.params.size() != model.mlp.shape.NumParameters() ||
      model.mlp.layers.size() != model.mlp.shape.num_layers()) {
    fuzz::Violation("the model's parameters do not match its shape");
  }
  const std::string copy = fuzz::Scratch().File("copy.model");
  try {
    engine::SaveModel(model, copy);
  } catch (const std::exception& e) {
    fuzz::Violation(std::string("the model does not save: ") + e.what());
  }
  if (fuzz::ScratchDir::Read(copy) != file) fuzz::Violation("the model saves to different bytes");
  return 0;
}
