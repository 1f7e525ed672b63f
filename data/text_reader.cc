// The text formats: XML repository ("N D L" header) and libSVM multi-label rows in one file, and
// the split pair (X and Y files with "rows cols" headers). Their headers and warnings are here; the
// rows are parsed by text_body.h and text_rows.h.
#include "data/text_reader.h"

#include <algorithm>
#include <optional>
#include <tuple>

#include "data/input_error.h"
#include "data/text_body.h"

namespace xmlt::data {
namespace {

using text::kMaxId;
using text::IsBlank;
using text::ContentEnd;
using text::Quote;
using text::MergeChunks;
using text::ParseBody;
using text::ParsedBody;
using text::ParseSpec;

// Splits the first line into blank-separated tokens; nullopt unless all are non-negative integers.
// A number too large for 64 bits is kept as UINT64_MAX so the caller reports it as too large.
std::optional<std::vector<uint64_t>> IntegerTokens(std::string_view line) {
  std::vector<uint64_t> numbers;
  size_t i = 0;
  while (true) {
    while (i < line.size() && IsBlank(line[i])) ++i;
    if (i == line.size()) break;
    uint64_t v = 0;
    size_t start = i;
    for (; i < line.size() && !IsBlank(line[i]); ++i) {
      const unsigned d = static_cast<unsigned>(line[i] - '0');
      if (d >= 10) return std::nullopt;
      v = v > (UINT64_MAX - d) / 10 ? UINT64_MAX : v * 10 + d;
    }
    if (i == start) return std::nullopt;
    numbers.push_back(v);
  }
  return numbers;
}

std::string_view FirstLine(std::string_view text) {
  return text.substr(0, std::min(text.find('\n'), text.size()));
}

size_t AfterFirstLine(std::string_view text) {
  const size_t newline = text.find('\n');
  return newline == std::string_view::npos ? text.size() : newline + 1;
}

void CheckDimension(const std::string& file_name, const char* what, uint64_t value) {
  if (value > kMaxId) {
    throw InputError(
        file_name, 1,
        std::string("malformed header: ") + what + " " + std::to_string(value) + " exceeds 2^32-1");
  }
}

// Makes the first window hold the first line with content (the header, when there is one).
void CheckNotEmpty(TextWindows& text, const std::string& file_name) {
  while (ContentEnd(text.window(), 0) == 0 && !text.at_end()) text.Advance(0);
  if (ContentEnd(text.window(), 0) == 0) throw InputError(file_name, 0, "empty file");
}

// The longest line a header allows: every one of its D features once ("id:value ", 48 bytes with
// the longest float a writer prints) and every one of its L labels ("id,"), and room for spaces.
void LimitLinesByHeader(TextWindows& text, uint64_t features, uint64_t labels) {
  text.LimitLineBytes(48 * features + 12 * labels + 4096,
                      "the most that " + std::to_string(features) + " features and " + std::to_string(labels) +
                          " labels (the header's) can take");
}

void WarnRowMismatch(const std::string& file_name, uint64_t declared, uint64_t found,
                     std::vector<std::string>* warnings) {
  if (declared != found && warnings != nullptr) {
    warnings->push_back(file_name + ": the header declares " + std::to_string(declared) +
                        " rows but the file has " + std::to_string(found) + "; using " +
                        std::to_string(found));
  }
}

void WarnDuplicates(const std::string& file_name, uint64_t line, std::vector<std::string>* warnings) {
  if (line != 0 && warnings != nullptr) {
    warnings->push_back(file_name + ":" + std::to_string(line) +
                        ": repeated feature ids in a row; their values were summed (first "
                        "occurrence, later ones not reported)");
  }
}
}  // namespace

Dataset ParseLabeledText(std::string_view text, const std::string& file_name,
                         const LoadOptions& options) {
  TextWindows whole(text);
  return ParseLabeledText(whole, file_name, options);
}

Dataset ParseLabeledText(TextWindows& windows, const std::string& file_name, const LoadOptions& options) {
  CheckNotEmpty(windows, file_name);
  const std::string_view text = windows.window();  // the first window: the header is in it
  ParseSpec spec;
  spec.labeled = true;
  spec.one_based = options.one_based;

  size_t begin = 0;
  std::optional<std::vector<uint64_t>> header;
  if (options.format != TextFormat::kLibsvm) {
    header = IntegerTokens(FirstLine(text));
    // Two or four numbers cannot start a data row (labels are comma-separated, features have
    // ':value'): a header with the wrong count, said as such. One number is a row of one label.
    if (header && header->size() != 3 && header->size() != 1) {
      const std::string_view line = FirstLine(text);
      throw InputError(file_name, 1,
                       "malformed header: expected 'N D L' (three non-negative integers), got " +
                           std::to_string(header->size()) + " numbers: '" + std::string(line.substr(0, 80)) + "'");
    }
    if (header && header->size() != 3) header.reset();
    if (!header && options.format == TextFormat::kXmlRepo) {
      throw InputError(
          file_name, 1,
          "malformed header: expected 'N D L' (three non-negative integers), got " +
              Quote(FirstLine(text).data(), FirstLine(text).data() + FirstLine(text).size()));
    }
  }
  if (header) {
    CheckDimension(file_name, "feature count D", (*header)[1]);
    CheckDimension(file_name, "label count L", (*header)[2]);
    spec.feature_limit = (*header)[1];
    spec.label_limit = (*header)[2];
    spec.feature_limit_declared = spec.label_limit_declared = true;
    begin = AfterFirstLine(text);
    LimitLinesByHeader(windows, (*header)[1], (*header)[2]);
  }

  ParsedBody body = ParseBody(windows, begin, spec, file_name, options.threads,
                              header ? std::optional<uint64_t>((*header)[0]) : std::nullopt);
  Dataset dataset;
  dataset.source = file_name;
  const uint64_t num_features = header ? (*header)[1] : body.feature_bound;
  const uint64_t num_labels = header ? (*header)[2] : body.label_bound;
  if (header) {
    WarnRowMismatch(file_name, (*header)[0], body.rows, &dataset.warnings);
    // The model is sized by the header's D and L: say so when the rows use a small part of them
    // (a 2-row file declaring 10,000,000 features builds a 1.28e9-parameter first layer).
    for (const auto& [kind, declared, used] : {std::tuple<const char*, uint64_t, uint64_t>{"features", num_features, body.feature_bound},
                                              {"labels", num_labels, body.label_bound}}) {
      if (declared >= 100000 && declared > 16 * std::max<uint64_t>(used, 1))
        dataset.warnings.push_back(file_name + ": the header declares " + std::to_string(declared) + " " + kind +
                                   " but the rows use ids below " + std::to_string(used) +
                                   "; the model is sized by the header");
    }
  }
  WarnDuplicates(file_name, body.duplicate_line, &dataset.warnings);
  dataset.features =
      MergeChunks(body.chunks, body.rows, num_features, false, true, options.threads);
  dataset.labels = MergeChunks(body.chunks, body.rows, num_labels, true, false, options.threads);
  return dataset;
}

CsrMatrix ParseSplitMatrixText(std::string_view text, const std::string& file_name,
                               const LoadOptions& options, bool binary,
                               std::vector<std::string>* warnings) {
  TextWindows whole(text);
  return ParseSplitMatrixText(whole, file_name, options, binary, warnings);
}

CsrMatrix ParseSplitMatrixText(TextWindows& windows, const std::string& file_name, const LoadOptions& options,
                               bool binary, std::vector<std::string>* warnings) {
  CheckNotEmpty(windows, file_name);
  const std::string_view text = windows.window();  // the first window: the header is in it
  const auto header = IntegerTokens(FirstLine(text));
  if (!header || header->size() != 2) {
    const std::string_view line = FirstLine(text);
    throw InputError(file_name, 1,
                     "malformed header: expected 'rows cols' (two non-negative integers), got " +
                         Quote(line.data(), line.data() + line.size()));
  }
  CheckDimension(file_name, "column count", (*header)[1]);
  ParseSpec spec;
  spec.labeled = false;
  spec.one_based = options.one_based;
  spec.feature_limit = (*header)[1];
  spec.feature_limit_declared = true;
  if (binary) spec.column_kind = "label";  // the Y file of a split pair: its columns are labels
  LimitLinesByHeader(windows, binary ? 0 : (*header)[1], binary ? (*header)[1] : 0);

  const size_t begin = AfterFirstLine(text);
  ParsedBody body = ParseBody(windows, begin, spec, file_name, options.threads, (*header)[0]);
  WarnRowMismatch(file_name, (*header)[0], body.rows, warnings);
  if (!binary) WarnDuplicates(file_name, body.duplicate_line, warnings);
  return MergeChunks(body.chunks, body.rows, (*header)[1], false, !binary, options.threads);
}

}  // namespace xmlt::data
