// Runs the real xmltrain binary as a child process, for what an in-process run cannot show: its
// own stdout closed or full, and signals.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

namespace xmlt::apps::testing {

// Starts the binary with `args`; its stdout goes to `stdout_path` (opened for writing, not
// truncated, so that /dev/full works) and its stderr to `stderr_path`.
inline pid_t SpawnCli(const std::vector<std::string>& args, const std::string& stdout_path,
                      const std::string& stderr_path, int stdout_fd = -1);

// The same with stdout on an open descriptor (the write end of a pipe, say; open it close-on-exec,
// so that the child holds no other end of it).
inline pid_t SpawnCliWritingTo(int stdout_fd, const std::vector<std::string>& args, const std::string& stderr_path) {
  return SpawnCli(args, "", stderr_path, stdout_fd);
}

inline pid_t SpawnCli(const std::vector<std::string>& args, const std::string& stdout_path,
                      const std::string& stderr_path, int stdout_fd) {
  const pid_t child = fork();
  if (child != 0) return child;
  const int out = stdout_fd >= 0 ? stdout_fd : ::open(stdout_path.c_str(), O_WRONLY | O_CREAT, 0644);
  const int err = ::open(stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (out < 0 || err < 0 || ::dup2(out, STDOUT_FILENO) < 0 || ::dup2(err, STDERR_FILENO) < 0) _exit(99);
  ::signal(SIGPIPE, SIG_DFL);  // as a shell starts it, whatever this test process does
  std::vector<std::string> full = args;
  full.insert(full.begin(), XMLT_CLI_PATH);
  std::vector<char*> argv;
  for (std::string& a : full) argv.push_back(a.data());
  argv.push_back(nullptr);
  execv(XMLT_CLI_PATH, argv.data());
  _exit(98);
}

// The child's exit code, or 1000 + the signal that ended it.
inline int WaitForExit(pid_t child) {
  int status = 0;
  waitpid(child, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1000 + WTERMSIG(status);
}

// Waits until `path` exists, up to a minute.
inline bool WaitForFile(const std::string& path) {
  for (int k = 0; k < 6000; ++k) {
    if (std::filesystem::exists(path)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

}  // namespace xmlt::apps::testing
