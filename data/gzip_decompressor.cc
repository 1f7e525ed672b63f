// gzip through ISA-L's inflate: 2.9x zlib's rate on the same file on an AVX2 core (bench_data's
// BM_InflateGzip, docs/BENCHMARKS.md), where zlib alone would be slower than the parser it feeds.
// ISA-L checks each member's CRC-32 and length.
#include <isa-l/igzip_lib.h>

#include <algorithm>
#include <string>

#include "data/decompressor.h"
#include "data/input_error.h"

namespace xmlt::data {
namespace {

class GzipDecompressor : public Decompressor {
 public:
  GzipDecompressor(std::shared_ptr<const MappedFile> file, std::string path)
      : file_(std::move(file)), path_(std::move(path)) {
    Reset();
    state_.next_in = reinterpret_cast<uint8_t*>(const_cast<char*>(file_->data()));
    state_.avail_in = uint32_t(std::min<size_t>(file_->size(), kMaxInput));
    fed_ = state_.avail_in;
  }

  size_t Read(char* out, size_t capacity) override {
    size_t written = 0;
    while (written < capacity) {
      if (state_.block_state == ISAL_BLOCK_FINISH) {
        // A member ended: another may follow (concatenated .gz files); anything else is garbage.
        SkipTrailingZeros();
        if (Offset() == file_->size()) return written;
        const std::string_view rest(file_->data() + Offset(), file_->size() - Offset());
        if (DetectCompression(rest) != Compression::kGzip) Fail("data after the last gzip member is not a gzip member");
        Reset();
      }
      Feed();
      state_.next_out = reinterpret_cast<uint8_t*>(out + written);
      state_.avail_out = uint32_t(std::min<size_t>(capacity - written, kMaxInput));
      const uint32_t before = state_.avail_out;
      const size_t offset = Offset();
      const int status = isal_inflate(&state_);
      written += before - state_.avail_out;
      // Negative: corrupt data; above ISAL_OUT_OVERFLOW: header fields or a dictionary it was not
      // given buffers for, which a gzip member cannot need.
      if (status < 0 || status > ISAL_OUT_OVERFLOW) Fail(Describe(status));
      const bool progress = before != state_.avail_out || offset != Offset();
      if (state_.block_state != ISAL_BLOCK_FINISH && !progress) {
        if (Offset() == file_->size()) Fail("the archive is truncated: it ends inside a gzip member");
        Fail(Describe(status));  // stuck with input left: never seen, but not a loop either
      }
    }
    return written;
  }

 private:
  static constexpr size_t kMaxInput = size_t{1} << 30;  // ISA-L counts in 32 bits

  void Reset() {
    isal_inflate_reset(&state_);
    state_.crc_flag = ISAL_GZIP;
  }

  // Gives ISA-L the next part of the mapped file when it has used what it had.
  void Feed() {
    if (state_.avail_in > 0 || fed_ == file_->size()) return;
    state_.next_in = reinterpret_cast<uint8_t*>(const_cast<char*>(file_->data()) + fed_);
    state_.avail_in = uint32_t(std::min<size_t>(file_->size() - fed_, kMaxInput));
    fed_ += state_.avail_in;
  }

  size_t Offset() const { return fed_ - state_.avail_in; }

  // Some tools pad a gzip file with zeros after its last member (gzip -d ignores them).
  void SkipTrailingZeros() {
    size_t at = Offset();
    while (at < file_->size() && file_->data()[at] == '\0') ++at;
    if (at == file_->size()) {
      fed_ = at;
      state_.avail_in = 0;
    }
  }

  static std::string Describe(int status) {
    switch (status) {
      case ISAL_INVALID_BLOCK: return "corrupt gzip data (an invalid deflate block)";
      case ISAL_INVALID_SYMBOL: return "corrupt gzip data (an invalid deflate symbol)";
      case ISAL_INVALID_LOOKBACK: return "corrupt gzip data (a distance before the start)";
      case ISAL_INVALID_WRAPPER: return "not a valid gzip header";
      case ISAL_UNSUPPORTED_METHOD: return "a gzip compression method other than deflate";
      case ISAL_INCORRECT_CHECKSUM: return "corrupt gzip data (the CRC-32 or length of a member does not match)";
      default: return "corrupt gzip data (ISA-L status " + std::to_string(status) + ")";
    }
  }

  [[noreturn]] void Fail(const std::string& problem) const {
    throw InputError(path_, 0, problem + " at compressed byte " + std::to_string(Offset()) + " of " +
                                   std::to_string(file_->size()));
  }

  std::shared_ptr<const MappedFile> file_;
  std::string path_;
  inflate_state state_{};
  size_t fed_ = 0;  // bytes of the file handed to ISA-L so far
};

}  // namespace

std::unique_ptr<Decompressor> MakeGzipDecompressor(std::shared_ptr<const MappedFile> file, const std::string& path) {
  return std::make_unique<GzipDecompressor>(std::move(file), path);
}

}  // namespace xmlt::data
