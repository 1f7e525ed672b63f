// Names for the access checks' reports, found only when a check fails: the source line of an
// instruction (from the line tables, through addr2line; the simulated build compiles device code
// with -g1 for this) and the shared variable holding a static shared-memory address (from the
// executable's symbol table: static shared memory is thread-local storage here).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace gpusim::detail {

// `path` relative to the source tree the build was made from, when it lies in it.
std::string SourcePath(const std::string& path);

// "merge/gpu/device_adasum.cu:61", with the lines it was inlined into; or the module and
// offset when no line table says.
std::string DescribeCode(const void* pc);

// The thread-local variable at byte `offset` of the executable's thread-local block, as
// "name + byte offset"; empty if the symbol table does not say.
std::string DescribeThreadLocal(size_t offset, size_t* variable_offset);

}  // namespace gpusim::detail
