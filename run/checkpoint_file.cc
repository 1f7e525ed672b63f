// Checkpoint container; see checkpoint_file.h.
#include "run/checkpoint_file.h"

#include <fcntl.h>
#include <unistd.h>
#include <xxhash.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <utility>

#include "data/atomic_file.h"
#include "data/byte_reader.h"
#include "data/byte_writer.h"
#include "data/input_error.h"

namespace xmlt::run {
namespace {

constexpr char kMagic[8] = {'X', 'M', 'L', 'T', 'C', 'K', 'P', 'T'};
constexpr uint32_t kVersion = 1;
constexpr uint32_t kMaxSections = 4096;
constexpr uint32_t kMaxNameBytes = 256;
constexpr const char* kFileName = "checkpoint.xmlc";

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
  sections_.push_back({name, data, bytes, nullptr});
}

void CheckpointWriter::AddStreamed(const std::string& name, size_t bytes, Producer produce) {
  if (!produce) throw std::invalid_argument("checkpoint section '" + name + "' has no producer");
  Add(name, nullptr, bytes);
  sections_.back().produce = std::move(produce);
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

  data::ByteWriter header;
  header.AppendBytes(kMagic, sizeof(kMagic));
  header.Append(kVersion);
  header.Append(uint32_t(sections_.size()));
  header.Append(uint64_t(meta_.size()));
  header.AppendBytes(meta_.data(), meta_.size());
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
      data::ByteWriter head;
      head.Append(uint32_t(section.name.size()));
      head.AppendBytes(section.name.data(), section.name.size());
      head.Append(uint64_t(section.bytes));
      write(head.data(), head.size());
      if (!section.produce) {
        write(section.data, section.bytes);
        continue;
      }
      // The size is in the file already: more bytes would shift every later field, fewer leave a
      // hole, so either fails the write before the file is committed.
      size_t written = 0;
      section.produce([&](const void* data, size_t bytes) {
        if (bytes > section.bytes - written)
          throw std::logic_error("checkpoint section '" + section.name + "' was made longer than its " +
                                 std::to_string(section.bytes) + " bytes");
        write(data, bytes);
        written += bytes;
      });
      if (written != section.bytes)
        throw std::logic_error("checkpoint section '" + section.name + "' was made of " + std::to_string(written) +
                               " bytes, not its " + std::to_string(section.bytes));
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
    throw data::InputError(path, 0, "no checkpoint here (resume from the folder the run wrote its checkpoints to)");
  CheckpointReader reader;
  reader.source_ = path;
  reader.mapping_ = data::MappedFile::Open(path, /*populate=*/true);
  reader.data_ = reader.mapping_->data();
  reader.size_ = reader.mapping_->size();
  return Index(std::move(reader));
}

std::string CheckpointReader::ReadMetaOnly(const std::string& directory) {
  const std::string path = CheckpointPath(directory);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw data::InputError(path, 0, "no checkpoint here (resume from the folder the run wrote its checkpoints to)");
  char head[sizeof(kMagic) + 16] = {};
  if (!in.read(head, sizeof head) || std::memcmp(head, kMagic, sizeof(kMagic)) != 0)
    throw data::InputError(path, 0, "not an xmltrain checkpoint");
  uint64_t meta_bytes = 0;
  std::memcpy(&meta_bytes, head + sizeof(kMagic) + 8, sizeof meta_bytes);
  std::error_code error;
  const uint64_t file_bytes = std::filesystem::file_size(path, error);
  if (error || meta_bytes > file_bytes - sizeof head) throw data::InputError(path, 0, "truncated checkpoint");
  std::string meta(size_t(meta_bytes), '\0');
  if (!in.read(meta.data(), std::streamsize(meta_bytes))) throw data::InputError(path, 0, "truncated checkpoint");
  return meta;
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
  // The checksum closes the file; the fields are read from what comes before it.
  data::ByteReader in(b, size, src, "checkpoint");
  const uint64_t stored = in.ReadLast<uint64_t>("checksum");
  in.ReadBytes(sizeof(kMagic), "magic");
  const uint32_t version = in.Read<uint32_t>("version");
  if (version != kVersion)
    throw data::InputError(src, 0, "checkpoint version " + std::to_string(version) + " is not supported (expected " +
                                       std::to_string(kVersion) + ")");
  // Checked before the layout is trusted: a torn or bit-flipped file stops here.
  if (XXH3_64bits(b, size - sizeof(stored)) != stored)
    throw data::InputError(src, 0, "checksum mismatch: the checkpoint is truncated or corrupt");
  const uint32_t count = in.Read<uint32_t>("section count");
  if (count > kMaxSections) throw data::InputError(src, 0, "bad section count " + std::to_string(count));
  const uint64_t meta_bytes = in.Read<uint64_t>("meta size");
  const char* meta = in.ReadBytes(meta_bytes, "meta");
  reader.meta_.assign(meta, size_t(meta_bytes));
  for (uint32_t k = 0; k < count; ++k) {
    const uint32_t name_bytes = in.Read<uint32_t>("section name size");
    if (name_bytes == 0 || name_bytes > kMaxNameBytes)
      throw data::InputError(src, 0, "bad section name size " + std::to_string(name_bytes));
    const char* name = in.ReadBytes(name_bytes, "section name");
    const uint64_t data_bytes = in.Read<uint64_t>("section size");
    Span span;
    span.offset = size_t(in.ReadBytes(data_bytes, "section data") - b);
    span.bytes = size_t(data_bytes);
    std::string section_name(name, name_bytes);
    if (reader.Has(section_name)) throw data::InputError(src, 0, "section '" + section_name + "' appears twice");
    reader.sections_.emplace_back(std::move(section_name), span);
  }
  if (in.remaining() != 0)
    throw data::InputError(src, 0, std::to_string(in.remaining()) + " unexpected bytes after the last section");
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

}  // namespace xmlt::run
