// Scratch files for the fuzz targets whose readers take only paths (the split pair, the .xmlb
// cache, the model file): one private directory per process, reused by every input.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace xmlt::fuzz {

class ScratchDir {
 public:
  ScratchDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "xmlt-fuzz-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) Fail("cannot create a scratch directory");
    path_ = pattern;
  }
  // Not reached when a crash ends the process; the directory is small and says what it is.
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  std::string File(const std::string& name) const { return path_ + "/" + name; }

  // Replaces the file's content; failing here is the harness's fault, so it aborts.
  std::string Write(const std::string& name, const void* data, size_t size) const {
    const std::string path = File(name);
    std::FILE* file = std::fopen(path.c_str(), "wb");
    if (file == nullptr || (size > 0 && std::fwrite(data, 1, size, file) != size) ||
        std::fclose(file) != 0) {
      Fail("cannot write " + path);
    }
    return path;
  }

  static std::vector<uint8_t> Read(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) Fail("cannot read " + path);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }

 private:
  [[noreturn]] static void Fail(const std::string& problem) {
    std::fprintf(stderr, "fuzz harness: %s\n", problem.c_str());
    std::abort();
  }
  std::string path_;
};

// One per process: libFuzzer calls the target millions of times.
inline const ScratchDir& Scratch() {
  static const ScratchDir dir;
  return dir;
}

}  // namespace xmlt::fuzz
