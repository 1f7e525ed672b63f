// Parallel parsers for the text formats: the body is cut into chunks at line boundaries, each chunk
// is parsed by a TBB task into local vectors, and the chunks are merged in order into CSR arrays.
#include "data/text_reader.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <optional>
#include <tuple>

#include "data/input_error.h"

namespace xmlt::data {
namespace {

constexpr uint64_t kMaxId = std::numeric_limits<uint32_t>::max();
constexpr size_t kNone = std::numeric_limits<size_t>::max();

inline bool IsBlank(char c) { return c == ' ' || c == '\t' || c == '\r'; }
inline bool IsDelimiter(char c) { return IsBlank(c) || c == '\n'; }
inline bool IsControl(char c) {
  const auto u = static_cast<unsigned char>(c);
  return (u < 0x20 && c != '\t' && c != '\r' && c != '\n') || u == 0x7f;
}

// The token starting at `p`, printable and bounded, for messages.
std::string Quote(const char* p, const char* end) {
  std::string out = "'";
  for (size_t n = 0; p < end && !IsDelimiter(*p); ++p, ++n) {
    if (n == 40) {
      out += "...";
      break;
    }
    if (IsControl(*p) || static_cast<unsigned char>(*p) >= 0x80) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", static_cast<unsigned char>(*p));
      out += hex;
    } else {
      out += *p;
    }
  }
  return out + "'";
}

enum class Digits { kOk, kNone, kTooLarge };

// Hand-rolled because it is the hot loop: ids are plain decimal digits, at most 2^32-1.
inline Digits ParseId(const char*& p, const char* end, uint64_t* value) {
  const char* start = p;
  uint64_t v = 0;
  bool too_large = false;
  while (p < end && static_cast<unsigned>(*p - '0') < 10) {
    v = v * 10 + static_cast<unsigned>(*p - '0');
    if (v > kMaxId) {
      too_large = true;
      v = kMaxId;  // keeps consuming digits without overflowing
    }
    ++p;
  }
  *value = v;
  if (p == start) return Digits::kNone;
  return too_large ? Digits::kTooLarge : Digits::kOk;
}

struct Entry {
  uint32_t id;
  float value;
};

// What a run of rows parses to. Rules that apply to one row at a time only, so any chunking of the
// file gives the same rows; errors and warnings keep the smallest byte offset, so the first in file
// order wins whatever the thread count.
struct ChunkResult {
  std::vector<uint64_t> feature_ends;  // per row: end of its entries in `features`
  std::vector<uint64_t> label_ends;    // per row: end of its ids in `labels` (labeled text only)
  std::vector<Entry> features;
  std::vector<uint32_t> labels;
  uint64_t feature_bound = 0;  // max feature id + 1 (0 when none)
  uint64_t label_bound = 0;
  size_t error_offset = kNone;
  std::string error;
  size_t duplicate_offset = kNone;  // start of the first line with a repeated feature id
};

struct ParseSpec {
  bool labeled = true;  // rows start with an optional label list
  bool one_based = false;
  // Ids must stay below the declared D (or L) when known; otherwise the count, max id + 1, must
  // still fit the 32-bit column counts that the cache and the model accept.
  uint64_t feature_limit = kMaxId;
  uint64_t label_limit = kMaxId;
  bool feature_limit_declared = false;
  bool label_limit_declared = false;
  const char* column_kind = "feature";  // what a column id is called: "label" in a split pair's Y file
};

class ChunkParser {
 public:
  ChunkParser(std::string_view text, const ParseSpec& spec, ChunkResult* out)
      : base_(text.data()), end_(text.data() + text.size()), spec_(spec), out_(*out) {}

  // Parses the lines in [begin, end) (offsets into the text); stops at the first error.
  void Run(size_t begin, size_t end) {
    const char* p = base_ + begin;
    const char* stop = base_ + end;
    end_ = stop;
    const size_t guess_rows = (end - begin) / 256 + 1;
    out_.feature_ends.reserve(guess_rows);
    if (spec_.labeled) out_.label_ends.reserve(guess_rows);
    out_.features.reserve((end - begin) / 10 + 1);
    while (p < stop) {
      if (!ParseRow(p)) return;
    }
  }

