// Starting, signalling and measuring compiler processes, behind an interface so
// the daemon loop is tested against a launcher that only records. This is the
// engine's executor boundary: the local implementation (BoostLauncher) runs
// units as processes here; a cluster one (SlurmExecutor) runs them as job steps
// on the nodes it names, and the engine then schedules each node on its own.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <string>
#include <vector>

#include "common/result.h"
#include "daemon/credentials.h"

namespace fad {

struct LaunchSpec {
  std::int64_t unit_id = 0;
  std::vector<std::string> argv;  ///< argv[0] is the program; never run through a shell
  std::string log_path;           ///< stdout and stderr are appended here
  /// Run as this user (a root fadd compiling another user's build); nullopt:
  /// as fadd itself.
  std::optional<Credentials> run_as{};
  /// Where a cluster executor runs it, with the threads and memory fad's
  /// scheduler granted (a step is sized by them); the local one ignores them.
  std::string node{};
  int threads = 1;
  std::uint64_t estimate_bytes = 0;
  /// The largest file it may write, its log included (RLIMIT_FSIZE; past it
  /// the kernel sends SIGXFSZ); 0 = no limit beyond fadd's own.
  std::uint64_t max_file_bytes = 0;
  /// Its TMPDIR (a directory of its own, which fadd deletes when it ends):
  /// a compiler killed mid-run (cancelled, OOM, stopped under pressure)
  /// leaves its temporary files there, not in /tmp for ever. "": as fadd's.
  std::string temp_dir{};
};

struct ExitInfo {
  int exit_code = 0;      ///< the program's exit status, or 128 + signal
  bool signaled = false;  ///< killed by a signal
  /// Peak memory of the whole tree when the launcher measured it exactly
  /// (per-unit cgroup); 0 when only polling saw it.
  std::uint64_t peak_bytes = 0;
  /// The kernel's OOM killer ended it (its unit cgroup counted a kill): it
  /// did not fail, memory ran out under it.
  bool oom_killed = false;
  /// Its node or its allocation went away under it (a cluster executor): not
  /// the unit's doing; it runs again (until its kMaxLostRuns-th loss).
  bool lost = false;
  /// Where peak_bytes came from ("cgroup", "sstat", "rss", ...); "" = polling.
  std::string peak_source{};
  /// Nothing reported how it ended: its launcher vanished, or it never had
  /// a process (an external unit stopped before its launcher started it).
  /// exit_code is made up, and recorded as none.
  bool unreported = false;
  /// A launched compile's launcher got this signal (SIGINT, SIGTERM, SIGHUP)
  /// and passed it on: stopped from outside, not failed on its own.
  int interrupt_signal = 0;
};

/// The exit code to record and show: none where nothing reported one.
inline std::optional<int> known_exit_code(const ExitInfo& info) {
  if (info.unreported) return std::nullopt;
  return info.exit_code;
}

/// Who a process is, as the kernel says (/proc/PID/stat and status).
struct ProcessInfo {
  int ppid = 0;
  int pgid = 0;
  unsigned uid = 0;               ///< real uid
  std::uint64_t start_ticks = 0;  ///< when it started, in clock ticks since boot
  bool zombie = false;            ///< it has exited; its parent has not reaped it yet
  bool stopped = false;           ///< stopped by a signal (Ctrl-Z, SIGSTOP) or a debugger
};

/// What exact accounting (a unit cgroup) saw of an adopted group.
struct GroupAccount {
  std::uint64_t peak_bytes = 0;  ///< 0 when unknown
  bool oom_killed = false;
  bool lost = false;          ///< see ExitInfo::lost
  std::string peak_source{};  ///< see ExitInfo::peak_source
};

/// A machine a cluster executor runs units on, as fad's scheduler sees it:
/// what the allocation holds there.
struct ExecutorNode {
  std::string name;
  int cpus = 1;
  std::uint64_t memory = 0;  ///< bytes
};

class ProcessLauncher {
 public:
  virtual ~ProcessLauncher() = default;
  /// Starts the process in a new process group; `on_exit` runs on the daemon's
  /// event loop when it ends. Returns the process group id (== pid).
  virtual Result<int> launch(const LaunchSpec& spec, std::function<void(ExitInfo)> on_exit) = 0;
  /// Sends `sig` to the whole process group (nvcc and its cicc/ptxas children).
  virtual void signal_group(int pgid, int sig) = 0;
  /// Bytes the process group uses now (resident memory summed over its processes).
  virtual std::uint64_t group_memory(int pgid) = 0;
  /// group_memory of several groups at once (every running unit, each tick):
  /// a launcher that must scan /proc scans it once for all of them.
  virtual std::map<int, std::uint64_t> groups_memory(const std::set<int>& pgids);
  /// Starts accounting for a process group someone else started (`fad launch`):
  /// where per-unit cgroups exist, the process moves into one.
  virtual void adopt(int /*pgid*/) {}
  /// How release() leaves what is still in an adopted group's cgroup.
  enum class Leftovers { kill, keep };
  /// Ends accounting for an adopted group: its exact peak and whether the OOM
  /// killer hit it (nothing known without a unit cgroup). With
  /// Leftovers::kill, what its compile left running (setsid children) is
  /// killed, as for fadd's own units; `keep` is for a compile that runs on
  /// (fadd stopping).
  virtual GroupAccount release(int /*pgid*/, Leftovers /*leftovers*/) { return {}; }
  /// Whether any process of the group still exists.
  virtual bool group_alive(int pgid) = 0;
  /// The parent, group and owner of process `pid`; nullopt when it does not
  /// exist. Checked before fadd takes a launcher's process under its control.
  virtual std::optional<ProcessInfo> process_info(int pid);
  /// The real uids of the processes in group `pgid` (one per process).
  virtual std::vector<unsigned> group_owners(int pgid);
  /// Whether the unit of group `pgid` runs nothing because it was stopped
  /// (SIGSTOP, Ctrl-Z): it has a living process and every living one is
  /// stopped. Not its leader alone: a compiler that stops itself while its
  /// children compile is using cores.
  virtual bool group_stopped(int pgid);
  /// Whether the unit of group `pgid` was started but its compiler was not
  /// yet: its job waits in a cluster's queue. Like a stopped one it compiles
  /// nothing, so its wait is no compile time.
  virtual bool group_pending(int /*pgid*/) { return false; }

