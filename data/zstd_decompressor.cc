// zstd through libzstd's streaming decoder (each frame's checksum checked when it has one).
#include <zstd.h>

#include <memory>
#include <string>

#include "data/decompressor.h"
#include "data/input_error.h"

namespace xmlt::data {
namespace {

class ZstdDecompressor : public Decompressor {
 public:
  ZstdDecompressor(std::shared_ptr<const MappedFile> file, std::string path)
      : file_(std::move(file)), path_(std::move(path)), stream_(ZSTD_createDStream(), ZSTD_freeDStream) {
    if (!stream_) throw std::bad_alloc();
    input_ = {file_->data(), file_->size(), 0};
  }

  size_t Read(char* out, size_t capacity) override {
    ZSTD_outBuffer output{out, capacity, 0};
    while (output.pos < output.size) {
      if (input_.pos == input_.size && !frame_open_) break;  // the end, between frames
      const size_t before = output.pos;
      if (!frame_open_) frame_start_ = input_.pos;
      const size_t status = ZSTD_decompressStream(stream_.get(), &output, &input_);
      // On an error the input position is not advanced (a checksum is checked once the frame has
      // been read whole): the frame's start is where to look.
      if (ZSTD_isError(status))
        Fail(std::string("corrupt zstd data (") + ZSTD_getErrorName(status) + ") in the frame that starts",
             frame_start_);
      // 0: a frame ended and is flushed; anything else: more of this frame is to come.
      frame_open_ = status != 0;
      if (frame_open_ && input_.pos == input_.size && output.pos == before)
        Fail("the archive is truncated: it ends inside a zstd frame", input_.pos);
    }
    return output.pos;
  }

 private:
  [[noreturn]] void Fail(const std::string& problem, size_t at) const {
    throw InputError(path_, 0, problem + " at compressed byte " + std::to_string(at) + " of " +
                                   std::to_string(file_->size()));
  }

  std::shared_ptr<const MappedFile> file_;
  std::string path_;
  std::unique_ptr<ZSTD_DStream, size_t (*)(ZSTD_DStream*)> stream_;
  ZSTD_inBuffer input_{};
  bool frame_open_ = false;
  size_t frame_start_ = 0;  // the compressed offset of the frame being read
};

}  // namespace

std::unique_ptr<Decompressor> MakeZstdDecompressor(std::shared_ptr<const MappedFile> file, const std::string& path) {
  return std::make_unique<ZstdDecompressor>(std::move(file), path);
}

}  // namespace xmlt::data