 private:
  bool Fail(const char* at, std::string problem) {
    out_.error_offset = static_cast<size_t>(at - base_);
    out_.error = std::move(problem);
    return false;
  }
  // `bad` is the offending byte; control bytes mean the file is not text at all.
  bool FailAt(const char* bad, const char* token, std::string problem) {
    // Numbers, commas, colons and spaces are all ASCII: a control byte or one above 0x7f means the
    // file is not text at all.
    if (bad < end_ && (IsControl(*bad) || static_cast<unsigned char>(*bad) >= 0x80)) {
      char text[64];
      std::snprintf(text, sizeof text, "binary data (byte 0x%02x)", static_cast<unsigned char>(*bad));
      return Fail(bad, text);
    }
    return Fail(token, std::move(problem));
  }

  bool CheckId(const char* token, uint64_t* id, bool feature) {
    const char* kind = feature ? spec_.column_kind : "label";
    if (spec_.one_based) {
      if (*id == 0) return Fail(token, std::string(kind) + " id 0 in a one-based file");
      --*id;
    }
    const uint64_t limit = feature ? spec_.feature_limit : spec_.label_limit;
    if (*id >= limit) {
      const bool declared = feature ? spec_.feature_limit_declared : spec_.label_limit_declared;
      const uint64_t shown = *id + (spec_.one_based ? 1 : 0);
      std::string problem = std::string(kind) + " id " + std::to_string(shown) + " out of range";
      const std::string ids = (spec_.one_based ? ", ids 1.." : ", ids 0..") +
                              std::to_string(limit - (spec_.one_based ? 0 : 1)) + ")";
      if (declared) {
        problem += " (the header declares " + std::to_string(limit) + " " + kind + "s" + ids;
      } else {
        problem += " (at most 2^32-1 " + std::string(kind) + "s" + ids;
      }
      return Fail(token, problem);
    }
    return true;
  }

  // Labels occupy [p, q): "l1,l2,...".
  bool ParseLabels(const char* p, const char* q) {
    const char* list = p;
    for (;;) {
      const char* token = p;
      uint64_t id;
      const Digits digits = ParseId(p, q, &id);
      if (digits == Digits::kNone) {
        if (p < q && *p == '-') return Fail(token, "negative label id in " + Quote(list, q));
        if (p < q && *p == ',') return Fail(token, "empty label id in " + Quote(list, q));
        return FailAt(p, list, "invalid label list " + Quote(list, q));
      }
      if (digits == Digits::kTooLarge)
        return Fail(token, "label id in " + Quote(list, q) + " exceeds 2^32-1");
      if (!CheckId(token, &id, false)) return false;
      out_.labels.push_back(static_cast<uint32_t>(id));
      if (p == q) return true;
      if (*p != ',') return FailAt(p, list, "invalid label list " + Quote(list, q));
      if (++p == q) return Fail(list, "label list " + Quote(list, q) + " ends with ','");
    }
  }

