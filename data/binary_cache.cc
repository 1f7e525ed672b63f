// The .xmlb cache: a fixed little-endian header (with the stamp of the text it was made from), then
// the CSR arrays at 8-byte aligned offsets, then the reader's warnings. The checksum is XXH3-64 over the header (checksum field zeroed) and
// the XXH3-64 of each 1 MiB block of the rest, so verification runs in parallel at memory speed.
#include "data/binary_cache.h"

#include <sys/stat.h>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <xxhash.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <type_traits>

#include "data/atomic_file.h"
#include "data/byte_reader.h"
#include "data/input_error.h"
#include "data/file_copy.h"

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the .xmlb layout is little-endian");

namespace xmlt::data {
namespace {

constexpr char kMagic[8] = {'X', 'M', 'L', 'T', 'B', 'I', 'N', '\0'};
constexpr uint32_t kVersion = 2;  // 2: the source stamp
constexpr uint32_t kFlagOneBased = 1u << 0;       // the text source was read with one_based
constexpr uint32_t kFlagFeatureValues = 1u << 1;  // the feature matrix stores values
constexpr uint32_t kKnownFlags = kFlagOneBased | kFlagFeatureValues;
constexpr uint64_t kBlockBytes = 1 << 20;
constexpr uint64_t kMaxCols = std::numeric_limits<uint32_t>::max();

enum Array {
  kFeatureRowPtr,
  kFeatureCols,
  kFeatureValues,
  kLabelRowPtr,
  kLabelCols,
  kWarnings,
  kNumArrays
};

struct Header {
  char magic[8];
  uint32_t version;
  uint32_t flags;
  uint64_t header_bytes;
  uint64_t file_bytes;
  uint64_t rows, features, labels;
  uint64_t feature_nnz, label_nnz, warnings_bytes;
  uint64_t offset[kNumArrays];  // byte offsets from the start of the file
  uint64_t source_bytes;        // the SourceStamp of the text, all zero when there was none
  int64_t source_mtime_ns;
  uint64_t source_content;
  uint64_t checksum;
};
static_assert(sizeof(Header) % 8 == 0 && std::is_trivially_copyable_v<Header>);

uint64_t Align8(uint64_t n) { return (n + 7) & ~uint64_t{7}; }

// Byte sizes of the arrays, in file order.
void ArrayBytes(const Header& h, uint64_t bytes[kNumArrays]) {
  bytes[kFeatureRowPtr] = (h.rows + 1) * sizeof(uint64_t);
  bytes[kFeatureCols] = h.feature_nnz * sizeof(uint32_t);
  bytes[kFeatureValues] = (h.flags & kFlagFeatureValues) ? h.feature_nnz * sizeof(float) : 0;
  bytes[kLabelRowPtr] = (h.rows + 1) * sizeof(uint64_t);
  bytes[kLabelCols] = h.label_nnz * sizeof(uint32_t);
  bytes[kWarnings] = h.warnings_bytes;
}

// Fills the offsets and file size of the canonical layout; the reader accepts no other.
void Layout(Header* h) {
  uint64_t bytes[kNumArrays];
  ArrayBytes(*h, bytes);
  uint64_t at = sizeof(Header);
  for (int a = 0; a < kNumArrays; ++a) {
    h->offset[a] = at;
    at = Align8(at + bytes[a]);
  }
  h->file_bytes = at;
}

uint64_t Checksum(Header header, const uint64_t* block_hashes, size_t blocks) {
  header.checksum = 0;
  XXH3_state_t* state = XXH3_createState();
  XXH3_64bits_reset(state);
  XXH3_64bits_update(state, &header, sizeof header);
  XXH3_64bits_update(state, block_hashes, blocks * sizeof(uint64_t));
  const uint64_t sum = XXH3_64bits_digest(state);
  XXH3_freeState(state);
  return sum;
}

// Hashes the payload in kBlockBytes blocks, as the reader will.
class PayloadHasher {
 public:
  PayloadHasher() : state_(XXH3_createState()) { XXH3_64bits_reset(state_); }
  ~PayloadHasher() { XXH3_freeState(state_); }

