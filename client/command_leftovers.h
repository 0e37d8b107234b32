// What a stopped `fad run` command leaves running. A kill of `fad run`'s pid
// (a CI job's timeout, systemd) reaches the command's own process only; its
// children (a shell script's sleep, pip's ninja) would compile on, orphaned,
// against a cancelled build. fad run adopts them (it is their subreaper) and
// ends them once the command it stopped has exited, as a terminal's Ctrl-C
// would have reached them all. A process that left the session (a daemon
// such as a compiler cache's server) is not the command's to end.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <optional>
#include <string_view>
#include <vector>

namespace fad::client {

/// One line of the process table, as /proc/PID/stat gives it.
struct ProcessEntry {
  pid_t pid = 0;
  pid_t ppid = 0;
  pid_t session = 0;
  bool zombie = false;
};

/// The entry /proc/PID/stat's text describes; nullopt when it is not one.
std::optional<ProcessEntry> parse_process_entry(std::string_view stat);

/// Of `table`, the live descendants of `root` (not itself) in `session`.
std::vector<pid_t> descendants_in_session(const std::vector<ProcessEntry>& table, pid_t root, pid_t session);

/// Makes this process the one its descendants are reparented to when their
/// parent exits (PR_SET_CHILD_SUBREAPER), so that it can still find them.
void adopt_orphans();

/// Reaps every exited child without waiting; returns `watched`'s wait status
/// when it was among them.
std::optional<int> reap_children(pid_t watched);

/// Sends SIGTERM (and SIGCONT, for a stopped one) to this process's live
/// descendants in its session, waits up to `grace` for them to exit (reaping
/// them), then SIGKILLs the rest.
/// Returns how many got the SIGTERM.
std::size_t end_leftovers(std::chrono::milliseconds grace);

}  // namespace fad::client
