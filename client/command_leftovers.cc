// fad run's stopped command's leftovers; see command_leftovers.h.
#include "client/command_leftovers.h"

#include <dirent.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <optional>
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
  const auto state = parse_stat_state(stat);
  if (ec != std::errc() || end == stat.data() + stat.size() || *end != ' ' || pid <= 0 || !ppid || !session || !state)
    return std::nullopt;
  return ProcessEntry{pid, *ppid, *session, *state == 'Z' || *state == 'X'};
}

std::vector<pid_t> descendants_in_session(const std::vector<ProcessEntry>& table, pid_t root, pid_t session) {
  std::vector<pid_t> found, frontier{root};
  // Breadth first over parent links; a pid is visited once, so a table read
  // while processes come and go (a pid reused as its own ancestor) still ends.
  while (!frontier.empty()) {
    std::vector<pid_t> next;
    for (const ProcessEntry& e : table) {
      if (std::find(frontier.begin(), frontier.end(), e.ppid) == frontier.end() || e.pid == root) continue;
      if (std::find(found.begin(), found.end(), e.pid) != found.end()) continue;
      found.push_back(e.pid);
      next.push_back(e.pid);
    }
    frontier = std::move(next);
  }
  std::vector<pid_t> live;
  for (const ProcessEntry& e : table)
    if (!e.zombie && e.session == session && std::find(found.begin(), found.end(), e.pid) != found.end())
      live.push_back(e.pid);
  return live;
}

namespace {

std::vector<ProcessEntry> read_process_table() {
  std::vector<ProcessEntry> table;
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return table;
  while (const dirent* d = ::readdir(proc)) {
    if (d->d_name[0] < '1' || d->d_name[0] > '9') continue;
    const auto stat = read_regular_file(std::string("/proc/") + d->d_name + "/stat");
    if (!stat) continue;  // gone since the listing
    if (auto entry = parse_process_entry(*stat)) table.push_back(*entry);
  }
  ::closedir(proc);
  return table;
}

std::vector<pid_t> leftovers() { return descendants_in_session(read_process_table(), ::getpid(), ::getsid(0)); }

// Reaps what has exited; true once none of this session's descendants lives.
bool all_gone() {
  reap_children(0);
  if (!leftovers().empty()) return false;
  // One that exited between the reap and the look is a zombie of this
  // process's (its parent, if another, had exited too): reaped here, or left
  // to an init that may never reap it.
  reap_children(0);
  return true;
}

// `each_round` is sent to every leftover still there at each look: a
// SIGKILLed process's children come to this one and need it too.
bool wait_until_gone(std::chrono::milliseconds limit, int each_round) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (!all_gone()) {
    if (std::chrono::steady_clock::now() >= until) return false;
    if (each_round != 0)
      for (pid_t pid : leftovers()) ::kill(pid, each_round);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return true;
}

}  // namespace

void adopt_orphans() { ::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); }

std::optional<int> reap_children(pid_t watched) {
  std::optional<int> result;
  int status = 0;
  for (pid_t done; (done = ::waitpid(-1, &status, WNOHANG)) > 0;)
    if (done == watched) result = status;
  return result;
}

std::size_t end_leftovers(std::chrono::milliseconds grace) {
  const std::vector<pid_t> first = leftovers();
  for (pid_t pid : first) {
    ::kill(pid, SIGTERM);
    ::kill(pid, SIGCONT);  // a stopped process acts on the SIGTERM once continued
  }
  if (first.empty() || wait_until_gone(grace, 0)) return first.size();
  // What outlived the SIGTERM (or was started as it came) ends now.
  wait_until_gone(std::chrono::seconds(2), SIGKILL);
  return first.size();
}

}  // namespace fad::client
