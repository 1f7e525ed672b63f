// The body of a text file, parsed in parallel: each window of the text (text_windows.h) is cut
// into chunks at line boundaries, each chunk parsed by a TBB task into local vectors
// (text_rows.h), and the chunks merged in order into CSR arrays. Internal to the text readers.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "data/csr_matrix.h"
#include "data/text_rows.h"
#include "data/text_windows.h"

namespace xmlt::data::text {

struct ParsedBody {
  std::vector<ChunkResult> chunks;
  uint64_t rows = 0;
  uint64_t feature_bound = 0, label_bound = 0;
  uint64_t duplicate_line = 0;  // the first line with a repeated feature id; 0 = none
};

// Parses the rows from `begin` in the current window to the end of the text, a window at a time.
// Each window is parsed up to its last line with content; the blank lines after it go on to the
// next window, where they are rows if content follows and trailing blank lines if not.
ParsedBody ParseBody(TextWindows& text, size_t begin, const ParseSpec& spec, const std::string& file_name,
                     int threads, std::optional<uint64_t> declared_rows);

// Concatenates the chunks in order; `labels` selects the label or the feature vectors.
CsrMatrix MergeChunks(std::vector<ChunkResult>& chunks, uint64_t rows, uint64_t cols, bool labels,
                      bool keep_values, int threads);

// The end of the line holding the last non-blank character.
size_t ContentEnd(std::string_view text, size_t begin);

}  // namespace xmlt::data::text
