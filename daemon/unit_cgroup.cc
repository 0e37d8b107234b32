// Per-unit cgroups; see unit_cgroup.h.
#include "daemon/unit_cgroup.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <spdlog/spdlog.h>

#include "common/file_read.h"
#include "common/meminfo.h"

namespace fad {

namespace fs = std::filesystem;

namespace {
bool write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  out.flush();
  return static_cast<bool>(out);
}

std::optional<std::uint64_t> read_value(const std::string& path) {
  auto v = parse_cgroup_value(read_small_file(path));
  if (!v) return std::nullopt;
  return *v;
}

/// Whether `pid` is a running fadd (not a process that reused its number).
bool fadd_alive(int pid) {
  if (pid <= 0 || ::kill(pid, 0) != 0) return false;
  std::string comm = read_small_file("/proc/" + std::to_string(pid) + "/comm");
  while (!comm.empty() && comm.back() == '\n') comm.pop_back();
  return comm == "fadd";
}

/// The pids in a cgroup's cgroup.procs.
std::vector<int> listed_pids(const fs::path& dir) {
  const std::string procs = read_small_file((dir / "cgroup.procs").string());
  std::vector<int> pids;
  for (std::size_t pos = 0; pos < procs.size();) {
    const auto end = procs.find('\n', pos);
    const int pid = std::atoi(procs.substr(pos, end - pos).c_str());
    if (pid > 1) pids.push_back(pid);
    if (end == std::string::npos) break;
    pos = end + 1;
  }
  return pids;
}

/// SIGKILLs each process listed in a cgroup's cgroup.procs; returns how many.
std::size_t kill_listed(const fs::path& dir) {
  std::size_t killed = 0;
  for (int pid : listed_pids(dir))
    if (::kill(pid, SIGKILL) == 0) ++killed;
  return killed;
}

/// Kills every process of a unit cgroup and removes it. The kernel empties a
/// cgroup as its processes die; this waits a short while for that.
void kill_unit_cgroup(const fs::path& dir) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (kill_listed(dir) > 0 && std::chrono::steady_clock::now() < deadline) ::usleep(10000);
  ::rmdir(dir.c_str());
}

/// Compilers a dead fadd left in its fad-units-PID cgroup (a kill -9 leaves
/// nvcc's children running: only nvcc itself gets the parent-death signal)
/// are killed, and its cgroups removed. External compiles (ext-*) belong to
/// their launchers, which still wait for them: left alone, removed once empty.
void clean_leftover_units(const std::string& own) {
  std::error_code ec;
  for (fs::directory_iterator it(own, ec), end; !ec && it != end; it.increment(ec)) {
    const auto name = it->path().filename().string();
    if (name.rfind("fad-units-", 0) != 0) continue;
    const auto pid = std::atoi(name.c_str() + 10);
    if (pid <= 0 || pid == ::getpid() || fadd_alive(pid)) continue;
    std::error_code uec;
    for (fs::directory_iterator unit(it->path(), uec), uend; !uec && unit != uend; unit.increment(uec)) {
      if (!unit->is_directory()) continue;
      if (const auto what = unit->path().filename().string();
          what.rfind("unit-", 0) == 0 || what.rfind("probe-", 0) == 0) {
        const std::string procs = read_small_file((unit->path() / "cgroup.procs").string());
        if (!procs.empty()) spdlog::warn("killing compilers left in {} by a previous fadd", unit->path().string());
        kill_unit_cgroup(unit->path());
      } else {
        ::rmdir(unit->path().c_str());
      }
    }
    ::rmdir(it->path().c_str());
  }
}
}  // namespace

UnitCgroup::UnitCgroup(std::string dir, bool v2, int procs_fd) : dir_(std::move(dir)), v2_(v2), procs_fd_(procs_fd) {}

UnitCgroup::~UnitCgroup() {
  close_procs_fd();
  // Empty once the unit's processes are gone; the kernel moves any remaining
  // page-cache charge to the parent. Processes just killed (kill_remaining)
  // leave it within moments: a few short tries, only then (a launcher's
  // compile that lives on keeps its cgroup, and must not hold the loop).
  for (int tries = 0; ::rmdir(dir_.c_str()) != 0 && errno == EBUSY && killed_ && tries < 20; ++tries) ::usleep(2000);
}

std::size_t UnitCgroup::kill_remaining() {
  const std::size_t n = kill_listed(dir_);
  killed_ |= n > 0;
  return n;
}

