// Parallel parsers for the text formats. Rows: "l1,l2 f:v f:v" (XML-repository and libSVM
// multi-label); the split pair has "f:v ..." rows in both files. All throw InputError on bad input.
#pragma once

#include <string>
#include <string_view>

#include "data/dataset.h"
#include "data/load_options.h"
#include "data/text_windows.h"

namespace xmlt::data {

// Parses `text` (the whole content of `file_name`, used only in messages). The header's row count
// is never trusted for sizes: a mismatch adds a warning and the body wins. Blank lines after the
// last row are ignored, except as empty rows when the header declares that many more rows.
Dataset ParseLabeledText(std::string_view text, const std::string& file_name,
                         const LoadOptions& options);
// The same, a window at a time (a compressed file, decompressed as it is parsed).
Dataset ParseLabeledText(TextWindows& text, const std::string& file_name, const LoadOptions& options);

// Parses a split-matrix file ("rows cols" header, then "idx:val ..." rows) into a CSR matrix.
// Label files keep no values (binary = true).
CsrMatrix ParseSplitMatrixText(std::string_view text, const std::string& file_name,
                               const LoadOptions& options, bool binary,
                               std::vector<std::string>* warnings);
CsrMatrix ParseSplitMatrixText(TextWindows& text, const std::string& file_name, const LoadOptions& options,
                               bool binary, std::vector<std::string>* warnings);

}  // namespace xmlt::data
