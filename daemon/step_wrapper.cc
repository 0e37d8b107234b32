// The step wrapper; see step_wrapper.h.
#include "daemon/step_wrapper.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>

#include "common/meminfo.h"
#include "common/oom_victim.h"
#include "daemon/memory_probe.h"
#include "daemon/process_launcher.h"
#include "daemon/step_report.h"

namespace fad {

namespace fs = std::filesystem;

namespace {

volatile sig_atomic_t g_child_group = 0;
volatile sig_atomic_t g_terminated = 0;

void forward(int sig) {
  g_terminated = 1;
  if (g_child_group > 1) ::kill(-g_child_group, sig);
}

std::optional<std::uint64_t> cgroup_value(const std::string& file) {
  auto v = parse_cgroup_value(read_small_file(file));
  if (!v) return std::nullopt;
  return *v;
}

/// The smallest memory limit on the way up from `dir` (Slurm sets it on the
/// step, the wrapper sits in the step's task cgroup below it).
std::uint64_t cgroup_limit(const std::string& dir, bool v2) {
  std::uint64_t best = 0;
  fs::path p(dir);
  for (int up = 0; up < 3 && p.has_relative_path(); ++up, p = p.parent_path()) {
    auto limit = parse_cgroup_limit(read_small_file((p / (v2 ? "memory.max" : "memory.limit_in_bytes")).string()));
    if (limit && *limit && (best == 0 || **limit < best)) best = **limit;
  }
  return best;
}

std::string node_name() {
  if (const char* n = std::getenv("SLURMD_NODENAME"); n && *n) return n;
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  return host;
}

}  // namespace

std::int64_t epoch_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string step_cgroup_dir(bool* v2) {
  auto rel = parse_proc_cgroup_memory_path(read_small_file("/proc/self/cgroup"), v2);
  // Slurm's cgroup plugins put a step's tasks under ".../step_N/...": only then
  // is the cgroup the step's own and not one it shares with other work.
  if (!rel || rel->find("/step_") == std::string::npos) return "";
  return (*v2 ? "/sys/fs/cgroup" : "/sys/fs/cgroup/memory") + *rel;
}

int run_step(const StepOptions& options) {
  StepReport report;
  report.node = node_name();
  const char* job = std::getenv("SLURM_JOB_ID");
  const char* step = std::getenv("SLURM_STEP_ID");
  if (job && step) report.step = std::string(job) + "." + step;
  report.launched_ms = options.launched_ms;
  bool v2 = false;
  const std::string cgroup = step_cgroup_dir(&v2);
  report.source = cgroup.empty() ? "rss" : "cgroup";
  if (!cgroup.empty()) report.limit = cgroup_limit(cgroup, v2);
  if (options.argv.empty()) {
    report.error = "no program to run";
    report.done = true;
    report.exit_code = 127;
    write_step_report(options.report_path, report);
    return 127;
  }

  // The program learns whether exec worked through a close-on-exec pipe.
  int status_pipe[2];
  if (::pipe2(status_pipe, O_CLOEXEC) != 0) return 127;
  report.started_ms = epoch_ms();
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(status_pipe[0]);
    ::setpgid(0, 0);
    // If memory runs out in the step, the compiler is the one to go: the
    // wrapper must live to report what happened.
    become_oom_victim();
    std::vector<char*> args;
    for (const auto& a : options.argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execvp(args[0], args.data());
    const int err = errno;
    [[maybe_unused]] auto n = ::write(status_pipe[1], &err, sizeof err);
    ::_exit(127);
  }
  ::close(status_pipe[1]);
  if (pid < 0) {
    ::close(status_pipe[0]);
    report.error = std::string("cannot fork: ") + std::strerror(errno);
    report.done = true;
    report.exit_code = 127;
    write_step_report(options.report_path, report);
    return 127;
  }
  ::setpgid(pid, pid);
  g_child_group = pid;
  struct sigaction sa {};
  sa.sa_handler = forward;
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) ::sigaction(sig, &sa, nullptr);
  int exec_errno = 0;
  if (::read(status_pipe[0], &exec_errno, sizeof exec_errno) == sizeof exec_errno)
    report.error = "cannot run " + options.argv[0] + ": " + std::strerror(exec_errno);
  ::close(status_pipe[0]);

  auto sample = [&] {
    std::uint64_t now = 0;
    if (!cgroup.empty())
      now = cgroup_value(cgroup + (v2 ? "/memory.current" : "/memory.usage_in_bytes")).value_or(0);
    else
      now = process_group_rss("/proc", pid);
    report.usage = now;
    report.peak = std::max(report.peak, now);
  };
  int status = 0;
  for (int n = 0;; ++n) {
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid || (r < 0 && errno != EINTR)) break;
    sample();
    write_step_report(options.report_path, report);
    std::this_thread::sleep_for(std::chrono::milliseconds(options.sample_ms));
  }
  g_child_group = 0;
  if (!cgroup.empty()) {
    // The cgroup's own high-water mark catches spikes between two samples.
    report.peak =
        std::max(report.peak, cgroup_value(cgroup + (v2 ? "/memory.peak" : "/memory.max_usage_in_bytes")).value_or(0));
    report.oom_kills =
        parse_oom_kills(read_small_file(cgroup + (v2 ? "/memory.events" : "/memory.oom_control"))).value_or(0);
  }
  report.done = true;
  report.terminated = g_terminated != 0;
  if (WIFSIGNALED(status)) {
    report.signal = WTERMSIG(status);
    report.exit_code = 128 + report.signal;
  } else {
    report.exit_code = WEXITSTATUS(status);
  }
  write_step_report(options.report_path, report);
  return report.exit_code;
}

std::vector<std::string> probe_paths(const std::vector<std::string>& paths) {
  std::vector<std::string> problems;
  for (const auto& path : paths) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) {
      problems.push_back(path + ": " + std::strerror(errno));
      continue;
    }
    if (S_ISDIR(st.st_mode)) {
      // Writable as this user, really: create and remove a file.
      const std::string probe = path + "/.fad-probe-" + std::to_string(::getpid());
      int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
      if (fd < 0) {
        problems.push_back(path + ": not writable (" + std::strerror(errno) + ")");
        continue;
      }
      ::close(fd);
      ::unlink(probe.c_str());
    } else if (::access(path.c_str(), R_OK) != 0) {
      problems.push_back(path + ": not readable (" + std::strerror(errno) + ")");
    }
  }
  return problems;
}

}  // namespace fad
