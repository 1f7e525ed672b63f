// Checkpoint container; see checkpoint_file.h.
#include "scheduler/checkpoint_file.h"

#include <fcntl.h>
#include <unistd.h>
#include <xxhash.h>

#include <cstring>
#include <filesystem>

#include "data/atomic_file.h"
#include "data/input_error.h"

namespace xmlt::scheduler {
namespace {

constexpr char kMagic[8] = {'X', 'M', 'L', 'T', 'C', 'K', 'P', 'T'};
constexpr uint32_t kVersion = 1;
constexpr uint32_t kMaxSections = 4096;
constexpr uint32_t kMaxNameBytes = 256;
constexpr const char* kFileName = "checkpoint.xmlc";

template <class T>
void Put(std::string* out, const T& value) {
  out->append(reinterpret_cast<const char*>(&value), sizeof(T));
}

// Reads fixed-size fields and byte ranges, never past the end (the checksum excluded).
class Cursor {
 public:
  Cursor(const char* bytes, size_t end, const std::string& source) : bytes_(bytes), end_(end), source_(source) {}
  template <class T>
  T Get(const char* what) {
    T value;
    std::memcpy(&value, Take(sizeof(T), what), sizeof(T));
    return value;
  }
  const char* Take(uint64_t count, const char* what) {
    if (count > end_ - pos_)
      throw data::InputError(source_, 0, "truncated checkpoint: " + std::string(what) + " needs " +
                                             std::to_string(count) + " bytes at offset " + std::to_string(pos_) +
                                             ", " + std::to_string(end_ - pos_) + " remain");
    const char* at = bytes_ + pos_;
    pos_ += size_t(count);
    return at;
  }
  size_t pos() const { return pos_; }
  size_t remaining() const { return end_ - pos_; }

 private:
  const char* bytes_;
  size_t end_;
  const std::string& source_;
  size_t pos_ = 0;
};

void SyncDirectory(const std::string& directory) {
  const int fd = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0) return;  // best effort: the rename itself is already atomic
  ::fsync(fd);
  ::close(fd);
}

}  // namespace

std::string CheckpointPath(const std::string& directory) {
  return (std::filesystem::path(directory) / kFileName).string();
}

void CheckpointWriter::Add(const std::string& name, const void* data, size_t bytes) {
  if (name.empty() || name.size() > kMaxNameBytes) throw std::invalid_argument("bad checkpoint section name '" + name + "'");
  sections_.push_back({name, data, bytes});
}

void CheckpointWriter::Write(const std::string& directory) const {
  std::error_code error;
  std::filesystem::create_directories(directory, error);
  if (error) throw std::runtime_error(directory + ": cannot create checkpoint directory: " + error.message());
  // A write killed before its rename leaves "checkpoint.xmlc.tmp.PID" behind; it never replaced
  // anything, so it is only litter.
  const std::string stale_prefix = std::string(kFileName) + ".tmp.";
  for (const auto& entry : std::filesystem::directory_iterator(directory, error))
    if (entry.path().filename().string().rfind(stale_prefix, 0) == 0) std::filesystem::remove(entry.path(), error);

  std::string header(kMagic, sizeof(kMagic));
  Put(&header, kVersion);
  Put(&header, uint32_t(sections_.size()));
  Put(&header, uint64_t(meta_.size()));
  header += meta_;
  XXH3_state_t* state = XXH3_createState();
  XXH3_64bits_reset(state);
  data::AtomicFile file(CheckpointPath(directory));
  auto write = [&](const void* data, size_t bytes) {
    XXH3_64bits_update(state, data, bytes);
    file.Write(data, bytes);
  };
  try {
    write(header.data(), header.size());
    for (const Section& section : sections_) {
      std::string head;
      Put(&head, uint32_t(section.name.size()));
      head += section.name;
      Put(&head, uint64_t(section.bytes));
      write(head.data(), head.size());
      write(section.data, section.bytes);
    }
  } catch (...) {
    XXH3_freeState(state);
    throw;
  }
  const uint64_t checksum = XXH3_64bits_digest(state);
  XXH3_freeState(state);
  file.Write(&checksum, sizeof(checksum));
  file.Commit();
  SyncDirectory(directory);
}

