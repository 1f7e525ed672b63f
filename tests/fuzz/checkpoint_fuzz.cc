// Fuzz target: the checkpoint reader as `train --resume` uses it: the container (sizes, names,
// sections), then the JSON state and the progress records inside it. Inputs that start with the
// checkpoint magic are re-sealed (last 8 bytes = XXH3-64 of the rest) so the fuzzer gets past the
// checksum to the layout checks behind it. Rejections must be data::InputError (or, for the state
// inside a valid container, the JSON and argument errors the loops turn into one).
#include <xxhash.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "data/input_error.h"
#include "run/checkpoint_file.h"
#include "run/run_progress.h"

namespace {

constexpr char kMagic[8] = {'X', 'M', 'L', 'T', 'C', 'K', 'P', 'T'};

void Reseal(std::vector<char>* file) {
  if (file->size() < sizeof kMagic + sizeof(uint64_t) || std::memcmp(file->data(), kMagic, sizeof kMagic) != 0) return;
  const size_t body = file->size() - sizeof(uint64_t);
  const uint64_t checksum = XXH3_64bits(file->data(), body);
  std::memcpy(file->data() + body, &checksum, sizeof checksum);
}

[[noreturn]] void Violation(const char* what) {
  std::fprintf(stderr, "fuzz invariant violated: %s\n", what);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace xmlt;
  std::vector<char> file(reinterpret_cast<const char*>(data), reinterpret_cast<const char*>(data) + size);
  Reseal(&file);
  try {
    const run::CheckpointReader reader = run::CheckpointReader::Parse(file, "input");
    for (const char* name : {"global.current", "params", "momentum", "device.0.params"})
      if (reader.Has(name)) {
        const std::vector<float> values = reader.Read<float>(name);
        if (values.size() * sizeof(float) > file.size()) Violation("a section larger than the file");
      }
    if (reader.Has("sampler.order")) reader.Read<uint64_t>("sampler.order");
    const nlohmann::json meta = run::ParseCheckpointMeta(reader.meta(), reader.source());
    const run::RunProgress progress = run::ProgressFromJson(meta.at("progress"));
    (void)run::ResultOf(progress);
  } catch (const data::InputError&) {
  } catch (const nlohmann::json::exception&) {
  } catch (const std::invalid_argument&) {
  }
  return 0;
}
