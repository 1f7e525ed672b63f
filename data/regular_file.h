// Opening a file that is read as data: only a regular file, and never a wait on a FIFO's writer.
#pragma once

#include <cstddef>
#include <string>

namespace xmlt::data {

// A read-only descriptor of the regular file at `path` (the caller closes it) and its size.
// Throws InputError(path, 0, ...) when it is missing, unreadable or not a regular file.
int OpenRegularFile(const std::string& path, size_t* size);

}  // namespace xmlt::data
