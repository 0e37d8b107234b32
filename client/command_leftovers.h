// What a stopped `fad run` command leaves running. A kill of `fad run`'s pid
// (a CI job's timeout, systemd) reaches the command's own process only; its
// children (a shell script's sleep, pip's ninja) would compile on, orphaned,
// against a cancelled build. fad run adopts them (it is their subreaper) and
// ends them once the command it stopped has exited, as a terminal's Ctrl-C
// would have reached them all. A process that left the session (a daemon
// such as a compiler cache's server) is not the command's to end, nor is one
// fad run had before it started the command: a script that ends in `exec fad
// run` hands it the script's own children (the `tee` of `exec > >(tee log)`).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace fad::client {

/// One line of the process table, as /proc/PID/stat gives it.
struct ProcessEntry {
  pid_t pid = 0;
  pid_t ppid = 0;
  pid_t session = 0;
  std::uint64_t start_ticks = 0;  ///< when it started: with the pid, which process it is
  bool exited = false;            ///< a zombie whose every thread has exited
};

/// The entry /proc/PID/stat's text describes; nullopt when it is not one.
/// `exited` is left false: a zombie leader may still have live threads.
std::optional<ProcessEntry> parse_process_entry(std::string_view stat);

/// A process by pid and start time (a pid alone may be reused).
struct ProcessId {
  pid_t pid = 0;
  std::uint64_t start_ticks = 0;
  bool operator==(const ProcessId& o) const { return pid == o.pid && start_ticks == o.start_ticks; }
};

/// Of `table`, the live descendants of `root` (not itself) in `session`,
/// leaving out the processes in `inherited` and everything below them.
std::vector<pid_t> command_leftovers(const std::vector<ProcessEntry>& table, pid_t root, pid_t session,
                                     const std::vector<ProcessId>& inherited);

/// This process's descendants now, in any session: what a command started
/// later does not own.
std::vector<ProcessId> current_descendants();

/// Makes this process the one its descendants are reparented to when their
/// parent exits (PR_SET_CHILD_SUBREAPER), so that it can still find them.
void adopt_orphans();

/// Reaps every exited child without waiting; returns `watched`'s wait status
/// when it was among them.
std::optional<int> reap_children(pid_t watched);

/// Sends SIGTERM and SIGCONT (a stopped process acts on the SIGTERM once
/// continued) to the command's leftovers in this process's session, waits up
/// to `grace` for them to exit (reaping them), then SIGKILLs the rest.
/// Returns how many got the SIGTERM.
std::size_t end_leftovers(const std::vector<ProcessId>& inherited, std::chrono::milliseconds grace);

}  // namespace fad::client
