// fad run's stopped command's leftovers; see command_leftovers.h.
#include "client/command_leftovers.h"

#include <dirent.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <string>
#include <thread>

#include "common/file_read.h"
#include "common/meminfo.h"

namespace fad::client {

std::optional<ProcessEntry> parse_process_entry(std::string_view stat) {
  pid_t pid = 0;
  const auto [end, ec] = std::from_chars(stat.data(), stat.data() + stat.size(), pid);
  const auto ppid = parse_stat_ppid(stat);
  const auto session = parse_stat_session(stat);
  const auto start = parse_stat_start_ticks(stat);
  if (ec != std::errc() || end == stat.data() + stat.size() || *end != ' ' || pid <= 0 || !ppid || !session || !start)
    return std::nullopt;
  return ProcessEntry{pid, *ppid, *session, *start, false};
}

namespace {

// The descendants of `root` (not itself), leaving out the processes in
// `inherited` and everything below them. Breadth first over parent links; a
// pid is visited once, so a table read while processes come and go (a pid
// reused as its own ancestor) still ends.
std::vector<const ProcessEntry*> descendants(const std::vector<ProcessEntry>& table, pid_t root,
                                             const std::vector<ProcessId>& inherited) {
  std::vector<pid_t> seen, frontier{root};
  std::vector<const ProcessEntry*> out;
  while (!frontier.empty()) {
    std::vector<pid_t> next;
    for (const ProcessEntry& e : table) {
      if (e.pid == root || std::find(frontier.begin(), frontier.end(), e.ppid) == frontier.end()) continue;
      if (std::find(seen.begin(), seen.end(), e.pid) != seen.end()) continue;
      seen.push_back(e.pid);
      if (std::find(inherited.begin(), inherited.end(), ProcessId{e.pid, e.start_ticks}) != inherited.end()) continue;
      next.push_back(e.pid);
      out.push_back(&e);
    }
    frontier = std::move(next);
  }
  return out;
}

}  // namespace

std::vector<pid_t> command_leftovers(const std::vector<ProcessEntry>& table, pid_t root, pid_t session,
                                     const std::vector<ProcessId>& inherited) {
  std::vector<pid_t> live;
  for (const ProcessEntry* e : descendants(table, root, inherited))
    if (!e->exited && e->session == session) live.push_back(e->pid);
  return live;
}

namespace {

// A zombie leader whose other threads still run is a live process: it holds
// its memory and cores, and its threads may fork.
bool all_threads_exited(const std::string& pid) {
  const auto status = read_regular_file("/proc/" + pid + "/status");
  if (!status) return true;  // reaped since
  const auto at = status->find("\nThreads:");
  return at == std::string::npos || std::strtol(status->c_str() + at + 9, nullptr, 10) <= 1;
}

std::vector<ProcessEntry> read_process_table() {
  std::vector<ProcessEntry> table;
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return table;
  while (const dirent* d = ::readdir(proc)) {
    if (d->d_name[0] < '1' || d->d_name[0] > '9') continue;
    const auto stat = read_regular_file(std::string("/proc/") + d->d_name + "/stat");
    if (!stat) continue;  // gone since the listing
    auto entry = parse_process_entry(*stat);
    if (!entry) continue;
    const auto state = parse_stat_state(*stat);
    entry->exited = state == 'X' || (state == 'Z' && all_threads_exited(d->d_name));
    table.push_back(*entry);
  }
  ::closedir(proc);
  return table;
}

std::vector<pid_t> leftovers(const std::vector<ProcessId>& inherited) {
  return command_leftovers(read_process_table(), ::getpid(), ::getsid(0), inherited);
}

// Reaps what has exited; true once none of the leftovers lives, seen twice
// a moment apart: one that forks a successor and exits may be between the
// two at the first look.
bool all_gone(const std::vector<ProcessId>& inherited) {
  for (int look = 0; look < 2; ++look) {
    if (look > 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    reap_children(0);
    if (!leftovers(inherited).empty()) return false;
  }
  reap_children(0);  // one that exited after the last look
  return true;
}

// `each_round` is sent to every leftover still there at each look: a
// SIGKILLed process's children come to this one and need it too.
bool wait_until_gone(const std::vector<ProcessId>& inherited, std::chrono::milliseconds limit, int each_round) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (!all_gone(inherited)) {
    if (std::chrono::steady_clock::now() >= until) return false;
    if (each_round != 0)
      for (pid_t pid : leftovers(inherited)) ::kill(pid, each_round);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return true;
}

}  // namespace

std::vector<ProcessId> current_descendants() {
  std::vector<ProcessId> out;
  const auto table = read_process_table();
  for (const ProcessEntry* e : descendants(table, ::getpid(), {})) out.push_back({e->pid, e->start_ticks});
  return out;
}

void adopt_orphans() { ::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); }

std::optional<int> reap_children(pid_t watched) {
  std::optional<int> result;
  int status = 0;
  for (pid_t done; (done = ::waitpid(-1, &status, WNOHANG)) > 0;)
    if (done == watched) result = status;
  return result;
}

std::size_t end_leftovers(const std::vector<ProcessId>& inherited, std::chrono::milliseconds grace) {
  reap_children(0);
  const std::vector<pid_t> first = leftovers(inherited);
  for (pid_t pid : first) {
    ::kill(pid, SIGTERM);
    ::kill(pid, SIGCONT);
  }
  if (first.empty() || wait_until_gone(inherited, grace, 0)) return first.size();
  // What outlived the SIGTERM (or was started as it came) ends now.
  wait_until_gone(inherited, std::chrono::seconds(2), SIGKILL);
  return first.size();
}

}  // namespace fad::client
