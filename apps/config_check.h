// --config files are checked line by line before CLI11 reads them: CLI11 silently ignores
// unknown keys, unknown sections, broken section headers and lines without '='.
#pragma once

#include "apps/cli_app.h"
#include <string>

namespace xmlt::apps {

// Throws data::InputError (FILE:LINE: problem) for a line that is neither blank, a comment (# or
// ;), a section header naming a subcommand of `app` ([train], ...), nor `key = value` with a key
// that is an option of its section's subcommand (or of `app` before any section), for a key given
// twice in a section or given a list, and for a file that is not a regular file or not text.
void CheckConfigFile(const std::string& path, const CLI::App& app);

}  // namespace xmlt::apps
