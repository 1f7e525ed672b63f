// A moving window of whole lines over a text; see text_windows.h.
#include "data/text_windows.h"

#include <algorithm>
#include <stdexcept>

namespace xmlt::data {

namespace {

// A UTF-8 byte order mark, which some editors write at the start of a file: it is not data (the
// parsers would refuse it as binary). Only line 1 holds it, so line numbers stay right.
constexpr std::string_view kByteOrderMark = "\xEF\xBB\xBF";

// Windows at least this large are read ahead on a thread of their own (the default is 64 MiB).
constexpr size_t kReadAheadBytes = size_t{64} << 10;

}  // namespace

TextWindows::TextWindows(std::string_view whole) : window_(whole) {
  if (window_.substr(0, kByteOrderMark.size()) == kByteOrderMark) window_.remove_prefix(kByteOrderMark.size());
}

TextWindows::TextWindows(std::unique_ptr<Decompressor> source, size_t window_bytes)
    : source_(std::move(source)), window_bytes_(std::max<size_t>(window_bytes, 1)), at_end_(false),
      source_done_(false) {
  Fill(std::max(window_bytes_, kByteOrderMark.size() + 1));
  if (buffer_.compare(0, kByteOrderMark.size(), kByteOrderMark) == 0) {
    buffer_.erase(0, kByteOrderMark.size());
    Fill(window_bytes_);
  }
}

TextWindows::~TextWindows() {
  // The read ahead writes into its own string only; it must end before the decompressor goes.
  if (ahead_.valid()) ahead_.wait();
}

// Decompresses the next part on a thread of its own: inflating is serial, so it overlaps the
// parsing of the current window (which runs on every core) instead of following it.
void TextWindows::ReadAhead() {
  ahead_ = std::async(std::launch::async, [source = source_.get(), bytes = window_bytes_] {
    std::string part(bytes, '\0');
    part.resize(source->Read(part.data(), part.size()));
    return part;
  });
}

void TextWindows::Advance(size_t bytes) {
  if (bytes > window_.size()) throw std::logic_error("TextWindows::Advance past the window");
  if (!source_) {
    if (bytes > 0) throw std::logic_error("TextWindows::Advance on a whole text");
    return;
  }
  first_line_ += uint64_t(std::count(window_.begin(), window_.begin() + int64_t(bytes), '\n'));
  buffer_.erase(0, bytes);
  // Nothing consumed: the caller needs more than this window holds.
  Fill(bytes == 0 ? std::max(window_bytes_, 2 * buffer_.size()) : window_bytes_);
}

// Reads until the buffer holds `target` bytes and a whole line, or the text ends; the window is
// then every whole line in it.
void TextWindows::Fill(size_t target) {
  for (;;) {
    while (!source_done_ && buffer_.size() < target) {
      if (window_bytes_ < kReadAheadBytes) {  // small windows: a thread each would cost more
        const size_t old = buffer_.size();
        buffer_.resize(std::max(target, old + 1));
        buffer_.resize(old + source_->Read(buffer_.data() + old, buffer_.size() - old));
        source_done_ = buffer_.size() == old;
        continue;
      }
      if (!ahead_.valid()) ReadAhead();
      const std::string part = ahead_.get();  // rethrows the decompressor's InputError
      buffer_ += part;
      source_done_ = part.empty();
      if (!source_done_) ReadAhead();
    }
    const size_t newline = buffer_.rfind('\n');
    if (source_done_ || newline != std::string::npos) {
      at_end_ = source_done_;
      window_ = std::string_view(buffer_).substr(0, at_end_ ? buffer_.size() : newline + 1);
      return;
    }
    target = 2 * buffer_.size();  // one line longer than the window: take more
  }
}

OpenedText OpenText(const std::string& path, size_t window_bytes) {
  OpenedText opened;
  opened.file = MappedFile::Open(path);
  opened.compression = DetectCompression(opened.file->view().substr(0, 4));
  if (opened.compression == Compression::kNone) {
    opened.text = std::make_unique<TextWindows>(opened.file->view());
  } else {
    opened.text = std::make_unique<TextWindows>(OpenDecompressor(opened.file, path, opened.compression), window_bytes);
  }
  return opened;
}

}  // namespace xmlt::data
