// The .xmlb binary cache: a versioned header, the CSR arrays (8-byte aligned, memory-mappable) and
// a checksum over everything, so a load is a map plus a verification pass.
#pragma once

#include <string>

#include "data/dataset.h"

namespace xmlt::data {

// Written atomically. `one_based` records how the text source was read, so a cache made with other
// options is treated as stale.
void WriteBinaryCache(const Dataset& dataset, const std::string& path, bool one_based);

// Maps and verifies the file; throws InputError on a bad magic, version, size or checksum.
Dataset ReadBinaryCache(const std::string& path, bool* one_based = nullptr);

bool IsBinaryCache(const std::string& path);  // true when the file starts with the cache magic

}  // namespace xmlt::data
