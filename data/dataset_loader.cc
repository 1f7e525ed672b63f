// Chooses between the binary cache and the text parsers for LoadDataset; see dataset_loader.h.
#include "data/dataset_loader.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "data/binary_cache.h"
#include "data/input_error.h"
#include "data/mapped_file.h"
#include "data/text_reader.h"

namespace xmlt::data {
namespace {

bool ModifiedTime(const std::string& path, struct timespec* time) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) return false;
  *time = info.st_mtim;
  return true;
}

bool NotOlder(const struct timespec& a, const struct timespec& b) {
  return a.tv_sec != b.tv_sec ? a.tv_sec > b.tv_sec : a.tv_nsec >= b.tv_nsec;
}

// Split pairs are never cached: a cache names one source file, and a pair has two.
Dataset LoadSplitPair(const std::string& features_path, const std::string& labels_path,
                      const LoadOptions& options) {
  Dataset dataset;
  dataset.source = features_path + " + " + labels_path;
  auto x_file = MappedFile::Open(features_path);
  dataset.features =
      ParseSplitMatrixText(x_file->view(), features_path, options, false, &dataset.warnings);
  x_file.reset();
  auto y_file = MappedFile::Open(labels_path);
  dataset.labels =
      ParseSplitMatrixText(y_file->view(), labels_path, options, true, &dataset.warnings);
  if (dataset.labels.num_rows != dataset.features.num_rows) {
    throw InputError(labels_path, 0,
                     "has " + std::to_string(dataset.labels.num_rows) + " rows but " +
                         features_path + " has " + std::to_string(dataset.features.num_rows));
  }
  return dataset;
}

}  // namespace

std::string CachePathFor(const std::string& text_path) { return text_path + ".xmlb"; }

Dataset LoadDataset(const std::string& path, const LoadOptions& options,
                    const std::string& labels_path) {
  if (!labels_path.empty()) return LoadSplitPair(path, labels_path, options);
  if (IsBinaryCache(path)) return ReadBinaryCache(path);

  std::vector<std::string> cache_warnings;
  struct timespec text_time {
  }, cache_time{};
  const std::string cache_path = CachePathFor(path);
  if (options.use_cache && ModifiedTime(path, &text_time) &&
      ModifiedTime(cache_path, &cache_time) && NotOlder(cache_time, text_time)) {
    try {
      bool cache_one_based = false;
      Dataset cached = ReadBinaryCache(cache_path, &cache_one_based);
      if (cache_one_based == options.one_based) return cached;
    } catch (const InputError& error) {
      cache_warnings.push_back(std::string(error.what()) + "; parsed " + path + " instead");
    }
  }

  auto file = MappedFile::Open(path);
  Dataset dataset = ParseLabeledText(file->view(), path, options);
  dataset.warnings.insert(dataset.warnings.begin(), cache_warnings.begin(), cache_warnings.end());
  return dataset;
}

}  // namespace xmlt::data
