// A text file seen through a window of whole lines at a time. A plain file is one window, its
// memory mapping, with no copy; a compressed one is decompressed into a buffer of about
// `window_bytes` that moves along the file, so that parsing never holds the whole decompressed
// text, and the next part is decompressed on a thread of its own while the caller parses this one.
// Line numbers stay those of the file, for messages. A UTF-8 byte order mark at the start of
// the text is not part of it.
#pragma once

#include <cstdint>
#include <future>
#include <memory>
#include <string>
#include <string_view>

#include "data/decompressor.h"

namespace xmlt::data {

class TextWindows {
 public:
  // The whole text as one window (a mapped plain file, or text in memory).
  explicit TextWindows(std::string_view whole);
  // The decompressed text of `source` (named `source_name` in errors), a window at a time.
  TextWindows(std::unique_ptr<Decompressor> source, std::string source_name, size_t window_bytes = size_t{64} << 20);
  ~TextWindows();
  TextWindows(const TextWindows&) = delete;
  TextWindows& operator=(const TextWindows&) = delete;

  // The current window: whole lines (its last line without a newline only at the end of the text),
  // at least one unless the text has ended.
  std::string_view window() const { return window_; }
  // The line number of the window's first byte (1 for the file's first line).
  uint64_t first_line() const { return first_line_; }
  // The window reaches the end of the text.
  bool at_end() const { return at_end_; }
  // Done with the window's first `bytes` (which must end a line): the next window starts after
  // them. With 0, the window grows instead (twice as large), so a caller that needs more than one
  // window of lines (a run of blank lines, one very long row) always gets them.
  void Advance(size_t bytes);
  // A line longer than `bytes` is refused (InputError naming the file and line, with `reason`,
  // which says where the bound comes from) instead of being read on into memory without end.
  // Until a parser knows better (from a header's D and L), kDefaultMaxLineBytes.
  void LimitLineBytes(uint64_t bytes, std::string reason);
  static constexpr uint64_t kDefaultMaxLineBytes = uint64_t{64} << 20;

 private:
  void Fill(size_t target);
  void ReadAhead();

  std::unique_ptr<Decompressor> source_;
  std::string source_name_;
  uint64_t max_line_bytes_ = kDefaultMaxLineBytes;
  std::string max_line_reason_ = "the bound for a file without a header";
  std::future<std::string> ahead_;  // the next part of the text, being decompressed
  std::string buffer_;  // the window and the partial line after it
  size_t window_bytes_ = 0;
  std::string_view window_;
  uint64_t first_line_ = 1;
  bool at_end_ = true;
  bool source_done_ = true;
};

// The text of the file at `path`: one window over its mapping, or its decompressed stream when it
// is gzip or zstd (told by its first bytes). Throws InputError as MappedFile::Open does.
struct OpenedText {
  std::shared_ptr<const MappedFile> file;
  Compression compression = Compression::kNone;
  std::unique_ptr<TextWindows> text;
};
OpenedText OpenText(const std::string& path, size_t window_bytes = size_t{64} << 20);

}  // namespace xmlt::data
