// The checkpoint folder's own files; see checkpoint_folder.h.
#include "apps/checkpoint_folder.h"

#include <filesystem>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "data/folder_lock.h"
#include "run/checkpoint_file.h"

namespace xmlt::apps {
namespace {

namespace fs = std::filesystem;

// The path as it would be, "./" and ".." and symlinks of existing parents resolved.
fs::path Resolved(const std::string& path) {
  std::error_code error;
  return fs::weakly_canonical(fs::absolute(path, error), error);
}

bool SameFolder(const std::string& a, const std::string& b) {
  std::error_code error;
  if (fs::exists(a, error) && fs::exists(b, error)) return fs::equivalent(a, b, error);
  return Resolved(a) == Resolved(b);
}

}  // namespace

void RefuseOutputsInCheckpointFolder(const std::string& folder_flag, const std::string& folder,
                                     const std::vector<std::pair<std::string, std::string>>& outputs) {
  if (folder.empty()) return;
  const std::string checkpoint = fs::path(run::CheckpointPath(folder)).filename().string();
  const std::string lock = fs::path(data::FolderLock::PathIn(folder)).filename().string();
  for (const auto& [flag, path] : outputs) {
    if (path.empty()) continue;
    const fs::path resolved = Resolved(path);
    const std::string name = resolved.filename().string();
    const bool owned = name == checkpoint || name == lock || name.rfind(checkpoint + ".tmp.", 0) == 0;
    if (SameFolder(path, folder) || (owned && SameFolder(resolved.parent_path().string(), folder)))
      throw std::invalid_argument(flag + " " + path + " is in the " + folder_flag + " folder " + folder +
                                  ", which holds the run's checkpoint; choose a path outside it, or another name "
                                  "than " + checkpoint + " and " + lock);
  }
}

std::optional<float> CheckpointedLearningRate(const std::string& folder, const std::vector<engine::DeviceSpec>& devices) {
  try {
    const nlohmann::json saved = nlohmann::json::parse(run::CheckpointReader::ReadMetaOnly(folder)).at("run");
    if (saved.at("devices").get<std::string>() != engine::DeviceListText(devices)) return std::nullopt;
    return saved.at("lr").get<float>();
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::optional<std::string> CheckpointedOutputMath(const std::string& folder) {
  try {
    const nlohmann::json saved = nlohmann::json::parse(run::CheckpointReader::ReadMetaOnly(folder)).at("run");
    return saved.value("math", std::string("fp32"));  // recorded only when not fp32 (run::RunFingerprint)
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::optional<std::string> CheckpointedOptimizerState(const std::string& folder) {
  try {
    const nlohmann::json saved = nlohmann::json::parse(run::CheckpointReader::ReadMetaOnly(folder)).at("run");
    // Recorded only when bf16 (run::RunFingerprint): checkpoints from before the flag kept fp32.
    return saved.value("optimizer_state", std::string("fp32"));
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::optional<std::string> CheckpointedWeights(const std::string& folder) {
  try {
    const nlohmann::json saved = nlohmann::json::parse(run::CheckpointReader::ReadMetaOnly(folder)).at("run");
    // Recorded only when bf16 (run::RunFingerprint): checkpoints from before the flag kept fp32.
    return saved.value("weights", std::string("fp32"));
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

void RefuseReplacingAnotherRunsCheckpoint(const std::string& folder, const std::string& resume_dir) {
  if (folder.empty()) return;
  if (!resume_dir.empty() && SameFolder(folder, resume_dir)) return;
  std::error_code error;
  if (!fs::exists(run::CheckpointPath(folder), error)) return;
  // No flag to overwrite it: removing the checkpoint file is as explicit and cannot be left in a
  // command line or a config file that is run again later.
  throw std::invalid_argument("--checkpoint-dir " + folder + " holds the checkpoint of an earlier run; pass --resume " +
                              folder + " to continue it, or choose another folder (or delete " +
                              run::CheckpointPath(folder) + " to start afresh)");
}

}  // namespace xmlt::apps
