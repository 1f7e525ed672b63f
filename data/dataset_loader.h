// Loading a dataset from any supported source: XML-repository text, libSVM multi-label text, the
// split X/Y pair, or the .xmlb binary cache (used automatically while its text source is unchanged).
// Text files may be gzip or zstd compressed (told by their first bytes): they are decompressed as
// they are parsed, and a cache made from one records the compressed file's identity.
#pragma once

#include <cstdint>
#include <string>

#include "data/dataset.h"
#include "data/load_options.h"

namespace xmlt::data {

// Throws InputError ("FILE:LINE: problem") for anything malformed; warnings go to Dataset::warnings.
// When labels_path is non-empty, path holds the features and labels_path the labels (split pair).
// A path that is itself a .xmlb cache is read directly. For a text path, CachePathFor(path) is used
// instead when use_cache is set, the cache was made with the same one_based, and the text's
// SourceStamp (size, modification time, head and tail) is the one the cache recorded. A stale or
// corrupt cache adds a warning and the text is parsed. Split pairs are never cached, and
// LoadDataset never writes a cache (WriteBinaryCache does, for `xmltrain convert`).
Dataset LoadDataset(const std::string& path, const LoadOptions& options = {},
                    const std::string& labels_path = "");

// The cache file that LoadDataset would use for a text source.
std::string CachePathFor(const std::string& text_path);

}  // namespace xmlt::data
