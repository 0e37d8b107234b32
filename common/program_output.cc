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

ProgramRun run_program(const std::vector<std::string>& argv, int timeout_s, const ProgramRunOptions& options) {
  ProgramRun run;
  if (argv.empty()) {
    run.error = "no program to run";
    return run;
  }
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    run.error = "cannot run " + argv[0] + ": " + std::strerror(errno);
    return run;
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, fds[1], STDOUT_FILENO);
  if (options.with_stderr)
    posix_spawn_file_actions_adddup2(&fa, fds[1], STDERR_FILENO);
  else
    posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  std::vector<std::string> copy = argv;
  std::vector<char*> args;
  for (auto& a : copy) args.push_back(a.data());
  args.push_back(nullptr);
  pid_t pid = -1;
  const int rc = options.search_path ? ::posix_spawnp(&pid, args[0], &fa, &attr, args.data(), environ)
                                     : ::posix_spawn(&pid, args[0], &fa, &attr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  ::close(fds[1]);
  if (rc != 0) {
    ::close(fds[0]);
    run.error = "cannot run " + argv[0] + ": " + std::strerror(rc);
    return run;
  }
  run.started = true;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      run.timed_out = true;
      ::kill(-pid, SIGKILL);
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    const int n = ::poll(&p, 1, static_cast<int>(left.count()));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) continue;  // the deadline check above ends it
    char buf[4096];
    const ssize_t got = ::read(fds[0], buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;  // EOF: the program (and whatever it started) closed its output
    if (run.output.size() < options.max_output) run.output.append(buf, static_cast<std::size_t>(got));
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  if (WIFSIGNALED(status)) {
    run.signal = WTERMSIG(status);
    run.exit_code = 128 + run.signal;
  } else {
    run.exit_code = WEXITSTATUS(status);
  }
  return run;
}

Result<std::string> program_output(const std::vector<std::string>& argv, int timeout_s) {
  ProgramRun run = run_program(argv, timeout_s);
  if (!run.started) return make_error(run.error);
  if (run.timed_out) return make_error(argv[0] + " did not answer within " + std::to_string(timeout_s) + " s");
  if (run.exit_code != 0)
    return make_error(
        argv[0] + " failed (" +
        (run.signal == 0 ? "exit code " + std::to_string(run.exit_code) : "signal " + std::to_string(run.signal)) +
        "): " + run.output.substr(0, 300));
  return std::move(run.output);
}

}  // namespace fad