std::vector<int> UnitCgroup::pids() const { return listed_pids(dir_); }

void UnitCgroup::close_procs_fd() {
  if (procs_fd_ >= 0) ::close(procs_fd_);
  procs_fd_ = -1;
}

std::optional<std::uint64_t> UnitCgroup::usage() const {
  return read_value(dir_ + (v2_ ? "/memory.current" : "/memory.usage_in_bytes"));
}

std::optional<std::uint64_t> UnitCgroup::peak() const {
  return read_value(dir_ + (v2_ ? "/memory.peak" : "/memory.max_usage_in_bytes"));
}

std::optional<std::uint64_t> UnitCgroup::oom_kills() const {
  return parse_oom_kills(read_small_file(dir_ + (v2_ ? "/memory.events" : "/memory.oom_control")));
}

std::unique_ptr<CgroupManager> CgroupManager::detect(std::string* why) {
  bool v2 = false;
  auto rel = parse_proc_cgroup_memory_path(read_small_file("/proc/self/cgroup"), &v2);
  if (!rel) {
    *why = "no memory cgroup in /proc/self/cgroup";
    return nullptr;
  }
  const std::string own = (v2 ? "/sys/fs/cgroup" : "/sys/fs/cgroup/memory") + (*rel == "/" ? "" : *rel);
  std::error_code ec;
  if (!v2) {
    // v1: a sibling directory per fadd under fadd's own memory cgroup, so a
    // limit set on that cgroup (a WSL-sized box, a container) still applies.
    // Directories of earlier fadds that died without cleaning up go first,
    // with the compilers they left.
    clean_leftover_units(own);
    const std::string base = own + "/fad-units-" + std::to_string(::getpid());
    fs::create_directories(base, ec);
    if (ec) {
      *why = "cannot create " + base + ": " + ec.message();
      return nullptr;
    }
    write_file(base + "/memory.use_hierarchy", "1");
    return std::unique_ptr<CgroupManager>(new CgroupManager(base, false));
  }
  // v2: children may only use memory if the parent delegates it, and a cgroup
  // that delegates may hold no processes: move fadd into a leaf "fadd" first.
  const std::string controllers = read_small_file(own + "/cgroup.controllers");
  if (controllers.find("memory") == std::string::npos) {
    *why = "the memory controller is not available in " + own + " (systemd: Delegate=memory)";
    return nullptr;
  }
  if (read_small_file(own + "/cgroup.subtree_control").find("memory") == std::string::npos) {
    const std::string leaf = own + "/fadd";
    fs::create_directories(leaf, ec);
    if (ec || !write_file(leaf + "/cgroup.procs", std::to_string(::getpid())) ||
        !write_file(own + "/cgroup.subtree_control", "+memory")) {
      *why = "cannot delegate memory below " + own + " (run fadd with systemd Delegate=memory, or as root)";
      return nullptr;
    }
  }
  const std::string base = own + "/units";
  fs::create_directories(base, ec);
  if (ec || !write_file(base + "/cgroup.subtree_control", "+memory")) {
    *why = "cannot create " + base;
    return nullptr;
  }
  return std::unique_ptr<CgroupManager>(new CgroupManager(base, true));
}

CgroupManager::~CgroupManager() {
  if (!v2_) ::rmdir(base_.c_str());
}

Status CgroupManager::set_limit(std::uint64_t high, std::uint64_t max) {
  auto set = [&](const std::string& file, std::uint64_t value) -> Status {
    if (!write_file(base_ + "/" + file, std::to_string(value)))
      return make_error("cannot write " + std::to_string(value) + " to " + base_ + "/" + file);
    return ok_status();
  };
  if (!v2_) return set("memory.limit_in_bytes", max);
  if (Status s = set("memory.max", max); !s) return s;
  return set("memory.high", high);
}

Result<std::unique_ptr<UnitCgroup>> CgroupManager::create(const std::string& name) {
  const std::string dir = base_ + "/" + name;
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST)
    return make_error("cannot create cgroup " + dir + ": " + std::strerror(errno));
  int fd = ::open((dir + "/cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) {
    ::rmdir(dir.c_str());
    return make_error("cannot open " + dir + "/cgroup.procs: " + std::strerror(errno));
  }
  return std::make_unique<UnitCgroup>(dir, v2_, fd);
}

}  // namespace fad
