// The body of a text file, parsed in parallel; see text_body.h.
#include "data/text_body.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>

#include "data/input_error.h"

namespace xmlt::data::text {
namespace {

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
      ParseRows(window, spec, bounds[c], bounds[c + 1], &body->chunks[first + c]);
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

}  // namespace

// The end of the line holding the last non-blank character.
size_t ContentEnd(std::string_view text, size_t begin) {
  size_t last = text.size();
  while (last > begin && IsDelimiter(text[last - 1])) --last;
  if (last == begin) return begin;
  const size_t newline = text.find('\n', last);
  return newline == std::string_view::npos ? text.size() : newline + 1;
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

}  // namespace xmlt::data::text
