// Helpers shared by the tests: temporary directories, files, and the optional real datasets.
#pragma once

#include <cstddef>
#include <cstring>
#include <string>

namespace xmlt::testing {

// A fresh directory under the system temp dir, removed with its content on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string File(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

void WriteFile(const std::string& path, const std::string& content);
std::string ReadFile(const std::string& path);

// Bitwise equality of `count` values; memcmp itself is undefined on the null data of empty vectors.
template <class T>
bool SameBits(const T* a, const T* b, size_t count) {
  return count == 0 || std::memcmp(a, b, count * sizeof(T)) == 0;
}

// The folder of a real dataset (e.g. "bibtex") or "" when it is not present: $XMLT_DATA_DIR first,
// then ../shared/data beside the checkout. Tests GTEST_SKIP() with a message on "".
std::string SharedDataDir(const std::string& name);

}  // namespace xmlt::testing
