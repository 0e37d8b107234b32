// GPU discovery through nvidia-smi rather than the CUDA runtime: the client
// must work (and build) on machines without CUDA.
#include "client/gpu_archs.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <sstream>

extern char** environ;

namespace fad::client {

Result<std::vector<Arch>> parse_compute_caps(std::string_view text) {
  std::vector<std::string> lines;
  std::istringstream in{std::string(text)};
  for (std::string line; std::getline(in, line);) {
    auto first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos) continue;
    line = line.substr(first, line.find_last_not_of(" \t\r") - first + 1);
    lines.push_back(line);
  }
  if (lines.empty()) return make_error("nvidia-smi listed no GPU");
  return parse_arch_list(lines);
}

Result<std::vector<Arch>> detect_gpu_archs() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return make_error("cannot create a pipe for nvidia-smi");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  const char* argv[] = {"nvidia-smi", "--query-gpu=compute_cap", "--format=csv,noheader", nullptr};
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, "nvidia-smi", &actions, nullptr, const_cast<char* const*>(argv), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(fds[1]);
  if (rc != 0) {
    ::close(fds[0]);
    return make_error("cannot run nvidia-smi");
  }
  std::string output;
  char buf[4096];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    output.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return make_error("nvidia-smi failed");
  return parse_compute_caps(output);
}

}  // namespace fad::client
