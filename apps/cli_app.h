// CLI11's App, declared for headers that pass it by pointer or reference. CLI11 is header-only and
// every file that includes <CLI/CLI.hpp> compiles about two hundred of its functions again, seconds
// of compile time a file (measured: docs/benchmarks/ci.md); only the files that call it include it.
#pragma once

namespace CLI {
class App;
}  // namespace CLI
