// The checkpoint container: a JSON text of scalar state (progress, random number generator states,
// the options the run was started with) and named binary sections (models, momentum, the sampler's
// row order), closed by an XXH3-64 checksum of everything before it.
//
//   "XMLTCKPT" | u32 version | u32 sections | u64 meta bytes | meta
//   | sections x (u32 name bytes | name | u64 data bytes | data) | u64 checksum
//
// Written atomically (temporary file, fsync, rename, fsync of the directory), so a crash or a kill
// at any moment leaves either the previous checkpoint or the new one, never a mix. Sections are
// written from where they are, or made piece by piece while they are written (a GPU's optimizer
// state): nothing is staged whole. Every size read from a file is checked against the bytes that
// remain before anything is allocated from it; a resume copies sections from the file's mapping
// straight to where they go.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "data/mapped_file.h"

namespace xmlt::run {

// The file a checkpoint directory holds.
std::string CheckpointPath(const std::string& directory);

class CheckpointWriter {
 public:
  explicit CheckpointWriter(std::string meta) : meta_(std::move(meta)) {}

  // Adds a section; the data is not copied and must stay valid until Write returns.
  void Add(const std::string& name, const void* data, size_t bytes);
  template <class T>
  void Add(const std::string& name, const std::vector<T>& values) {
    Add(name, values.data(), values.size() * sizeof(T));
  }
  // Adds a section of `bytes` bytes made while Write writes it: Write calls `produce` once, at the
  // section's place, and `produce` hands its bytes to the writer it is given in consecutive pieces
  // (each read during that call only). The checksum is taken over the pieces as they pass. A
  // producer that throws, or whose pieces add up to other than `bytes`, fails the write (the
  // previous checkpoint is then untouched). The file is the one Add would write for those bytes.
  using PieceWriter = std::function<void(const void* data, size_t bytes)>;
  using Producer = std::function<void(const PieceWriter& write)>;
  void AddStreamed(const std::string& name, size_t bytes, Producer produce);

  // Writes CheckpointPath(directory), creating the directory when needed; stale temporary files
  // of earlier, interrupted writes are removed first. Throws std::runtime_error on I/O errors, and
  // passes a producer's error on (the previous checkpoint is then untouched).
  void Write(const std::string& directory) const;

 private:
  struct Section {
    std::string name;
    const void* data;  // or, when null, made by `produce`
    size_t bytes;
    Producer produce;
  };
  std::string meta_;
  std::vector<Section> sections_;
};

class CheckpointReader {
 public:
  // Throws data::InputError naming the file for a missing, truncated, corrupt or foreign file.
  // The file is mapped, not read: sections are copied once, straight to where they go.
  static CheckpointReader Open(const std::string& directory);
  // The meta text alone, from the head of the file, for settings a run needs before it is built
  // (the learning rate it goes on at): Open's checksum pass over the whole file comes later.
  // Throws data::InputError for a missing or foreign file or a meta size beyond the file.
  static std::string ReadMetaOnly(const std::string& directory);
  // The same checks on bytes already in memory; `source` names them in errors.
  static CheckpointReader Parse(std::vector<char> bytes, std::string source);

  const std::string& meta() const { return meta_; }
  const std::string& source() const { return source_; }
  bool Has(const std::string& name) const;

  // A section as values of T; throws data::InputError when it is missing or its size is not
  // `expected_count` values (or, with expected_count == kAny, not a whole number of values).
  static constexpr size_t kAny = ~size_t{0};
  template <class T>
  std::vector<T> Read(const std::string& name, size_t expected_count = kAny) const {
    const Span span = Find(name, sizeof(T), expected_count);
    std::vector<T> values(span.bytes / sizeof(T));
    CopyOut(span, values.data());
    return values;
  }
  // The same into `count` values at `out` (a device's parameters, say), without a temporary.
  template <class T>
  void ReadInto(const std::string& name, T* out, size_t count) const {
    CopyOut(Find(name, sizeof(T), count), out);
  }
  // A section's values where the reader holds them (the file's mapping), for a copy straight to
  // where they go when that is not host memory the caller can point to (a GPU's optimizer state).
  // The bytes need not be aligned for T: copy them as bytes. Valid while the reader lives; the
  // same checks as Read.
  struct ValueView {
    const void* bytes = nullptr;
    size_t count = 0;  // values of T
  };
  template <class T>
  ValueView View(const std::string& name, size_t expected_count = kAny) const {
    const Span span = Find(name, sizeof(T), expected_count);
    return {data_ + span.offset, span.bytes / sizeof(T)};
  }

 private:
  struct Span {
    size_t offset = 0, bytes = 0;
  };
  Span Find(const std::string& name, size_t value_size, size_t expected_count) const;
  void CopyOut(const Span& span, void* out) const;

  // Checks and indexes the bytes at data_ (owned by mapping_ or owned_).
  static CheckpointReader Index(CheckpointReader reader);

  std::string source_;
  std::shared_ptr<const data::MappedFile> mapping_;
  std::vector<char> owned_;
  const char* data_ = nullptr;
  size_t size_ = 0;
  std::string meta_;
  std::vector<std::pair<std::string, Span>> sections_;
};

}  // namespace xmlt::run
