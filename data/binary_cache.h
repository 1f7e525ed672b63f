// The .xmlb binary cache: a versioned header, the CSR arrays (8-byte aligned, used where they lie)
// and a checksum over everything, so a load is one read plus a verification pass.
#pragma once

#include <string>

#include "data/dataset.h"
#include "data/source_stamp.h"

namespace xmlt::data {

// Written atomically. `one_based` records how the text source was read and `source` which text it
// was (empty for a dataset not read from one), so that LoadDataset can tell a stale cache.
void WriteBinaryCache(const Dataset& dataset, const std::string& path, bool one_based,
                      const SourceStamp& source = {});

// Maps and verifies the file; throws InputError on a bad magic, version, size or checksum.
Dataset ReadBinaryCache(const std::string& path, bool* one_based = nullptr,
                        SourceStamp* source = nullptr);

// The header alone, to decide whether the cache is worth reading: throws InputError on a bad magic,
// an older version or a short file, and verifies nothing else.
void ReadBinaryCacheKey(const std::string& path, bool* one_based, SourceStamp* source);

bool IsBinaryCache(const std::string& path);  // true when the file starts with the cache magic

}  // namespace xmlt::data
