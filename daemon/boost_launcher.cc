// Starting compilers with Boost.Process v2; see boost_launcher.h.
#include "daemon/boost_launcher.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/post.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/process/v2/process.hpp>
#include <boost/process/v2/stdio.hpp>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include <spdlog/spdlog.h>

#include "common/process_exists.h"
#include "daemon/child_environment.h"
#include "daemon/child_setup.h"
#include "daemon/exec_helper.h"

namespace fad {

namespace asio = boost::asio;
namespace bp = boost::process::v2;

struct BoostLauncher::Child {
  std::unique_ptr<UnitCgroup> cgroup;
  std::function<void(ExitInfo)> on_exit;
  std::unique_ptr<asio::posix::stream_descriptor> pidfd;  ///< readable once the process exits
  std::unique_ptr<asio::steady_timer> timer;              ///< polling, where pidfd_open is missing
};

BoostLauncher::BoostLauncher(boost::asio::io_context& io, CgroupManager* cgroups, std::string exec_helper)
    : io_(io), cgroups_(cgroups), exec_helper_(std::move(exec_helper)) {}

BoostLauncher::~BoostLauncher() {
  for (auto& [pgid, child] : children_) ::kill(-pgid, SIGKILL);
  for (auto& [pgid, child] : children_) ::waitpid(pgid, nullptr, 0);
}

Result<int> BoostLauncher::launch(const LaunchSpec& spec, std::function<void(ExitInfo)> on_exit) {
  if (spec.argv.empty()) return make_error("empty command");
  std::error_code fs_ec;
  std::filesystem::create_directories(std::filesystem::path(spec.log_path).parent_path(), fs_ec);
  // Close-on-exec: the compiler gets it as its stdout and stderr only.
  const int log = ::open(spec.log_path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (log < 0) return make_error("cannot open log file " + spec.log_path + ": " + std::strerror(errno));
  std::unique_ptr<UnitCgroup> cgroup;
  if (cgroups_) {
    auto cg = cgroups_->create("unit-" + std::to_string(spec.unit_id) + "-" + std::to_string(++launches_));
    if (cg) cgroup = std::move(*cg);  // else: measured by polling, like without cgroups
  }
  // Through fad-exec: Boost waits until its child has exec'd, and a compiler
  // on a hung filesystem must not hold fadd there (exec_helper.h).
  const auto argv = through_exec_helper(exec_helper_, spec.argv);
  std::vector<std::string> args(argv.begin() + 1, argv.end());
  boost::system::error_code ec;
  // The unit's process group, cgroup, owner, parent-death signal and OOM
  // score are set in the child before exec (child_setup.h).
  ChildSetup setup;
  setup.parent = ::getpid();
  setup.cgroup_procs_fd = cgroup ? cgroup->procs_fd() : -1;
  setup.run_as = spec.run_as ? &*spec.run_as : nullptr;
  setup.raise_oom_score = true;
  setup.max_file_bytes = spec.max_file_bytes;
  // The launcher's error_code overload: basic_process's constructor would throw.
  // stdin from our own /dev/null, close-on-exec (Boost's nullptr binding opens one without).
  const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  const ChildEnvironment env(setup.run_as, spec.temp_dir);
  bp::default_process_launcher launcher;
  launcher.env = env.envp();
  bp::process proc = launcher(io_.get_executor(), ec, bp::filesystem::path(argv[0]), args,
                              bp::process_stdio{null_fd, log, log}, setup);
  if (null_fd >= 0) ::close(null_fd);
  ::close(log);
  if (cgroup) cgroup->close_procs_fd();
  if (ec)
    return make_error("cannot start " + spec.argv[0] + (exec_helper_.empty() ? "" : " (through " + exec_helper_ + ")") +
                      ": " + ec.message());
  const int pid = proc.id();
  ::setpgid(pid, pid);  // also from this side, so a signal sent right away reaches the group
  // fad reaps its children itself: Boost.Process 1.81's async_wait falls into a
  // blocking wait4() when its pidfd reports ready early, which froze the whole
  // event loop until that unit ended.
  proc.detach();
  children_.emplace(pid, std::make_unique<Child>(Child{std::move(cgroup), std::move(on_exit), nullptr, nullptr}));
  watch(pid);
  return pid;
}

void BoostLauncher::watch(int pid) {
  auto it = children_.find(pid);
  if (it == children_.end()) return;
  Child& c = *it->second;
  if (!c.pidfd && !c.timer) {
    const int fd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
    if (fd >= 0)
      c.pidfd = std::make_unique<asio::posix::stream_descriptor>(io_, fd);
    else
      c.timer = std::make_unique<asio::steady_timer>(io_);
  }
  auto next = [this, pid](boost::system::error_code ec) {
    if (ec != asio::error::operation_aborted) reap(pid);
  };
  if (c.pidfd) {
    c.pidfd->async_wait(asio::posix::descriptor_base::wait_read, next);
  } else {
    c.timer->expires_after(std::chrono::milliseconds(100));
    c.timer->async_wait(next);
  }
}

void BoostLauncher::reap(int pid) {
  int status = 0;
  const pid_t r = ::waitpid(pid, &status, WNOHANG);
  if (r == 0) {
    watch(pid);  // woken without an exit: wait again, never block the loop
    return;
  }
  auto it = children_.find(pid);
  if (it == children_.end()) return;
  ExitInfo info;
  if (r < 0) {
    info.exit_code = -1;
  } else if (WIFSIGNALED(status)) {
    info.signaled = true;
    info.exit_code = 128 + WTERMSIG(status);
  } else {
    info.exit_code = WEXITSTATUS(status);
  }
  if (const auto& cg = it->second->cgroup) {
    info.peak_bytes = cg->peak().value_or(0);
    info.oom_killed = cg->oom_kills().value_or(0) > 0;
    // Its memory would be no unit's, outside the budget, for as long as it
    // liked: the unit ends with its compiler.
    if (const auto left = cg->kill_remaining())
      spdlog::warn("killed {} process(es) that the compiler of process group {} left running when it exited", left,
                   pid);
  }
  auto on_exit = std::move(it->second->on_exit);
  // Destroyed later: we are inside a handler of its own descriptor or timer.
  asio::post(io_, [this, pid] { children_.erase(pid); });
  on_exit(info);
}

void BoostLauncher::signal_group(int pgid, int sig) {
  if (pgid > 1) ::kill(-pgid, sig);  // never kill(0) or kill(-1): that would hit fadd or everything
}

UnitCgroup* BoostLauncher::cgroup_of(int pgid) {
  if (auto it = children_.find(pgid); it != children_.end() && it->second->cgroup) return it->second->cgroup.get();
  if (auto it = adopted_.find(pgid); it != adopted_.end()) return it->second.get();
  return nullptr;
}

std::optional<std::uint64_t> BoostLauncher::cgroup_memory(int pgid) {
  if (auto* cg = cgroup_of(pgid)) return cg->usage();
  return std::nullopt;
}

std::uint64_t BoostLauncher::group_memory(int pgid) {
  if (auto usage = cgroup_memory(pgid)) return *usage;
  return process_group_rss("/proc", pgid);
}

std::map<int, std::uint64_t> BoostLauncher::groups_memory(const std::set<int>& pgids) {
  std::map<int, std::uint64_t> bytes;
  std::set<int> polled;
  for (int pgid : pgids) {
    if (auto usage = cgroup_memory(pgid))
      bytes[pgid] = *usage;
    else
      polled.insert(pgid);
  }
  bytes.merge(process_groups_rss("/proc", polled));
  return bytes;
}

bool BoostLauncher::group_alive(int pgid) { return group_exists(pgid); }

bool BoostLauncher::group_stopped(int pgid) {
  // The cgroup knows every process of the unit, those that left its group too.
  if (auto* cg = cgroup_of(pgid)) return processes_stopped("/proc", pgid, cg->pids());
  return ProcessLauncher::group_stopped(pgid);
}

void BoostLauncher::adopt(int pgid) {
  if (!cgroups_ || adopted_.count(pgid)) return;
  auto cg = cgroups_->create("ext-" + std::to_string(pgid) + "-" + std::to_string(++launches_));
  if (!cg) return;  // measured by polling instead
  const std::string pid = std::to_string(pgid);
  // The launcher holds its compiler before exec until this returns, so the
  // whole tree starts inside the cgroup.
  if (::write((*cg)->procs_fd(), pid.data(), pid.size()) < 0) return;
  (*cg)->close_procs_fd();
  adopted_.emplace(pgid, std::move(*cg));
}

GroupAccount BoostLauncher::release(int pgid, Leftovers leftovers) {
  auto it = adopted_.find(pgid);
  if (it == adopted_.end()) return {};
  GroupAccount account{it->second->peak().value_or(0), it->second->oom_kills().value_or(0) > 0};
  // Left in fad's units cgroup, they would hold memory under its limit that
  // no unit accounts for, and other users' compiles would be OOM-killed.
  if (leftovers == Leftovers::kill)
    if (const auto left = it->second->kill_remaining())
      spdlog::warn("killed {} process(es) that the launched compile of process group {} left running", left, pgid);
  adopted_.erase(it);
  return account;
}

}  // namespace fad