  bool ParseFeature(const char*& p) {
    const char* token = p;
    uint64_t id;
    const Digits digits = ParseId(p, end_, &id);
    if (digits == Digits::kNone) {
      if (p < end_ && *p == ':')
        return Fail(token, "feature token " + Quote(token, end_) + " has no id");
      if (p < end_ && *p == '-') return Fail(token, "negative feature id in " + Quote(token, end_));
      return FailAt(p, token, "invalid feature token " + Quote(token, end_));
    }
    if (p == end_ || *p != ':') {
      if (p == end_ || IsDelimiter(*p)) {
        return Fail(token, "feature token " + Quote(token, end_) + " has no ':value'");
      }
      return FailAt(p, token, "invalid feature token " + Quote(token, end_));
    }
    if (digits == Digits::kTooLarge) {
      return Fail(token, "feature id in " + Quote(token, end_) + " exceeds 2^32-1");
    }
    ++p;
    if (p == end_ || IsDelimiter(*p)) {
      return Fail(token, "feature token " + Quote(token, end_) + " has no value");
    }
    // from_chars takes no plus sign; after one, a minus sign would be a second sign ("+-3").
    if (*p == '+' && ++p < end_ && *p == '-') return FailAt(p, token, "invalid value in " + Quote(token, end_));
    double value;
    const auto [next, ec] = std::from_chars(p, end_, value);
    if (ec == std::errc::invalid_argument) {
      return FailAt(p, token, "invalid value in " + Quote(token, end_));
    }
    if (next < end_ && !IsDelimiter(*next)) {
      return FailAt(next, token, "invalid value in " + Quote(token, end_));
    }
    // Doubles from halfway above FLT_MAX would round to infinity as floats.
    constexpr double kFloatOverflow = 0x1.ffffffp+127;
    if (ec == std::errc::result_out_of_range ||
        (std::isfinite(value) && std::fabs(value) >= kFloatOverflow)) {
      return Fail(token, "value in " + Quote(token, end_) + " is out of float range");
    }
    if (!std::isfinite(value)) {
      return Fail(token, "value in " + Quote(token, end_) + " is NaN or infinite");
    }
    if (!CheckId(token, &id, true)) return false;
    out_.features.push_back({static_cast<uint32_t>(id), static_cast<float>(value)});
    p = next;
    return true;
  }

  // On success `p` is at the start of the next line.
  bool ParseRow(const char*& p) {
    const char* line = p;
    const size_t feature_begin = out_.features.size();
    const size_t label_begin = out_.labels.size();
    if (spec_.labeled && !IsDelimiter(*p)) {
      const char* q = p;
      while (q < end_ && !IsDelimiter(*q)) ++q;
      // A first token with ':' is a feature: the row has no labels.
      if (std::memchr(p, ':', static_cast<size_t>(q - p)) == nullptr) {
        if (!ParseLabels(p, q)) return false;
        p = q;
      }
    }
    for (;;) {
      while (p < end_ && IsBlank(*p)) ++p;
      if (p == end_) break;
      if (*p == '\n') {
        ++p;
        break;
      }
      if (!ParseFeature(p)) return false;
    }
    return FinishRow(line, feature_begin, label_begin);
  }

  // Sorts the row's ids, sums repeated features and drops repeated labels. Fails when a sum leaves
  // the float range: each value was checked alone, and an infinite one would poison training.
  bool FinishRow(const char* line, size_t feature_begin, size_t label_begin) {
    auto& features = out_.features;
    bool sorted = true;
    for (size_t i = feature_begin + 1; i < features.size(); ++i) {
      if (features[i].id <= features[i - 1].id) {
        sorted = false;
        break;
      }
    }
    if (!sorted) {
      // Stable, so repeated ids are summed in file order.
      std::stable_sort(features.begin() + feature_begin, features.end(),
                       [](const Entry& a, const Entry& b) { return a.id < b.id; });
      size_t kept = feature_begin;
      for (size_t i = feature_begin; i < features.size(); ++i) {
        if (kept > feature_begin && features[kept - 1].id == features[i].id) {
          features[kept - 1].value += features[i].value;
          if (!std::isfinite(features[kept - 1].value)) {
            const uint64_t shown = features[i].id + (spec_.one_based ? 1 : 0);
            return Fail(line, "the values of repeated feature id " + std::to_string(shown) +
                                  " sum beyond float range");
          }
          if (out_.duplicate_offset == kNone) out_.duplicate_offset = line - base_;
        } else {
          features[kept++] = features[i];
        }
      }
      features.resize(kept);
    }
    if (features.size() > feature_begin) {
      out_.feature_bound = std::max<uint64_t>(out_.feature_bound, features.back().id + 1ull);
    }
    out_.feature_ends.push_back(features.size());
    if (!spec_.labeled) return true;

    auto& labels = out_.labels;
    if (!std::is_sorted(labels.begin() + label_begin, labels.end()) ||
        std::adjacent_find(labels.begin() + label_begin, labels.end()) != labels.end()) {
      std::sort(labels.begin() + label_begin, labels.end());
      labels.erase(std::unique(labels.begin() + label_begin, labels.end()), labels.end());
    }
    if (labels.size() > label_begin) {
      out_.label_bound = std::max<uint64_t>(out_.label_bound, labels.back() + 1ull);
    }
    out_.label_ends.push_back(labels.size());
    return true;
  }

