// Measuring a unit's memory over its whole process tree. nvcc runs cicc, ptxas
// and the host compiler as children; they all stay in the process group fadd
// created for the unit, so summing VmRSS over the group measures the unit.
#include <dirent.h>

#include <cstdlib>
#include <map>
#include <set>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/meminfo.h"
#include "daemon/memory_probe.h"
#include "daemon/process_launcher.h"

namespace fad {

namespace {
bool stopped_state(char state) { return state == 'T' || state == 't'; }  // SIGSTOP, Ctrl-Z; a debugger
bool gone_state(char state) { return state == 'Z' || state == 'X'; }     // exited, not reaped yet
}  // namespace

std::optional<int> parse_stat_pgid(std::string_view stat) {
  // "pid (comm) state ppid pgrp ..."; comm may hold spaces and parentheses.
  auto close = stat.rfind(')');
  if (close == std::string_view::npos) return std::nullopt;
  std::string rest(stat.substr(close + 1));
  char state = 0;
  int ppid = 0, pgrp = 0;
  if (std::sscanf(rest.c_str(), " %c %d %d", &state, &ppid, &pgrp) != 3) return std::nullopt;
  return pgrp;
}

std::optional<ProcessInfo> parse_process_info(std::string_view stat, std::string_view status) {
  auto close = stat.rfind(')');
  if (close == std::string_view::npos) return std::nullopt;
  std::string rest(stat.substr(close + 1));
  char state = 0;
  ProcessInfo info;
  // state ppid pgrp, then 16 fields up to starttime (field 22 of proc(5)).
  unsigned long long start = 0;
  if (std::sscanf(rest.c_str(), " %c %d %d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
                  &state, &info.ppid, &info.pgid, &start) != 4)
    return std::nullopt;
  info.start_ticks = start;
  info.zombie = gone_state(state);
  info.stopped = stopped_state(state);
  // "Uid:\treal\teffective\tsaved\tfs"
  auto uid_line = status.find("\nUid:");
  if (uid_line == std::string_view::npos) return std::nullopt;
  std::string uids(status.substr(uid_line + 5, 32));
  if (std::sscanf(uids.c_str(), " %u", &info.uid) != 1) return std::nullopt;
  return info;
}

std::optional<ProcessInfo> ProcessLauncher::process_info(int pid) { return read_process_info(pid); }
std::vector<unsigned> ProcessLauncher::group_owners(int pgid) { return process_group_owners("/proc", pgid); }
bool ProcessLauncher::group_stopped(int pgid) { return process_group_stopped("/proc", pgid); }

std::optional<ProcessInfo> read_process_info(int pid) {
  if (pid <= 0) return std::nullopt;
  const std::string base = "/proc/" + std::to_string(pid);
  return parse_process_info(read_small_file(base + "/stat"), read_small_file(base + "/status"));
}

namespace {
/// Calls `visit` with the group, stat and status texts of every process under
/// `proc_root` whose group is one of `pgids`, in one pass over the directory.
template <typename Visit>
void for_each_member(const std::string& proc_root, const std::set<int>& pgids, Visit visit) {
  if (pgids.empty()) return;
  DIR* dir = ::opendir(proc_root.c_str());
  if (!dir) return;
  while (auto* entry = ::readdir(dir)) {
    const char* name = entry->d_name;
    if (name[0] < '0' || name[0] > '9') continue;
    const std::string base = proc_root + "/" + name;
    const std::string stat = read_small_file(base + "/stat");
    auto group = parse_stat_pgid(stat);
    if (!group || !pgids.count(*group)) continue;
    visit(*group, std::string_view(stat), std::string_view(read_small_file(base + "/status")));
  }
  ::closedir(dir);
}

/// "Threads:" of /proc/PID/status; 0 when missing.
int status_threads(std::string_view status) {
  const auto at = status.find("\nThreads:");
  return at == std::string_view::npos ? 0 : std::atoi(std::string(status.substr(at + 9, 16)).c_str());
}

/// Whether a process in `state` runs anything (nullopt: gone meanwhile). An
/// exited one does not, unless it is a leader whose main thread alone exited
/// while its other threads compute (shown as 'Z' all the same); its status is
/// read for that only.
template <typename ReadStatus>
bool runs(std::optional<char> state, ReadStatus read_status) {
  if (!state || stopped_state(*state)) return false;
  return !gone_state(*state) || status_threads(read_status()) > 1;
}

/// The state of process `pid` under `proc_root`.
std::optional<char> state_of(const std::string& proc_root, int pid) {
  return parse_stat_state(read_small_file(proc_root + "/" + std::to_string(pid) + "/stat"));
}

/// Whether process `pid` is running, read from its state alone (the common case, cheap).
bool plainly_running(const std::string& proc_root, int pid) {
  const auto state = state_of(proc_root, pid);
  return state && !stopped_state(*state) && !gone_state(*state);
}
}  // namespace

std::map<int, std::uint64_t> process_groups_rss(const std::string& proc_root, const std::set<int>& pgids) {
  std::map<int, std::uint64_t> totals;
  for (int pgid : pgids) totals[pgid] = 0;
  // One pass for all groups: a pass per running unit would read every
  // process's stat once per unit and tick.
  for_each_member(proc_root, pgids, [&](int group, std::string_view, std::string_view status) {
    if (auto rss = parse_status_rss(status)) totals[group] += *rss;
  });
  return totals;
}

std::uint64_t process_group_rss(const std::string& proc_root, int pgid) {
  return process_groups_rss(proc_root, {pgid})[pgid];
}

std::map<int, std::uint64_t> ProcessLauncher::groups_memory(const std::set<int>& pgids) {
  std::map<int, std::uint64_t> bytes;
  for (int pgid : pgids) bytes[pgid] = group_memory(pgid);
  return bytes;
}

std::vector<unsigned> process_group_owners(const std::string& proc_root, int pgid) {
  std::vector<unsigned> owners;
  for_each_member(proc_root, {pgid}, [&](int, std::string_view stat, std::string_view status) {
    if (auto info = parse_process_info(stat, status)) owners.push_back(info->uid);
  });
  return owners;
}

bool process_group_stopped(const std::string& proc_root, int pgid) {
  // A running leader answers without a scan of /proc, every tick, for every
  // unit: the common case. Only a stopped or exited one needs its group.
  if (plainly_running(proc_root, pgid)) return false;
  bool running = false;
  int stopped = 0;
  for_each_member(proc_root, {pgid}, [&](int, std::string_view stat, std::string_view status) {
    const auto state = parse_stat_state(stat);
    running = running || runs(state, [&] { return status; });
    stopped += state && stopped_state(*state);
  });
  return !running && stopped > 0;
}

bool processes_stopped(const std::string& proc_root, int leader, const std::vector<int>& pids) {
  if (plainly_running(proc_root, leader)) return false;
  int stopped = 0;
  for (int pid : pids) {
    if (pid <= 0) continue;
    const auto state = state_of(proc_root, pid);
    const auto read_status = [&] { return read_small_file(proc_root + "/" + std::to_string(pid) + "/status"); };
    if (runs(state, read_status)) return false;  // one runs: enough
    stopped += state && stopped_state(*state);
  }
  return stopped > 0;
}

}  // namespace fad