CheckpointReader CheckpointReader::Open(const std::string& directory) {
  const std::string path = CheckpointPath(directory);
  std::error_code error;
  if (!std::filesystem::is_regular_file(path, error))
    throw data::InputError(path, 0, "no checkpoint here (--resume takes the directory given to --checkpoint-dir)");
  CheckpointReader reader;
  reader.source_ = path;
  reader.mapping_ = data::MappedFile::Open(path, /*populate=*/true);
  reader.data_ = reader.mapping_->data();
  reader.size_ = reader.mapping_->size();
  return Index(std::move(reader));
}

CheckpointReader CheckpointReader::Parse(std::vector<char> bytes, std::string source) {
  CheckpointReader reader;
  reader.source_ = std::move(source);
  reader.owned_ = std::move(bytes);
  reader.data_ = reader.owned_.data();
  reader.size_ = reader.owned_.size();
  return Index(std::move(reader));
}

CheckpointReader CheckpointReader::Index(CheckpointReader reader) {
  const char* b = reader.data_;
  const size_t size = reader.size_;
  const std::string& src = reader.source_;
  if (size < sizeof(kMagic) || std::memcmp(b, kMagic, sizeof(kMagic)) != 0)
    throw data::InputError(src, 0, "not an xmltrain checkpoint");
  if (size < sizeof(kMagic) + 16 + sizeof(uint64_t))
    throw data::InputError(src, 0, "truncated checkpoint (" + std::to_string(size) + " bytes)");
  const size_t body = size - sizeof(uint64_t);
  uint64_t stored;
  std::memcpy(&stored, b + body, sizeof(stored));
  Cursor cursor(b, body, src);
  cursor.Take(sizeof(kMagic), "magic");
  const uint32_t version = cursor.Get<uint32_t>("version");
  if (version != kVersion)
    throw data::InputError(src, 0, "checkpoint version " + std::to_string(version) + " is not supported (expected " +
                                       std::to_string(kVersion) + ")");
  // Checked before the layout is trusted: a torn or bit-flipped file stops here.
  if (XXH3_64bits(b, body) != stored)
    throw data::InputError(src, 0, "checksum mismatch: the checkpoint is truncated or corrupt");
  const uint32_t count = cursor.Get<uint32_t>("section count");
  if (count > kMaxSections) throw data::InputError(src, 0, "bad section count " + std::to_string(count));
  const uint64_t meta_bytes = cursor.Get<uint64_t>("meta size");
  const char* meta = cursor.Take(meta_bytes, "meta");
  reader.meta_.assign(meta, size_t(meta_bytes));
  for (uint32_t k = 0; k < count; ++k) {
    const uint32_t name_bytes = cursor.Get<uint32_t>("section name size");
    if (name_bytes == 0 || name_bytes > kMaxNameBytes)
      throw data::InputError(src, 0, "bad section name size " + std::to_string(name_bytes));
    const char* name = cursor.Take(name_bytes, "section name");
    const uint64_t data_bytes = cursor.Get<uint64_t>("section size");
    Span span;
    span.offset = size_t(cursor.Take(data_bytes, "section data") - b);
    span.bytes = size_t(data_bytes);
    std::string section_name(name, name_bytes);
    if (reader.Has(section_name)) throw data::InputError(src, 0, "section '" + section_name + "' appears twice");
    reader.sections_.emplace_back(std::move(section_name), span);
  }
  if (cursor.remaining() != 0)
    throw data::InputError(src, 0, std::to_string(cursor.remaining()) + " unexpected bytes after the last section");
  return reader;
}

bool CheckpointReader::Has(const std::string& name) const {
  for (const auto& [section, span] : sections_)
    if (section == name) return true;
  return false;
}

CheckpointReader::Span CheckpointReader::Find(const std::string& name, size_t value_size,
                                              size_t expected_count) const {
  for (const auto& [section, span] : sections_) {
    if (section != name) continue;
    if (span.bytes % value_size != 0)
      throw data::InputError(source_, 0, "section '" + name + "' holds " + std::to_string(span.bytes) +
                                             " bytes, not a whole number of " + std::to_string(value_size) +
                                             "-byte values");
    if (expected_count != kAny && span.bytes / value_size != expected_count)
      throw data::InputError(source_, 0, "section '" + name + "' holds " + std::to_string(span.bytes / value_size) +
                                             " values; this run needs " + std::to_string(expected_count));
    return span;
  }
  throw data::InputError(source_, 0, "section '" + name + "' is missing");
}

void CheckpointReader::CopyOut(const Span& span, void* out) const {
  if (span.bytes != 0) std::memcpy(out, data_ + span.offset, span.bytes);
}

}  // namespace xmlt::scheduler
