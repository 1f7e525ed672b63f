// Chooses between the binary cache and the text parsers for LoadDataset; see dataset_loader.h.
#include "data/dataset_loader.h"

#include "data/binary_cache.h"
#include "data/input_error.h"
#include "data/mapped_file.h"
#include "data/source_stamp.h"
#include "data/text_reader.h"

#include <string_view>

namespace xmlt::data {
namespace {

// Text after a UTF-8 byte order mark, which some editors write at the start of a file: it is not
// data (the parsers would refuse it as binary). Only line 1 holds it, so line numbers stay right.
std::string_view WithoutByteOrderMark(std::string_view text) {
  constexpr std::string_view kMark = "\xEF\xBB\xBF";
  if (text.substr(0, kMark.size()) == kMark) text.remove_prefix(kMark.size());
  return text;
}

// Split pairs are never cached: a cache names one source file, and a pair has two.
Dataset LoadSplitPair(const std::string& features_path, const std::string& labels_path,
                      const LoadOptions& options) {
  Dataset dataset;
  dataset.source = features_path + " + " + labels_path;
  auto x_file = MappedFile::Open(features_path);
  dataset.features =
      ParseSplitMatrixText(WithoutByteOrderMark(x_file->view()), features_path, options, false, &dataset.warnings);
  x_file.reset();
  auto y_file = MappedFile::Open(labels_path);
  dataset.labels =
      ParseSplitMatrixText(WithoutByteOrderMark(y_file->view()), labels_path, options, true, &dataset.warnings);
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

  auto file = MappedFile::Open(path);
  Dataset dataset = ParseLabeledText(WithoutByteOrderMark(file->view()), path, options);
  dataset.warnings.insert(dataset.warnings.begin(), cache_warnings.begin(), cache_warnings.end());
  return dataset;
}

}  // namespace xmlt::data
