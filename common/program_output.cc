// Program output capture; see program_output.h.
#include "common/program_output.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <utility>

extern char** environ;

namespace fad {

Result<ProgramRun> run_program(const std::vector<std::string>& argv, int timeout_s) {
  if (argv.empty()) return make_error("no program to run");
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return make_error("cannot run " + argv[0] + ": " + std::strerror(errno));
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
  std::vector<std::string> copy = argv;
  std::vector<char*> args;
  for (auto& a : copy) args.push_back(a.data());
  args.push_back(nullptr);
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  ::close(fds[1]);
  if (rc != 0) {
    ::close(fds[0]);
    return make_error("cannot run " + argv[0] + ": " + std::strerror(rc));
  }
  std::string out;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  bool timed_out = false;
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    const int n = ::poll(&p, 1, static_cast<int>(left.count()));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) continue;
    char buf[4096];
    const ssize_t got = ::read(fds[0], buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    out.append(buf, static_cast<std::size_t>(got));
  }
  ::close(fds[0]);
  if (timed_out) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  if (timed_out) return make_error(argv[0] + " did not answer within " + std::to_string(timeout_s) + " s");
  if (WIFSIGNALED(status)) return ProgramRun{128 + WTERMSIG(status), WTERMSIG(status), std::move(out)};
  return ProgramRun{WEXITSTATUS(status), 0, std::move(out)};
}

Result<std::string> program_output(const std::vector<std::string>& argv, int timeout_s) {
  auto run = run_program(argv, timeout_s);
  if (!run) return make_error(run.error());
  if (run->exit_code != 0)
    return make_error(
        argv[0] + " failed (" +
        (run->signal == 0 ? "exit code " + std::to_string(run->exit_code) : "signal " + std::to_string(run->signal)) +
        "): " + run->output.substr(0, 300));
  return std::move(run->output);
}

}  // namespace fad
