// Chooses between the binary cache and the text parsers for LoadDataset; see dataset_loader.h.
#include "data/dataset_loader.h"

#include "data/binary_cache.h"
#include "data/input_error.h"
#include "data/source_stamp.h"
#include "data/text_reader.h"
#include "data/text_windows.h"

namespace xmlt::data {
namespace {

// Split pairs are never cached: a cache names one source file, and a pair has two.
Dataset LoadSplitPair(const std::string& features_path, const std::string& labels_path,
                      const LoadOptions& options) {
  Dataset dataset;
  dataset.source = features_path + " + " + labels_path;
  OpenedText x_file = OpenText(features_path);
  dataset.features = ParseSplitMatrixText(*x_file.text, features_path, options, false, &dataset.warnings);
  x_file = {};
  OpenedText y_file = OpenText(labels_path);
  dataset.labels = ParseSplitMatrixText(*y_file.text, labels_path, options, true, &dataset.warnings);
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
  const std::string cache_path = CachePathFor(path);
  if (options.use_cache && IsBinaryCache(cache_path)) {
    try {
      // The text's stamp is taken first: a text that cannot be read is reported as itself.
      const SourceStamp text = StampSource(path);
      bool cache_one_based = false;
      SourceStamp cache_source;
      ReadBinaryCacheKey(cache_path, &cache_one_based, &cache_source);
      if (cache_source != text) {
        cache_warnings.push_back(cache_path + " was made from another version of " + path +
                                 " (size, time or content differ), so the text was parsed; " +
                                 "`xmltrain convert " + path + "` makes it again");
      } else if (cache_one_based == options.one_based) {
        return ReadBinaryCache(cache_path);
      }
    } catch (const InputError& error) {
      if (error.file() != cache_path) throw;
      cache_warnings.push_back(std::string(error.what()) + "; parsed " + path + " instead");
    }
  }

  // A gzip or zstd file is decompressed as it is parsed, a window at a time.
  OpenedText text = OpenText(path);
  Dataset dataset = ParseLabeledText(*text.text, path, options);
  dataset.warnings.insert(dataset.warnings.begin(), cache_warnings.begin(), cache_warnings.end());
  return dataset;
}

}  // namespace xmlt::data
