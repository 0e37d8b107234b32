// What every child of fadd (a compile unit, a compiler probe) does between fork
// and exec: a process group of its own, the owner's credentials when fadd is
// root, a parent-death signal, default SIGPIPE, and every descriptor but 0, 1
// and 2 closed at exec. The last one is fadd's guarantee whatever a library
// forgot: a compiler that inherited fadd's listening socket would keep it
// alive after a crash (clients hang, a restart sees "already running").
#pragma once

#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include <boost/process/v2/posix/default_launcher.hpp>

#include "daemon/credentials.h"

namespace fad {

struct ChildSetup {
  pid_t parent = 0;                     ///< fadd's pid: the child exits if fadd died before it could notice
  int cgroup_procs_fd = -1;             ///< a unit cgroup to join first; -1 for none
  const Credentials* run_as = nullptr;  ///< drop to these (fadd is root); null to keep fadd's
  bool raise_oom_score = false;         ///< make it the OOM killer's first choice (compiles)
  /// RLIMIT_FSIZE, soft and hard, so the compiler cannot raise it; 0 = leave
  /// fadd's. Never raises a lower limit fadd was started with.
  std::uint64_t max_file_bytes = 0;

  /// Runs in the child. Only system calls: the child of a daemon may hold
  /// locks another thread took. Returns 0 or the errno of what failed.
  int run_in_child() const;

  /// The Boost.Process v2 initializer hook.
  boost::process::v2::error_code on_exec_setup(boost::process::v2::posix::default_launcher&,
                                               const boost::process::v2::filesystem::path&, const char* const*&) {
    if (const int err = run_in_child(); err != 0) {
      errno = err;  // Boost reports errno (not the returned code) to the parent
      return boost::process::v2::error_code(err, boost::system::system_category());
    }
    return {};
  }
  // Boost.Process 1.81 looks for the two hooks below with a five-argument
  // call (an error code first) but calls them with four: these declarations,
  // never defined, only make the hooks found.
  template <typename Launcher, typename Argv>
  void on_exec_error(Launcher&, const boost::process::v2::error_code&, const boost::process::v2::filesystem::path&,
                     Argv&&, const boost::process::v2::error_code&);
  template <typename Launcher, typename Argv>
  void on_error(Launcher&, const boost::process::v2::error_code&, const boost::process::v2::filesystem::path&, Argv&&,
                const boost::process::v2::error_code&);
  /// In the child, once exec (or the setup above) failed and Boost has told
  /// the parent why: leave at once. exit() would run fadd's atexit handlers
  /// and flush its buffers a second time from the copy.
  template <typename Launcher, typename Argv>
  void on_exec_error(Launcher&, const boost::process::v2::filesystem::path&, Argv&&,
                     const boost::process::v2::error_code&) {
    ::_exit(127);
  }
  /// In fadd, when the start failed after the fork: Boost reports the error
  /// but forgets the child, which stayed a zombie until fadd exited (one per
  /// refused compiler probe: a way for any user to fill the process table).
  /// The child has failed or is about to; its pid cannot be reused before it
  /// is reaped, so the kill reaches nobody else.
  template <typename Launcher, typename Argv>
  void on_error(Launcher& launcher, const boost::process::v2::filesystem::path&, Argv&&,
                const boost::process::v2::error_code&) {
    if (launcher.pid <= 0) return;  // it failed before or at the fork
    ::kill(launcher.pid, SIGKILL);
    while (::waitpid(launcher.pid, nullptr, 0) < 0 && errno == EINTR) {}
    launcher.pid = -1;
  }
};

/// Marks every descriptor from 3 up close-on-exec (close_range where the
/// kernel has it, else one fcntl per descriptor up to the soft limit).
/// Async-signal-safe.
void cloexec_from(int first_fd);

}  // namespace fad
