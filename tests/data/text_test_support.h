// Helpers of the text reader's tests (text_reader_test.cc, text_files_test.cc): parsing a string
// as a file named t.txt, the error expected at a line, and two datasets compared field by field.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "data/dataset_loader.h"
#include "data/input_error.h"
#include "data/text_reader.h"

namespace xmlt::data::text_test {

template <class T>
std::vector<T> Vec(const SharedArray<T>& a) {
  return std::vector<T>(a.begin(), a.end());
}

inline Dataset Parse(const std::string& text, LoadOptions options = {}) {
  return ParseLabeledText(text, "t.txt", options);
}

// Expects InputError at `line` whose message contains `fragment`.
inline void ExpectError(const std::string& text, uint64_t line, const std::string& fragment,
                        LoadOptions options = {}) {
  try {
    Parse(text, options);
    ADD_FAILURE() << "no error for: " << text.substr(0, 80);
  } catch (const InputError& e) {
    EXPECT_EQ(e.line(), line) << e.what();
    EXPECT_EQ(e.file(), "t.txt");
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    if (line > 0) {
      EXPECT_EQ(std::string(e.what()).rfind("t.txt:" + std::to_string(line) + ": ", 0), 0u)
          << e.what();
    }
  }
}

inline void ExpectSameDataset(const Dataset& a, const Dataset& b) {
  EXPECT_EQ(a.num_rows(), b.num_rows());
  EXPECT_EQ(a.num_features(), b.num_features());
  EXPECT_EQ(a.num_labels(), b.num_labels());
  EXPECT_EQ(Vec(a.features.row_ptr), Vec(b.features.row_ptr));
  EXPECT_EQ(Vec(a.features.col_idx), Vec(b.features.col_idx));
  EXPECT_EQ(Vec(a.features.values), Vec(b.features.values));
  EXPECT_EQ(Vec(a.labels.row_ptr), Vec(b.labels.row_ptr));
  EXPECT_EQ(Vec(a.labels.col_idx), Vec(b.labels.col_idx));
  EXPECT_TRUE(a.labels.values.empty());
  EXPECT_TRUE(b.labels.values.empty());
}

}  // namespace xmlt::data::text_test
