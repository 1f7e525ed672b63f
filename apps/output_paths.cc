// Output paths against input paths; see output_paths.h.
#include "apps/output_paths.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <stdexcept>

#include "data/atomic_file.h"
#include "data/output_target.h"
#include "run/metrics_log.h"

namespace xmlt::apps {
namespace {

namespace fs = std::filesystem;

// Two names of one existing node, or the same path-to-be. (Not std::filesystem::equivalent, which
// tells nothing of two FIFOs: both its operands "other" than files, it gives an error.) A character
// device is nobody's: /dev/null may take every output.
bool SameFile(const std::string& a, const std::string& b) {
  struct stat sa {}, sb {};
  if (::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0)
    return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino && !S_ISCHR(sa.st_mode);
  // Not both there yet: compare the paths they would be, with symlinks of existing parents resolved.
  std::error_code error;
  const fs::path pa = fs::weakly_canonical(fs::absolute(a, error), error);
  const fs::path pb = fs::weakly_canonical(fs::absolute(b, error), error);
  return pa == pb;
}

}  // namespace

OutputFile AtomicOutput(const std::string& flag, const std::string& path) {
  if (path.empty()) return {flag, path, ""};
  const data::OutputTarget target = data::ResolveOutputTarget(path);
  return {flag, path, target.stream ? "" : data::AtomicFile::TempPathFor(target.path)};
}

OutputFile MetricsOutput(const std::string& flag, const std::string& path) {
  if (path.empty()) return {flag, path, ""};
  const data::OutputTarget target = data::ResolveOutputTarget(path);
  return {flag, path, target.stream ? "" : run::MetricsLog::PartialPathFor(target.path)};
}

void RefuseOutputsOverInputs(const std::vector<std::pair<std::string, std::string>>& inputs,
                             const std::vector<OutputFile>& outputs) {
  // Every name an output writes: its path and its temporary name.
  const auto names = [](const OutputFile& output) {
    std::vector<std::pair<std::string, std::string>> written;  // (what, path)
    if (output.path.empty()) return written;
    written.emplace_back(output.flag, output.path);
    if (!output.temporary.empty())
      written.emplace_back(output.flag + "'s temporary file", output.temporary);
    return written;
  };
  for (size_t o = 0; o < outputs.size(); ++o) {
    for (const auto& [out_what, out_path] : names(outputs[o])) {
      for (const auto& [in_flag, in_path] : inputs)
        if (!in_path.empty() && SameFile(out_path, in_path))
          throw std::invalid_argument(out_what + " " + out_path + " is the " + in_flag +
                                      " input: writing it would destroy the input; choose another path");
      for (size_t p = 0; p < o; ++p)
        for (const auto& [other_what, other_path] : names(outputs[p]))
          if (SameFile(out_path, other_path))
            throw std::invalid_argument(out_what + " and " + other_what + " are the same file (" + out_path +
                                        "); give each output its own path");
    }
  }
}

namespace {

void CheckWritableFolder(const std::string& flag, const std::string& path, const fs::path& folder) {
  std::error_code error;
  if (!fs::is_directory(folder, error))
    throw std::invalid_argument(flag + " " + path + ": the folder " + folder.string() + " does not exist");
  if (::access(folder.c_str(), W_OK) != 0)
    throw std::invalid_argument(flag + " " + path + ": the folder " + folder.string() + " is not writable");
}

fs::path ParentOf(const std::string& path) {
  const fs::path parent = fs::path(path).parent_path();
  return parent.empty() ? fs::path(".") : parent;
}

// What a node that is not a folder is, for the message that refuses it as one.
std::string KindOfNode(const fs::path& path) {
  struct stat node {};
  if (::stat(path.c_str(), &node) != 0) return "not a folder";
  if (S_ISREG(node.st_mode)) return "a regular file";
  if (S_ISFIFO(node.st_mode)) return "a FIFO";
  if (S_ISCHR(node.st_mode)) return "a character device";
  if (S_ISBLK(node.st_mode)) return "a block device";
  if (S_ISSOCK(node.st_mode)) return "a socket";
  return "not a folder";
}

}  // namespace

void ProbeOutputFile(const std::string& flag, const std::string& path) {
  if (path.empty()) return;
  std::error_code error;
  if (fs::is_directory(path, error)) throw std::invalid_argument(flag + " " + path + " is a folder, not a file");
  data::OutputTarget target;
  try {
    target = data::ResolveOutputTarget(path);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(flag + " " + e.what());
  }
  if (target.stream) return;  // written in place: its folder is not written to
  CheckWritableFolder(flag, path, ParentOf(target.path));
}

void ProbeOutputDir(const std::string& flag, const std::string& path, bool creates_parents) {
  if (path.empty()) return;
  std::error_code error;
  if (fs::exists(path, error)) {
    if (!fs::is_directory(path, error))
      throw std::invalid_argument(flag + " " + path + " is " + KindOfNode(path) + ", not a folder");
    CheckWritableFolder(flag, path, path);
    return;
  }
  if (!creates_parents) {
    CheckWritableFolder(flag, path, ParentOf(path));
    return;
  }
  // The folders to be made hang from the nearest one that exists, which must be a writable folder.
  fs::path existing = ParentOf(path);
  while (!fs::exists(existing, error) && ParentOf(existing.string()) != existing)
    existing = ParentOf(existing.string());
  if (fs::exists(existing, error) && !fs::is_directory(existing, error))
    throw std::invalid_argument(flag + " " + path + ": " + existing.string() + " is " + KindOfNode(existing) +
                                ", not a folder");
  CheckWritableFolder(flag, path, existing);
}

}  // namespace xmlt::apps
