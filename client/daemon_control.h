// `fad daemon start` / `stop` / `restart`: run fadd in the background without
// systemd, and stop it. Start is confirmed through the socket; stop only once
// fadd has exited and released its state-dir lock, so a start right after it
// never meets "another fadd is already running".
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "client/cli.h"
#include "client/commands.h"
#include "client/locations.h"

namespace fad::client {

/// The argv for fadd: the resolved socket and state dir (so fad and fadd agree
/// on them), the config if one is in use, `--log-file STATE/fadd.log` unless
/// the user's args name a log file, then the user's args after "--".
std::vector<std::string> fadd_argv(const std::string& fadd_path, const Locations& locations,
                                   const std::vector<std::string>& extra);

/// Where that fadd logs: the user's `--log-file` among `extra` (made
/// absolute, as fadd makes it), else STATE/fadd.log. Named in "fadd started"
/// and read back when fadd fails to start.
std::string fadd_log_path(const Locations& locations, const std::vector<std::string>& extra);

/// The last `n` lines of `text` (all of it if shorter), each newline-terminated.
std::string last_lines(std::string_view text, std::size_t n);

/// fadd next to `self_exe` (the running fad) if executable there, else the first
/// `fadd` on `path_env` (a PATH value); nullopt if neither.
std::optional<std::string> find_fadd(const std::string& self_exe, const std::string& path_env);

/// Runs the fadd a start would run with `fadd --check`, so that a restart
/// never stops a fadd for a new one that would refuse its arguments. 0 when
/// that fadd would start; else says why, and `meanwhile` (what became of the
/// running one; "" at a plain start), and gives 2 for fadd's usage errors,
/// 1 for the rest.
int check_new_fadd(const Command& cmd, const Locations& locations, const std::string& meanwhile, Context& ctx);

/// Checks fadd's arguments and places (check_new_fadd) before it makes or
/// empties anything, then starts fadd detached (own session, stdin
/// /dev/null, logging to the rotated STATE/fadd.log, anything else it prints
/// to STATE/fadd.out, emptied at each start) and waits up to 15 s for it to
/// answer. Exit 0 when it does or when a daemon already answered (arguments
/// after -- are then checked and not applied), also when another start or
/// restart on the same state dir got there first by moments (its fadd is
/// waited for, and then the one answering); 2 for fadd's usage errors; 1
/// when fadd cannot be found, its places are refused, it exits early (the
/// last lines of its output and log are shown) or does not answer in time.
int run_daemon_start(const Command& cmd, const Locations& locations, Context& ctx);

/// How `fad daemon stop` tells that fadd is gone; the real /proc and flock by
/// default, fakes in tests.
struct DaemonWatch {
  /// The process exists and is not a zombie.
  std::function<bool(long pid)> alive;
  /// Some process holds the flock on this file (fadd's STATE/fadd.lock).
  std::function<bool(const std::string& lock_path)> locked;
  /// The pid the fadd holding the lock wrote into it; 0 when unknown. Unset: never asked.
  std::function<long(const std::string& lock_path)> holder;
  /// The process is stopped (SIGSTOP, a debugger): it cannot exit until continued. Unset: never asked.
  std::function<bool(long pid)> stopped;
  /// Seconds since the process started; negative when unknown. Unset: never asked.
  std::function<double(long pid)> age_s;
  /// The fadd holding this lock wrote that it has begun to stop. Unset: never asked.
  std::function<bool(const std::string& lock_path)> stopping;
  /// The socket the fadd holding this lock wrote it listens at; "" before it
  /// listens, or from an older fadd. Unset: never asked.
  std::function<std::string(const std::string& lock_path)> serving;
};
DaemonWatch real_daemon_watch();

/// Asks fadd to shut down, then waits up to 60 s until its process has exited
/// and its state-dir lock (STATE/fadd.lock; STATE as fadd's status reports it,
/// else `locations`) is free. Exit 0 when stopped or not running; 1 when it
/// has not exited in time (the message says what still holds on).
int run_daemon_stop(const Locations& locations, Context& ctx, const DaemonWatch& watch = real_daemon_watch());

/// run_daemon_start with another view of processes and locks (tests).
int run_daemon_start(const Command& cmd, const Locations& locations, Context& ctx, const DaemonWatch& watch);

/// `fad daemon restart`: check the new arguments (check_new_fadd), stop (as
/// above), then start with them. Exit as the check or the stop when either
/// fails (the running fadd is then left running), else as start.
int run_daemon_restart(const Command& cmd, const Locations& locations, Context& ctx);

}  // namespace fad::client
