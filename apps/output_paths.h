// Outputs that would overwrite an input (or another output) are refused before any work starts:
// `--model t.txt --train t.txt` must not replace the training data with a model.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace xmlt::apps {

// (flag, path) pairs; empty paths are ignored. Throws std::invalid_argument naming both flags when
// an output is the same file as an input or as another output (the same path, or two paths to one
// existing file: links, "./", ".." included).
void RefuseOutputsOverInputs(const std::vector<std::pair<std::string, std::string>>& inputs,
                             const std::vector<std::pair<std::string, std::string>>& outputs);

// Before any work: an output file's folder must exist and be writable and the path must not be a
// folder; an output folder must be a writable folder, or not exist yet in a writable parent.
// Throws std::invalid_argument naming the flag. Empty paths are not checked.
void ProbeOutputFile(const std::string& flag, const std::string& path);
void ProbeOutputDir(const std::string& flag, const std::string& path);

}  // namespace xmlt::apps
