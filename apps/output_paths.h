// Outputs that would overwrite an input (or another output) are refused before any work starts:
// `--model t.txt --train t.txt` must not replace the training data with a model, and
// `--metrics m --model m.partial` must not leave the model where the metrics were renamed to.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace xmlt::apps {

// An output file and the name it is written under until it is complete.
struct OutputFile {
  std::string flag, path;
  std::string temporary;  // empty: written in place (a device or FIFO), or no output
};
// For a path written through data::AtomicFile (models, predictions, caches) and through
// scheduler::MetricsLog (--metrics). Call after ProbeOutputFile: the path's kind is known good.
OutputFile AtomicOutput(const std::string& flag, const std::string& path);
OutputFile MetricsOutput(const std::string& flag, const std::string& path);

// (flag, path) inputs; empty paths are ignored. Throws std::invalid_argument naming both flags
// when an output or its temporary name is the same file as an input, or as another output or its
// temporary name (the same path, or two paths to one existing file: links, "./", ".." included).
void RefuseOutputsOverInputs(const std::vector<std::pair<std::string, std::string>>& inputs,
                             const std::vector<OutputFile>& outputs);

// Before any work: an output file must be a regular file, a symlink to one, a character device or
// a FIFO, or not exist yet (data/output_target.h); a file's folder must exist and be writable; an
// output folder must be a writable folder, or not exist yet in a writable parent (with
// `creates_parents`, in a writable folder further up: the command makes the folders between).
// Throws std::invalid_argument naming the flag, and what the path is when it is not a folder (a
// regular file, a FIFO, a device, a socket). Empty paths are not checked.
void ProbeOutputFile(const std::string& flag, const std::string& path);
void ProbeOutputDir(const std::string& flag, const std::string& path, bool creates_parents = false);

}  // namespace xmlt::apps
