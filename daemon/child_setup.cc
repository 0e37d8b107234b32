// The pre-exec setup of fadd's children; see child_setup.h.
#include "daemon/child_setup.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

#include "common/oom_victim.h"

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

namespace fad {

void cloexec_from(int first_fd) {
#ifdef SYS_close_range
  if (::syscall(SYS_close_range, static_cast<unsigned>(first_fd), ~0U, CLOSE_RANGE_CLOEXEC) == 0) return;
#endif
  rlimit lim{};
  rlim_t last = 65536;
  if (::getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY && lim.rlim_cur < last)
    last = lim.rlim_cur;
  for (int fd = first_fd; static_cast<rlim_t>(fd) < last; ++fd) {
    const int flags = ::fcntl(fd, F_GETFD);
    if (flags >= 0 && !(flags & FD_CLOEXEC)) ::fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
  }
}

int ChildSetup::run_in_child() const {
  if (cgroup_procs_fd >= 0) {
    // Join the unit's cgroup before exec (and while still privileged), so
    // every byte the tree uses is counted.
    char digits[24];
    int n = 0;
    for (pid_t pid = ::getpid(); pid > 0; pid /= 10) digits[n++] = static_cast<char>('0' + pid % 10);
    char text[24];
    for (int i = 0; i < n; ++i) text[i] = digits[n - 1 - i];
    [[maybe_unused]] ssize_t w = ::write(cgroup_procs_fd, text, static_cast<std::size_t>(n));
  }
  ::setpgid(0, 0);
  if (raise_oom_score) {
    // If the kernel must kill something, a compiler (requeued by fadd) is the
    // right victim, not the daemon or the user's desktop.
    become_oom_victim();
  }
  if (max_file_bytes > 0) {
    rlimit lim{};
    if (::getrlimit(RLIMIT_FSIZE, &lim) == 0) {
      const auto wanted = static_cast<rlim_t>(max_file_bytes);
      if (lim.rlim_max == RLIM_INFINITY || lim.rlim_max > wanted) lim.rlim_max = wanted;
      if (lim.rlim_cur == RLIM_INFINITY || lim.rlim_cur > lim.rlim_max) lim.rlim_cur = lim.rlim_max;
      if (::setrlimit(RLIMIT_FSIZE, &lim) != 0) return errno;
    }
  }
  if (run_as) {
    if (const int err = drop_to(*run_as); err != 0) return err;
  }
  ::signal(SIGPIPE, SIG_DFL);  // fadd ignores it; compilers must not inherit that
  // After the credential change: changing them clears the parent-death signal.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(127);  // fadd died between fork and prctl
  cloexec_from(3);
  return 0;
}

}  // namespace fad
