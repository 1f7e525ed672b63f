// Checked writes to stdout; see stdout_check.h.
#include "apps/stdout_check.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <stdexcept>

namespace xmlt::apps {
namespace {

int g_first_error = -1;  // errno of the first failed write; -1 while none failed

void Remember(int error) {
  if (g_first_error < 0) g_first_error = error;
}

}  // namespace

void WriteStdout(const std::string& text) {
  if (!text.empty() && std::fwrite(text.data(), 1, text.size(), stdout) != text.size()) Remember(errno);
}

std::string StdoutError() {
  // std::cout shares the stdio buffer, and its flush would fail first, keeping the cause from us.
  if (std::fflush(stdout) != 0) Remember(errno);
  std::cout.flush();
  if (g_first_error < 0 && (std::ferror(stdout) != 0 || std::cout.fail())) Remember(0);  // cause unknown
  if (g_first_error < 0) return "";
  return std::string("stdout: write failed") + (g_first_error > 0 ? std::string(": ") + std::strerror(g_first_error) : "");
}

void CheckStdoutWritten() {
  const std::string error = StdoutError();
  if (!error.empty()) throw std::runtime_error(error);
}

}  // namespace xmlt::apps
