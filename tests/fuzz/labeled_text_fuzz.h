// The body shared by the XML-repository and libSVM text targets. The bytes go through
// ParseLabeledText in memory (what LoadDataset runs on the mapped file), once zero-based and once
// one-based; whatever is accepted must keep the Dataset invariants and must survive the writer of
// `xmltrain gen`: written as XML-repository text, it reads back to the same matrices.
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <string>
#include <string_view>

#include "data/dataset_loader.h"
#include "data/input_error.h"
#include "data/text_reader.h"
#include "data/text_writer.h"
#include "tests/fuzz/dataset_invariants.h"
#include "tests/fuzz/fuzz_scratch.h"

namespace xmlt::fuzz {

inline void CheckTextRoundTrip(const data::Dataset& dataset) {
  const std::string path = Scratch().File("round-trip.txt");
  data::LoadOptions options;
  options.format = data::TextFormat::kXmlRepo;
  options.use_cache = false;
  try {
    data::WriteXmlRepoText(dataset, path);
    if (!SameMatrices(data::LoadDataset(path, options), dataset)) {
      Violation("the dataset written as text reads back different");
    }
  } catch (const std::exception& e) {
    Violation(std::string("the dataset written as text does not read back: ") + e.what());
  }
}

inline void FuzzLabeledText(const uint8_t* data, size_t size, data::TextFormat format) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  for (const bool one_based : {false, true}) {
    data::LoadOptions options;
    options.format = format;
    options.one_based = one_based;
    data::Dataset dataset;
    try {
      dataset = data::ParseLabeledText(text, "fuzz-input.txt", options);
    } catch (const data::InputError&) {
      continue;  // a rejection is the reader doing its job
    }
    CheckDataset(dataset);
    CheckTextRoundTrip(dataset);
  }
}

}  // namespace xmlt::fuzz
