// A moving window of whole lines over a text; see text_windows.h.
#include "data/text_windows.h"

#include <algorithm>
#include <stdexcept>

#include "data/input_error.h"

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

TextWindows::TextWindows(std::unique_ptr<Decompressor> source, std::string source_name, size_t window_bytes)
    : source_(std::move(source)), source_name_(std::move(source_name)), window_bytes_(std::max<size_t>(window_bytes, 1)),
      at_end_(false), source_done_(false) {
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

void TextWindows::LimitLineBytes(uint64_t bytes, std::string reason) {
  max_line_bytes_ = bytes;
  max_line_reason_ = std::move(reason);
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
    // One line longer than the window: take more, up to the bound (a compressed file of one
    // endless line would otherwise take all memory before anything could refuse it).
    if (buffer_.size() > max_line_bytes_)
      throw InputError(source_name_, first_line_,
                       "a line longer than " + std::to_string(max_line_bytes_) + " bytes, " + max_line_reason_ +
                           ": not a data file, or a corrupt one");
    target = 2 * buffer_.size();
  }
}

OpenedText OpenText(const std::string& path, size_t window_bytes) {
  OpenedText opened;
  opened.file = MappedFile::Open(path);
  const std::string_view head = opened.file->view().substr(0, 8);
  // This program's own files, given where data goes, are named as such, not parsed as text.
  if (head == "XMLTMODL" || head == "XMLTCKPT")
    throw InputError(path, 0, std::string("is an xmltrain ") + (head == "XMLTMODL" ? "model" : "checkpoint") +
                                  " file, not a data file" + (head == "XMLTMODL" ? " (give it to --model)" : ""));
  if (const char* unsupported = UnsupportedCompression(head))
    throw InputError(path, 0, std::string("unsupported compression: ") + unsupported +
                                  " (decompress it, or recompress it with gzip or zstd, which are read as they are)");
  opened.compression = DetectCompression(head);
  if (opened.compression == Compression::kNone) {
    opened.text = std::make_unique<TextWindows>(opened.file->view());
  } else {
    opened.text =
        std::make_unique<TextWindows>(OpenDecompressor(opened.file, path, opened.compression), path, window_bytes);
  }
  return opened;
}

}  // namespace xmlt::data
