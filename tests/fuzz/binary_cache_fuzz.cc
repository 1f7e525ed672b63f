// Fuzz target: the .xmlb dataset cache, read with ReadBinaryCache as LoadDataset does for a cache
// file. An input that starts with the cache magic and holds a whole header is first re-sealed with
// a valid checksum, so the fuzzer gets past the checksum to the checks behind it (the reader must
// be safe on a crafted file, not only on a damaged one). Whatever is accepted must keep the Dataset
// invariants and survive a write and a second read unchanged, source stamp included.
#include <xxhash.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <vector>

#include "data/binary_cache.h"
#include "data/input_error.h"
#include "tests/fuzz/dataset_invariants.h"
#include "tests/fuzz/fuzz_scratch.h"

namespace {

// The layout of data/binary_cache.cc, restated: a 160-byte header whose last field is the checksum,
// XXH3-64 of the header (checksum zeroed) followed by the XXH3-64 of each 1 MiB block after it.
constexpr char kMagic[8] = {'X', 'M', 'L', 'T', 'B', 'I', 'N', '\0'};
constexpr size_t kHeaderBytes = 160;
constexpr size_t kChecksumOffset = kHeaderBytes - sizeof(uint64_t);
constexpr size_t kBlockBytes = size_t{1} << 20;

void Reseal(std::vector<uint8_t>* file) {
  if (file->size() < kHeaderBytes || std::memcmp(file->data(), kMagic, sizeof kMagic) != 0) return;
  std::vector<uint64_t> block_hashes;
  for (size_t at = kHeaderBytes; at < file->size(); at += kBlockBytes) {
    block_hashes.push_back(
        XXH3_64bits(file->data() + at, std::min(kBlockBytes, file->size() - at)));
  }
  uint8_t header[kHeaderBytes];
  std::memcpy(header, file->data(), kHeaderBytes);
  std::memset(header + kChecksumOffset, 0, sizeof(uint64_t));
  XXH3_state_t* state = XXH3_createState();
  XXH3_64bits_reset(state);
  XXH3_64bits_update(state, header, kHeaderBytes);
  XXH3_64bits_update(state, block_hashes.data(), block_hashes.size() * sizeof(uint64_t));
  const uint64_t checksum = XXH3_64bits_digest(state);
  XXH3_freeState(state);
  std::memcpy(file->data() + kChecksumOffset, &checksum, sizeof checksum);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace xmlt;
  std::vector<uint8_t> file(data, data + size);
  Reseal(&file);
  const std::string path = fuzz::Scratch().Write("input.xmlb", file.data(), file.size());
  data::Dataset dataset;
  bool one_based = false;
  data::SourceStamp source;
  try {
    dataset = data::ReadBinaryCache(path, &one_based, &source);
  } catch (const data::InputError&) {
    return 0;  // a rejection is the reader doing its job
  }
  fuzz::CheckDataset(dataset);
  const std::string copy = fuzz::Scratch().File("copy.xmlb");
  try {
    data::WriteBinaryCache(dataset, copy, one_based, source);
    bool copy_one_based = !one_based;
    data::SourceStamp copy_source;
    if (!fuzz::SameMatrices(data::ReadBinaryCache(copy, &copy_one_based, &copy_source), dataset) ||
        copy_one_based != one_based || copy_source != source) {
      fuzz::Violation("the cache written back reads back different");
    }
  } catch (const std::exception& e) {
    fuzz::Violation(std::string("the cache written back does not read back: ") + e.what());
  }
  return 0;
}