  // ---- Cluster executors (the local one keeps these defaults). ----
  /// The nodes units run on. nullopt: this machine (the engine samples its
  /// memory and schedules once). A list, empty while there is no allocation:
  /// the engine schedules each node on its own and names it in LaunchSpec.
  /// Asked only while there is work, so an executor may take the call as demand.
  virtual std::optional<std::vector<ExecutorNode>> nodes() { return std::nullopt; }
  /// Why nothing can start now ("waiting for the Slurm allocation"); "" when units may start.
  virtual std::string wait_reason() { return ""; }
  /// The command a launcher (`fad launch`) puts before its compiler to run it
  /// where `spec` says (srun ... fad-step ... --); empty: run it directly.
  virtual std::vector<std::string> step_command(const LaunchSpec& /*spec*/) { return {}; }
  /// adopt(), knowing the unit (a cluster executor finds its step by it).
  virtual void adopt_unit(int pgid, std::int64_t /*unit_id*/) { adopt(pgid); }
  /// The executor's state for `fad status` (the allocation and its nodes), as
  /// JSON text; "" for the local machine.
  virtual std::string status_json() { return ""; }
  /// Stops what the executor holds beyond units (a cluster allocation) at shutdown.
  virtual void shutdown() {}
  /// Whether launch() runs a unit with LaunchSpec::run_as's rights. When not, a
  /// root fadd must not take compiles from other users.
  virtual bool drops_rights() const { return true; }
};

/// Sums VmRSS over every process of a process group by scanning `proc_root`.
std::uint64_t process_group_rss(const std::string& proc_root, int pgid);
/// The same for several groups, in one scan; every group asked for has an entry.
std::map<int, std::uint64_t> process_groups_rss(const std::string& proc_root, const std::set<int>& pgids);

/// The real uid of every process of a process group, by scanning `proc_root`.
std::vector<unsigned> process_group_owners(const std::string& proc_root, int pgid);

/// ProcessLauncher::group_stopped of a process group, by scanning `proc_root`.
bool process_group_stopped(const std::string& proc_root, int pgid);
/// The same for the processes `pids` (a unit cgroup's: a setsid child that
/// left the group is still the unit's), whose group leader is `leader`.
bool processes_stopped(const std::string& proc_root, int leader, const std::vector<int>& pids);

/// Process group (field 5) from /proc/PID/stat text; nullopt when malformed.
std::optional<int> parse_stat_pgid(std::string_view stat);

/// Parent, group, start time and state, and the real uid, from /proc/PID/stat and /proc/PID/status texts.
std::optional<ProcessInfo> parse_process_info(std::string_view stat, std::string_view status);
/// parse_process_info of /proc/PID; nullopt when there is no such process.
std::optional<ProcessInfo> read_process_info(int pid);

}  // namespace fad
