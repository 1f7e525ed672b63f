// Compressed data files (gzip, zstd) read as a stream of decompressed bytes, so that a large
// compressed dataset is parsed without a temporary file or a decompressed copy of it in memory.
// The compressed file itself is memory-mapped; the format is told by its first bytes, not its name.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "data/mapped_file.h"

namespace xmlt::data {

enum class Compression { kNone, kGzip, kZstd };

// gzip (1f 8b) or zstd (28 b5 2f fd) by the first bytes of a file; kNone otherwise.
Compression DetectCompression(std::string_view head);
// The name of a compression told by the first bytes that this reader does not decode (bzip2, xz,
// lz4, lzma, zip, 7z), or nullptr: such a file is refused as what it is, not parsed as text.
const char* UnsupportedCompression(std::string_view head);

class Decompressor {
 public:
  virtual ~Decompressor() = default;
  // Up to `capacity` more decompressed bytes into `out`; 0 only at the end of the data. Throws
  // InputError(path, 0, ...) naming the compressed byte offset when the archive is corrupt or
  // ends before its last frame or member is complete. Concatenated members or frames are read
  // one after another, as gzip -d and zstd -d do.
  virtual size_t Read(char* out, size_t capacity) = 0;
};

// A decompressor over `file` (which it keeps mapped); `path` names it in messages. Throws
// std::invalid_argument for kNone.
std::unique_ptr<Decompressor> OpenDecompressor(std::shared_ptr<const MappedFile> file, const std::string& path,
                                               Compression compression);

// The two implementations (gzip_decompressor.cc, zstd_decompressor.cc).
std::unique_ptr<Decompressor> MakeGzipDecompressor(std::shared_ptr<const MappedFile> file, const std::string& path);
std::unique_ptr<Decompressor> MakeZstdDecompressor(std::shared_ptr<const MappedFile> file, const std::string& path);

}  // namespace xmlt::data