  const char* base_;
  const char* end_;
  const ParseSpec& spec_;
  ChunkResult& out_;
};

template <class F>
void RunWithThreads(int threads, F&& work) {
  if (threads > 0) {
    tbb::task_arena arena(threads);
    arena.execute(work);
  } else {
    work();
  }
}

uint64_t LineOf(std::string_view text, size_t offset) {
  return 1 + static_cast<uint64_t>(std::count(text.begin(), text.begin() + offset, '\n'));
}

// The end of the line holding the last non-blank character.
size_t ContentEnd(std::string_view text, size_t begin) {
  size_t last = text.size();
  while (last > begin && IsDelimiter(text[last - 1])) --last;
  if (last == begin) return begin;
  const size_t newline = text.find('\n', last);
  return newline == std::string_view::npos ? text.size() : newline + 1;
}

// Blank lines after the last content are ignored, except that when the header declares more rows
// than were found they are read as empty rows (a split label file's last rows may have no labels).
size_t TrailingBlankLines(std::string_view text, size_t content_end) {
  const std::string_view tail = text.substr(content_end);
  const size_t newlines = static_cast<size_t>(std::count(tail.begin(), tail.end(), '\n'));
  const size_t last_newline = tail.rfind('\n');
  const bool unterminated =
      last_newline == std::string_view::npos ? !tail.empty() : last_newline + 1 < tail.size();
  return newlines + (unterminated ? 1 : 0);
}

struct ParsedBody {
  std::vector<ChunkResult> chunks;
  uint64_t rows = 0;
  uint64_t feature_bound = 0, label_bound = 0;
  uint64_t duplicate_line = 0;  // the first line with a repeated feature id; 0 = none
};

// Parses the lines in [begin, end) of one window into more chunks of `body`; throws InputError
// at the first error, its line counted from the window's first line.
void ParseWindow(const TextWindows& text, size_t begin, size_t end, const ParseSpec& spec,
                 const std::string& file_name, int threads, ParsedBody* body) {
  const std::string_view window = text.window();
  // Chunk size depends on the window only; the result would not change with it anyway.
  const size_t chunk = std::clamp<size_t>((end - begin) / 256, size_t{32} << 10, size_t{8} << 20);
  std::vector<size_t> bounds{begin};
  for (size_t pos = begin; pos < end;) {
    size_t next = pos + chunk;
    if (next >= end) {
      next = end;
    } else {
      const size_t newline = window.find('\n', next - 1);
      next = (newline == std::string_view::npos || newline >= end) ? end : newline + 1;
    }
    bounds.push_back(next);
    pos = next;
  }

  const size_t first = body->chunks.size();
  body->chunks.resize(first + bounds.size() - 1);
  auto parse_chunks = [&](const tbb::blocked_range<size_t>& range) {
    for (size_t c = range.begin(); c != range.end(); ++c) {
      ChunkParser(window, spec, &body->chunks[first + c]).Run(bounds[c], bounds[c + 1]);
    }
  };
  RunWithThreads(threads, [&] {
    tbb::parallel_for(tbb::blocked_range<size_t>(0, bounds.size() - 1, 1), parse_chunks);
  });

  const ChunkResult* first_error = nullptr;
  size_t duplicate_offset = kNone;
  for (size_t c = first; c < body->chunks.size(); ++c) {
    const ChunkResult& result = body->chunks[c];
    if (result.error_offset != kNone && (!first_error || result.error_offset < first_error->error_offset)) {
      first_error = &result;
    }
    body->rows += result.feature_ends.size();
    body->feature_bound = std::max(body->feature_bound, result.feature_bound);
    body->label_bound = std::max(body->label_bound, result.label_bound);
    duplicate_offset = std::min(duplicate_offset, result.duplicate_offset);
  }
  const auto line_of = [&](size_t offset) { return text.first_line() - 1 + LineOf(window, offset); };
  if (first_error != nullptr) throw InputError(file_name, line_of(first_error->error_offset), first_error->error);
  if (duplicate_offset != kNone && body->duplicate_line == 0) body->duplicate_line = line_of(duplicate_offset);
}

// Parses the rows from `begin` in the current window to the end of the text, a window at a time.
// Each window is parsed up to its last line with content; the blank lines after it go on to the
// next window, where they are rows if content follows and trailing blank lines if not.
ParsedBody ParseBody(TextWindows& text, size_t begin, const ParseSpec& spec, const std::string& file_name,
                     int threads, std::optional<uint64_t> declared_rows) {
  ParsedBody body;
  size_t trailing_blank_lines = 0;
  for (;;) {
    const std::string_view window = text.window();
    const size_t end = ContentEnd(window, begin);
    ParseWindow(text, begin, end, spec, file_name, threads, &body);
    if (text.at_end()) {
      trailing_blank_lines = TrailingBlankLines(window, end);
      break;
    }
    text.Advance(end);
    begin = 0;
  }
  if (declared_rows && *declared_rows > body.rows) {
    const uint64_t extra = std::min<uint64_t>(*declared_rows - body.rows, trailing_blank_lines);
    if (extra > 0 && body.chunks.empty()) body.chunks.emplace_back();
    for (uint64_t i = 0; i < extra; ++i) {
      ChunkResult& last = body.chunks.back();
      last.feature_ends.push_back(last.features.size());
      if (spec.labeled) last.label_ends.push_back(last.labels.size());
    }
    body.rows += extra;
  }
  return body;
}

// Concatenates the chunks in order; `labels` selects the label or the feature vectors.
CsrMatrix MergeChunks(std::vector<ChunkResult>& chunks, uint64_t rows, uint64_t cols, bool labels,
                      bool keep_values, int threads) {
  std::vector<uint64_t> row_offset(chunks.size() + 1, 0), nnz_offset(chunks.size() + 1, 0);
  for (size_t c = 0; c < chunks.size(); ++c) {
    const auto& ends = labels ? chunks[c].label_ends : chunks[c].feature_ends;
    row_offset[c + 1] = row_offset[c] + ends.size();
    nnz_offset[c + 1] = nnz_offset[c] + (ends.empty() ? 0 : ends.back());
  }
  const uint64_t nnz = nnz_offset.back();
  std::vector<uint64_t> row_ptr(rows + 1, 0);
  std::vector<uint32_t> col_idx(nnz);
  std::vector<float> values(keep_values ? nnz : 0);
  RunWithThreads(threads, [&] {
    tbb::parallel_for(size_t{0}, chunks.size(), [&](size_t c) {
      ChunkResult& chunk = chunks[c];
      const auto& ends = labels ? chunk.label_ends : chunk.feature_ends;
      for (size_t r = 0; r < ends.size(); ++r) {
        row_ptr[row_offset[c] + r + 1] = nnz_offset[c] + ends[r];
      }
      if (labels) {
        std::copy(chunk.labels.begin(), chunk.labels.end(), col_idx.begin() + nnz_offset[c]);
      } else {
        for (size_t i = 0; i < chunk.features.size(); ++i) {
          col_idx[nnz_offset[c] + i] = chunk.features[i].id;
          if (keep_values) values[nnz_offset[c] + i] = chunk.features[i].value;
        }
      }
    });
  });
  CsrMatrix matrix;
  matrix.num_rows = rows;
  matrix.num_cols = cols;
  matrix.row_ptr = SharedArray<uint64_t>(std::move(row_ptr));
  matrix.col_idx = SharedArray<uint32_t>(std::move(col_idx));
  matrix.values = SharedArray<float>(std::move(values));
  return matrix;
}

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

  const size_t begin = AfterFirstLine(text);
  ParsedBody body = ParseBody(windows, begin, spec, file_name, options.threads, (*header)[0]);
  WarnRowMismatch(file_name, (*header)[0], body.rows, warnings);
  if (!binary) WarnDuplicates(file_name, body.duplicate_line, warnings);
  return MergeChunks(body.chunks, body.rows, (*header)[1], false, !binary, options.threads);
}

}  // namespace xmlt::data
