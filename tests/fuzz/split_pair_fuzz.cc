// Fuzz target: the split X/Y pair ("rows cols" header, then "f:v ..." rows in both files), read
// through LoadDataset(x, options, y) as `--train X --train-labels Y` does. The input is the X file,
// a form feed (0x0c), then the Y file; without a form feed the Y file is empty.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "data/dataset_loader.h"
#include "data/input_error.h"
#include "tests/fuzz/dataset_invariants.h"
#include "tests/fuzz/fuzz_scratch.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace xmlt;
  const auto* separator = static_cast<const uint8_t*>(std::memchr(data, '\f', size));
  const size_t x_size = separator == nullptr ? size : static_cast<size_t>(separator - data);
  const size_t y_begin = separator == nullptr ? size : x_size + 1;
  const std::string x_path = fuzz::Scratch().Write("x.txt", data, x_size);
  const std::string y_path = fuzz::Scratch().Write("y.txt", data + y_begin, size - y_begin);
  for (const bool one_based : {false, true}) {
    data::LoadOptions options;
    options.one_based = one_based;
    try {
      fuzz::CheckDataset(data::LoadDataset(x_path, options, y_path));
    } catch (const data::InputError&) {
      // a rejection is the reader doing its job
    }
  }
  return 0;
}
