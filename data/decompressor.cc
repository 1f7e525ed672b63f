// Detecting the compression of a file and opening its decompressor; see decompressor.h.
#include "data/decompressor.h"

#include <cstdint>
#include <stdexcept>

namespace xmlt::data {

Compression DetectCompression(std::string_view head) {
  if (head.size() >= 2 && head[0] == '\x1f' && head[1] == '\x8b') return Compression::kGzip;
  if (head.size() >= 4 && head.substr(0, 4) == std::string_view("\x28\xb5\x2f\xfd", 4)) return Compression::kZstd;
  // A skippable frame (magic 0x184D2A50 to 0x184D2A5F, little-endian), which pzstd writes first:
  // libzstd's stream decoder skips it.
  if (head.size() >= 4 && (uint8_t(head[0]) & 0xf0) == 0x50 && head.substr(1, 3) == std::string_view("\x2a\x4d\x18", 3))
    return Compression::kZstd;
  return Compression::kNone;
}

const char* UnsupportedCompression(std::string_view head) {
  struct Magic {
    std::string_view bytes;
    const char* name;
  };
  static constexpr Magic kMagics[] = {{{"BZh", 3}, "bzip2"},
                                      {{"\xfd" "7zXZ\x00", 6}, "xz"},
                                      {{"\x04\x22\x4d\x18", 4}, "lz4"},
                                      {{"\x5d\x00\x00", 3}, "lzma"},
                                      {{"PK\x03\x04", 4}, "zip"},
                                      {{"7z\xbc\xaf\x27\x1c", 6}, "7z"}};
  for (const Magic& magic : kMagics)
    if (head.substr(0, magic.bytes.size()) == magic.bytes) return magic.name;
  return nullptr;
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
