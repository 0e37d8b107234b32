// The launcher's compiler process; see compiler_process.h.
#include "client/compiler_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <string>
#include <utility>

#include "client/launcher.h"
#include "common/file_read.h"
#include "common/meminfo.h"
#include "common/oom_victim.h"

namespace fad::client {

namespace {
// Output kept for the cache per stream; a compile that prints more is not cached.
constexpr std::size_t kMaxCaptured = 16u << 20;
// What go() sends the held child when it is to run as the OOM killer's first choice.
constexpr char kGoAsVictim = 'v';
constexpr auto kNowAndThen = std::chrono::seconds(2);
constexpr long long kExitCheckMs = 100;

void write_all(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // the caller's terminal went away: keep reading so the compiler never blocks
    data += n;
    size -= static_cast<std::size_t>(n);
  }
}
/// Whether `pid`, a child, has exited; it is left to be reaped.
bool has_exited(pid_t pid) {
  siginfo_t info{};
  return ::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid;
}
}  // namespace

std::optional<CompilerProcess> CompilerProcess::start(const std::vector<std::string>& argv, bool capture) {
  int go[2];
  if (::pipe2(go, O_CLOEXEC) != 0) return std::nullopt;
  int out[2] = {-1, -1}, err[2] = {-1, -1};
  if (capture && (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0)) {
    for (int fd : {go[0], go[1], out[0], out[1], err[0], err[1]})
      if (fd >= 0) ::close(fd);
    return std::nullopt;
  }
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::setpgid(0, 0);
    if (capture) {
      ::dup2(out[1], 1);
      ::dup2(err[1], 2);
    }
    char byte = 0;
    while (::read(go[0], &byte, 1) < 0 && errno == EINTR) {}
    if (byte == kGoAsVictim) become_oom_victim();  // raising one's own score needs no privilege; exec keeps it
    ::setenv("FAD_LAUNCH_ACTIVE", "1", 1);
    ::_exit(exec_direct(argv));
  }
  ::close(go[0]);
  if (capture) {
    ::close(out[1]);
    ::close(err[1]);
  }
  if (pid < 0) {
    for (int fd : {go[1], out[0], err[0]})
      if (fd >= 0) ::close(fd);
    return std::nullopt;
  }
  ::setpgid(pid, pid);
  CompilerProcess p;
  p.pid_ = pid;
  p.go_fd_ = go[1];
  p.out_fd_ = out[0];
  p.err_fd_ = err[0];
  return p;
}

CompilerProcess::CompilerProcess(CompilerProcess&& o) noexcept
    : pid_(std::exchange(o.pid_, -1)),
      go_fd_(std::exchange(o.go_fd_, -1)),
      out_fd_(std::exchange(o.out_fd_, -1)),
      err_fd_(std::exchange(o.err_fd_, -1)) {}

CompilerProcess::~CompilerProcess() {
  for (int fd : {go_fd_, out_fd_, err_fd_})
    if (fd >= 0) ::close(fd);
  if (pid_ > 0) abandon();
}

void CompilerProcess::go(bool oom_victim) {
  if (go_fd_ < 0) return;
  const char byte = oom_victim ? kGoAsVictim : 'g';
  [[maybe_unused]] auto w = ::write(go_fd_, &byte, 1);
  ::close(go_fd_);
  go_fd_ = -1;
}

void CompilerProcess::abandon() {
  if (pid_ <= 0) return;
  ::kill(-pid_, SIGKILL);
  if (go_fd_ >= 0) {
    ::close(go_fd_);
    go_fd_ = -1;
  }
  while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {}
  pid_ = -1;
}

bool CompilerProcess::stopped() const {
  if (pid_ <= 0) return false;
  return parse_stat_state(read_small_file("/proc/" + std::to_string(pid_) + "/stat")) == 'T';
}

CompilerExit CompilerProcess::wait(const std::function<void()>& now_and_then) {
  using Clock = std::chrono::steady_clock;
  CompilerExit exit;
  exit.complete = out_fd_ >= 0;
  // Watching, the wait wakes on the compiler's exit, not on its output pipes
  // alone, and looks up now and then in between. A pidfd (Linux 5.3) says
  // when it exited; without one, waitid is asked every 100 ms.
  bool watching = static_cast<bool>(now_and_then);
  const int exited_fd = watching ? static_cast<int>(::syscall(SYS_pidfd_open, pid_, 0)) : -1;
  auto next_look = Clock::now() + kNowAndThen;
  // Pass the output through as it comes: the build tool shows it live.
  while (out_fd_ >= 0 || err_fd_ >= 0 || watching) {
    pollfd fds[3] = {{out_fd_, POLLIN, 0}, {err_fd_, POLLIN, 0}, {watching ? exited_fd : -1, POLLIN, 0}};
    long long timeout_ms = -1;
    if (watching) {
      timeout_ms = std::chrono::ceil<std::chrono::milliseconds>(next_look - Clock::now()).count();
      if (exited_fd < 0) timeout_ms = std::min<long long>(timeout_ms, kExitCheckMs);
      timeout_ms = std::max<long long>(timeout_ms, 0);
    }
    if (::poll(fds, 3, static_cast<int>(timeout_ms)) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    // Once it exited, what is left is draining pipes a grandchild may still hold.
    if (watching && (exited_fd >= 0 ? fds[2].revents != 0 : has_exited(pid_))) watching = false;
    if (watching && Clock::now() >= next_look) {
      now_and_then();
      next_look = Clock::now() + kNowAndThen;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buf[65536];
      const ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      int& fd = i == 0 ? out_fd_ : err_fd_;
      if (n <= 0) {
        ::close(fd);
        fd = -1;
        continue;
      }
      write_all(i == 0 ? 1 : 2, buf, static_cast<std::size_t>(n));
      std::string& kept = i == 0 ? exit.stdout_text : exit.stderr_text;
      if (kept.size() + static_cast<std::size_t>(n) <= kMaxCaptured)
        kept.append(buf, static_cast<std::size_t>(n));
      else
        exit.complete = false;
    }
  }
  for (int fd : {out_fd_, err_fd_, exited_fd})
    if (fd >= 0) ::close(fd);
  out_fd_ = err_fd_ = -1;
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {}
  pid_ = -1;
  if (WIFSIGNALED(status)) {
    exit.code = 128 + WTERMSIG(status);
    exit.signaled = true;
  } else {
    exit.code = WEXITSTATUS(status);
  }
  return exit;
}

}  // namespace fad::client
