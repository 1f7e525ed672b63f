// Detecting the compression of a file and opening its decompressor; see decompressor.h.
#include "data/decompressor.h"

#include <stdexcept>

namespace xmlt::data {

Compression DetectCompression(std::string_view head) {
  if (head.size() >= 2 && head[0] == '\x1f' && head[1] == '\x8b') return Compression::kGzip;
  if (head.size() >= 4 && head.substr(0, 4) == std::string_view("\x28\xb5\x2f\xfd", 4)) return Compression::kZstd;
  return Compression::kNone;
}

const char* CompressionName(Compression compression) {
  switch (compression) {
    case Compression::kGzip: return "gzip";
    case Compression::kZstd: return "zstd";
    default: return "none";
  }
}

std::unique_ptr<Decompressor> OpenDecompressor(std::shared_ptr<const MappedFile> file, const std::string& path,
                                               Compression compression) {
  switch (compression) {
    case Compression::kGzip: return MakeGzipDecompressor(std::move(file), path);
    case Compression::kZstd: return MakeZstdDecompressor(std::move(file), path);
    default: throw std::invalid_argument("OpenDecompressor: " + path + " is not compressed");
  }
}

}  // namespace xmlt::data
