// What every child of fadd (a compile unit, a compiler probe) does between fork
// and exec: a process group of its own, the owner's credentials when fadd is
// root, a parent-death signal, default SIGPIPE, and every descriptor but 0, 1
// and 2 closed at exec. The last one is fadd's guarantee whatever a library
// forgot: a compiler that inherited fadd's listening socket would keep it
// alive after a crash (clients hang, a restart sees "already running").
#pragma once

#include <sys/types.h>

#include <boost/process/v2/posix/default_launcher.hpp>

#include "daemon/credentials.h"

namespace fad {

struct ChildSetup {
  pid_t parent = 0;                     ///< fadd's pid: the child exits if fadd died before it could notice
  int cgroup_procs_fd = -1;             ///< a unit cgroup to join first; -1 for none
  const Credentials* run_as = nullptr;  ///< drop to these (fadd is root); null to keep fadd's
  bool raise_oom_score = false;         ///< make it the OOM killer's first choice (compiles)

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
};

/// Marks every descriptor from 3 up close-on-exec (close_range where the
/// kernel has it, else one fcntl per descriptor up to the soft limit).
/// Async-signal-safe.
void cloexec_from(int first_fd);

}  // namespace fad
