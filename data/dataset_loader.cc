// Chooses between the binary cache and the text parsers for LoadDataset; see dataset_loader.h.
#include "data/dataset_loader.h"

#include <new>

#include "data/binary_cache.h"
#include "data/input_error.h"
#include "data/source_stamp.h"
#include "data/text_reader.h"
#include "data/text_windows.h"

namespace xmlt::data {
namespace {

// A text rewritten while it is parsed ends early (in zeros where its mapping faulted,
// mapped_file.h) or mixes two versions: the fault, or its stamp taken before and after, tells.
void RefuseChangedWhileRead(const std::string& path, const SourceStamp& before, const OpenedText& text) {
  if ((text.file != nullptr && text.file->faulted()) || StampSource(path) != before)
    throw InputError(path, 0, "changed while it was read (another program wrote to it); read it again once it is "
                              "complete");
}

// `parse` (TextWindows& -> its result) over the text at `path`, refused as changed when the file
// changed while it was read: a text cut short is a change, not a malformed text.
template <class Parse>
auto ParseUnchanged(const std::string& path, Parse parse) {
  const SourceStamp stamp = StampSource(path);
  OpenedText text = OpenText(path);
  try {
    auto parsed = parse(*text.text);
    RefuseChangedWhileRead(path, stamp, text);
    return parsed;
  } catch (const InputError&) {
    RefuseChangedWhileRead(path, stamp, text);
    throw;
  } catch (const std::bad_alloc&) {
    throw InputError(path, 0, "not enough memory to read it (a limit such as ulimit -v, or a file far larger than "
                              "its rows need)");
  }
}

// Split pairs are never cached: a cache names one source file, and a pair has two.
Dataset LoadSplitPair(const std::string& features_path, const std::string& labels_path,
                      const LoadOptions& options) {
  Dataset dataset;
  dataset.source = features_path + " + " + labels_path;
  dataset.features = ParseUnchanged(features_path, [&](TextWindows& text) {
    return ParseSplitMatrixText(text, features_path, options, false, &dataset.warnings);
  });
  dataset.labels = ParseUnchanged(labels_path, [&](TextWindows& text) {
    return ParseSplitMatrixText(text, labels_path, options, true, &dataset.warnings);
  });
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
  Dataset dataset = ParseUnchanged(path, [&](TextWindows& text) { return ParseLabeledText(text, path, options); });
  dataset.warnings.insert(dataset.warnings.begin(), cache_warnings.begin(), cache_warnings.end());
  return dataset;
}

}  // namespace xmlt::data
