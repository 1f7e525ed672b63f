// CLI11's App, declared for headers that pass it by pointer or reference. CLI11 is header-only and
// every file that includes <CLI/CLI.hpp> compiles about two hundred of its functions again
// (6 to 10 s a file); only the files that call it include it.
#pragma once

namespace CLI {
class App;
}  // namespace CLI