  void Write(const void* data, uint64_t bytes) {
    const char* p = static_cast<const char*>(data);
    while (bytes > 0) {
      const uint64_t take = std::min(bytes, kBlockBytes - filled_);
      XXH3_64bits_update(state_, p, take);
      p += take;
      bytes -= take;
      filled_ += take;
      if (filled_ == kBlockBytes) FinishBlock();
    }
  }
  void PadTo8(uint64_t written) {
    static const char zeros[8] = {};
    Write(zeros, Align8(written) - written);
  }
  std::vector<uint64_t> Finish() {
    if (filled_ > 0) FinishBlock();
    return std::move(hashes_);
  }

 private:
  void FinishBlock() {
    hashes_.push_back(XXH3_64bits_digest(state_));
    XXH3_64bits_reset(state_);
    filled_ = 0;
  }
  XXH3_state_t* state_;
  uint64_t filled_ = 0;
  std::vector<uint64_t> hashes_;
};

std::string JoinWarnings(const std::vector<std::string>& warnings) {
  std::string text;
  for (const auto& w : warnings) text += w + "\n";
  return text;
}

[[noreturn]] void Corrupt(const std::string& path, const std::string& problem) {
  throw InputError(path, 0, "corrupt or truncated binary cache: " + problem);
}

// Every index in range and rows sorted, so a crafted cache with a valid checksum is still safe.
bool ValidCsr(const uint64_t* row_ptr, uint64_t rows, const uint32_t* cols, uint64_t nnz,
              uint64_t num_cols, const float* values) {
  if (row_ptr[0] != 0 || row_ptr[rows] != nnz) return false;
  std::atomic<bool> valid{true};
  tbb::parallel_for(tbb::blocked_range<uint64_t>(0, rows, 4096),
                    [&](const tbb::blocked_range<uint64_t>& range) {
                      for (uint64_t r = range.begin(); r != range.end(); ++r) {
                        const uint64_t begin = row_ptr[r], end = row_ptr[r + 1];
                        if (begin > end || end > nnz) {
                          valid = false;
                          return;
                        }
                        for (uint64_t i = begin; i < end; ++i) {
                          if (cols[i] >= num_cols || (i > begin && cols[i] <= cols[i - 1]) ||
                              (values != nullptr && !std::isfinite(values[i]))) {
                            valid = false;
                            return;
                          }
                        }
                      }
                    });
  return valid;
}

// The magic, the size and the version; the rest of the header is checked by the caller.
Header CheckedHeader(const std::string& path, const char* base, uint64_t size) {
  if (size < sizeof(kMagic) || std::memcmp(base, kMagic, sizeof kMagic) != 0) {
    throw InputError(path, 0, "not an xmltrain binary cache (bad magic)");
  }
  ByteReader reader(base, size, path, "binary cache");
  reader.ReadBytes(sizeof kMagic, "magic");
  // The version is read before the whole header: an older header may be shorter.
  const uint32_t version = reader.Read<uint32_t>("version");
  if (version >= 1 && version < kVersion) {
    throw InputError(path, 0,
                     "binary cache version " + std::to_string(version) +
                         " was made by an older xmltrain; make it again with `xmltrain convert`");
  }
  if (version != kVersion) {
    throw InputError(path, 0,
                     "binary cache version " + std::to_string(version) +
                         " is not supported (expected " + std::to_string(kVersion) + ")");
  }
  return ByteReader(base, size, path, "binary cache").Read<Header>("header");
}

SourceStamp StampIn(const Header& h) {
  SourceStamp stamp;
  stamp.bytes = h.source_bytes;
  stamp.mtime_ns = h.source_mtime_ns;
  stamp.content = h.source_content;
  return stamp;
}

}  // namespace

void WriteBinaryCache(const Dataset& dataset, const std::string& path, bool one_based,
                      const SourceStamp& source) {
  const CsrMatrix& x = dataset.features;
  const CsrMatrix& y = dataset.labels;
  const std::string warnings = JoinWarnings(dataset.warnings);
  Header header{};
  std::memcpy(header.magic, kMagic, sizeof kMagic);
  header.version = kVersion;
  header.flags = (one_based ? kFlagOneBased : 0) | (x.binary() ? 0 : kFlagFeatureValues);
  header.header_bytes = sizeof(Header);
  header.rows = x.num_rows;
  header.features = x.num_cols;
  header.labels = y.num_cols;
  header.feature_nnz = x.nnz();
  header.label_nnz = y.nnz();
  header.warnings_bytes = warnings.size();
  header.source_bytes = source.bytes;
  header.source_mtime_ns = source.mtime_ns;
  header.source_content = source.content;
  Layout(&header);

  if (y.num_rows != x.num_rows) {
    throw std::invalid_argument(path + ": features and labels have different row counts");
  }
  // An empty matrix built in memory may have no row_ptr at all; anything else must be complete.
  const uint64_t zero = 0;
  auto rows_of = [&](const CsrMatrix& m) {
    if (m.row_ptr.size() == header.rows + 1) return m.row_ptr.data();
    if (header.rows == 0 && m.row_ptr.empty()) return &zero;
    throw std::invalid_argument(path + ": row_ptr does not have num_rows + 1 entries");
  };
  const void* sources[kNumArrays] = {rows_of(x), x.col_idx.data(), x.values.data(),
                                     rows_of(y), y.col_idx.data(), warnings.data()};
  uint64_t bytes[kNumArrays];
  ArrayBytes(header, bytes);

  // The checksum comes first, from a pass that only hashes, so that the file is written front to
  // back: an output that is a FIFO (output_target.h) cannot seek back to a header left for later.
  PayloadHasher hasher;
  for (int a = 0; a < kNumArrays; ++a) {
    hasher.Write(sources[a], bytes[a]);
    hasher.PadTo8(bytes[a]);
  }
  const std::vector<uint64_t> hashes = hasher.Finish();
  header.checksum = Checksum(header, hashes.data(), hashes.size());
  AtomicFile file(path);
  file.Write(&header, sizeof header);
  static const char zeros[8] = {};
  for (int a = 0; a < kNumArrays; ++a) {
    file.Write(sources[a], bytes[a]);
    file.Write(zeros, Align8(bytes[a]) - bytes[a]);
  }
  file.Commit();
}

Dataset ReadBinaryCache(const std::string& path, bool* one_based, SourceStamp* source) {
  // Read, not mapped: a run keeps these arrays, and a mapping would show (or fault on) anything
  // written to the file later.
  auto map = FileCopy::Read(path);
  const uint64_t size = map->size();
  const char* base = map->data();
  const Header h = CheckedHeader(path, base, size);
  if ((h.flags & ~kKnownFlags) != 0 || h.header_bytes != sizeof(Header)) {
    Corrupt(path, "unknown flags or header size");
  }
  if (h.file_bytes != size) {
    Corrupt(path, "the header says " + std::to_string(h.file_bytes) + " bytes, the file has " +
                      std::to_string(size));
  }
  // Bound every size by the file size before any multiplication, so nothing can overflow.
  if (h.rows >= size / sizeof(uint64_t) || h.feature_nnz > size / sizeof(uint32_t) ||
      h.label_nnz > size / sizeof(uint32_t) || h.warnings_bytes > size || h.features > kMaxCols ||
      h.labels > kMaxCols) {
    Corrupt(path, "sizes in the header do not fit the file");
  }
  Header expected = h;
  Layout(&expected);
  if (expected.file_bytes != size || std::memcmp(expected.offset, h.offset, sizeof h.offset) != 0) {
    Corrupt(path, "array offsets in the header do not match its sizes");
  }

  const uint64_t payload = size - sizeof(Header);
  const size_t blocks = static_cast<size_t>((payload + kBlockBytes - 1) / kBlockBytes);
  std::vector<uint64_t> hashes(blocks);
  tbb::parallel_for(size_t{0}, blocks, [&](size_t b) {
    const uint64_t begin = sizeof(Header) + b * kBlockBytes;
    hashes[b] = XXH3_64bits(base + begin, std::min(kBlockBytes, size - begin));
  });
  if (Checksum(h, hashes.data(), blocks) != h.checksum) Corrupt(path, "checksum mismatch");

  const auto* x_rows = reinterpret_cast<const uint64_t*>(base + h.offset[kFeatureRowPtr]);
  const auto* x_cols = reinterpret_cast<const uint32_t*>(base + h.offset[kFeatureCols]);
  const bool has_values = (h.flags & kFlagFeatureValues) != 0;
  const auto* x_values = reinterpret_cast<const float*>(base + h.offset[kFeatureValues]);
  const auto* y_rows = reinterpret_cast<const uint64_t*>(base + h.offset[kLabelRowPtr]);
  const auto* y_cols = reinterpret_cast<const uint32_t*>(base + h.offset[kLabelCols]);
  if (!ValidCsr(x_rows, h.rows, x_cols, h.feature_nnz, h.features,
                has_values ? x_values : nullptr) ||
      !ValidCsr(y_rows, h.rows, y_cols, h.label_nnz, h.labels, nullptr)) {
    Corrupt(path, "row offsets or ids out of range or unsorted");
  }

  Dataset dataset;
  dataset.source = path;
  std::shared_ptr<const void> owner = map;
  dataset.features.num_rows = dataset.labels.num_rows = h.rows;
  dataset.features.num_cols = h.features;
  dataset.labels.num_cols = h.labels;
  dataset.features.row_ptr = SharedArray<uint64_t>(x_rows, h.rows + 1, owner);
  dataset.features.col_idx = SharedArray<uint32_t>(x_cols, h.feature_nnz, owner);
  if (has_values) dataset.features.values = SharedArray<float>(x_values, h.feature_nnz, owner);
  dataset.labels.row_ptr = SharedArray<uint64_t>(y_rows, h.rows + 1, owner);
  dataset.labels.col_idx = SharedArray<uint32_t>(y_cols, h.label_nnz, owner);

  std::string_view warnings(base + h.offset[kWarnings], h.warnings_bytes);
  while (!warnings.empty()) {
    const size_t newline = std::min(warnings.find('\n'), warnings.size());
    dataset.warnings.emplace_back(warnings.substr(0, newline));
    warnings.remove_prefix(std::min(newline + 1, warnings.size()));
  }
  if (one_based != nullptr) *one_based = (h.flags & kFlagOneBased) != 0;
  if (source != nullptr) *source = StampIn(h);
  return dataset;
}

void ReadBinaryCacheKey(const std::string& path, bool* one_based, SourceStamp* source) {
  // Only the header is read: mapping the file would start reading all of it ahead.
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0 || !S_ISREG(info.st_mode)) {
    throw InputError(path, 0, "not a regular file");
  }
  char bytes[sizeof(Header)] = {};
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) throw InputError(path, 0, "cannot open");
  const size_t got = std::fread(bytes, 1, sizeof bytes, file);
  std::fclose(file);
  const uint64_t size = static_cast<uint64_t>(info.st_size);
  if (got < std::min<uint64_t>(size, sizeof bytes)) throw InputError(path, 0, "cannot read the header");
  const Header h = CheckedHeader(path, bytes, got);
  *one_based = (h.flags & kFlagOneBased) != 0;
  *source = StampIn(h);
}

bool IsBinaryCache(const std::string& path) {
  // Only a regular file can be a cache; opening anything else (a FIFO waits for a writer) is left
  // to the text reader, which refuses it.
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0 || !S_ISREG(info.st_mode)) return false;
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) return false;
  char magic[sizeof kMagic];
  const bool match = std::fread(magic, 1, sizeof magic, file) == sizeof magic &&
                     std::memcmp(magic, kMagic, sizeof kMagic) == 0;
  std::fclose(file);
  return match;
}

}  // namespace xmlt::data
