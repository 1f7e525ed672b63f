// Test helpers; see test_support.h.
#include "tests/test_support.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>

namespace xmlt::testing {
namespace fs = std::filesystem;

TempDir::TempDir() {
  std::random_device device;
  for (int attempt = 0; attempt < 100; ++attempt) {
    fs::path candidate = fs::temp_directory_path() / ("xmlt-test-" + std::to_string(device()));
    if (fs::create_directory(candidate)) {
      path_ = candidate.string();
      return;
    }
  }
  throw std::runtime_error("cannot create a temporary directory");
}

TempDir::~TempDir() {
  std::error_code ignored;
  fs::remove_all(path_, ignored);
}

void WriteFile(const std::string& path, const std::string& content) {
  std::ofstream out(path, std::ios::binary);
  out << content;
  if (!out) throw std::runtime_error("cannot write " + path);
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

std::string SharedDataDir(const std::string& name) {
  std::vector<std::string> roots;
  if (const char* env = std::getenv("XMLT_DATA_DIR")) roots.emplace_back(env);
  roots.emplace_back(XMLT_SHARED_DATA_DIR);
  for (const auto& root : roots) {
    fs::path dir = fs::path(root) / name;
    if (fs::is_directory(dir)) return dir.string();
  }
  return "";
}

}  // namespace xmlt::testing
