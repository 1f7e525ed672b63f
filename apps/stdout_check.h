// stdout is an output like any file: a full disk or a closed pipe must not leave a short output
// behind an exit code of 0. The commands write their output through WriteStdout, which keeps the
// cause of the first failure (stdio forgets it: a failed write's bytes are dropped, and a later
// flush succeeds), and check it once their output is written; training checks it after each line
// too (a run that can no longer report stops at a safe point, when it can resume).
#pragma once

#include <string>

namespace xmlt::apps {

// Writes `text` to stdout (buffered; StdoutError flushes).
void WriteStdout(const std::string& text);

// Flushes stdout and says why a write to it failed: "stdout: write failed: No space left on
// device", or "" while every write succeeded.
std::string StdoutError();

// Throws std::runtime_error(StdoutError()) when it is not empty (exit 1).
void CheckStdoutWritten();

}  // namespace xmlt::apps
