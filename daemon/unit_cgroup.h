// Per-unit memory cgroups: the exact memory of a unit's whole process tree
// (nvcc, cicc, ptxas, cc1plus, and the page cache of the files they write),
// including peaks between two polls, which /proc sampling misses. Used where
// fadd may create cgroups: cgroup v1's memory controller (root), or a cgroup v2
// subtree delegated to fadd (systemd Delegate=memory). Elsewhere fadd falls
// back to summing VmRSS over the unit's process group.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"

namespace fad {

/// One unit's cgroup. The child process joins it between fork and exec by
/// writing its pid to procs_fd().
class UnitCgroup {
 public:
  UnitCgroup(std::string dir, bool v2, int procs_fd);
  ~UnitCgroup();
  UnitCgroup(const UnitCgroup&) = delete;
  UnitCgroup& operator=(const UnitCgroup&) = delete;

  int procs_fd() const { return procs_fd_; }
  /// Closes the fd the child used to join (after launch).
  void close_procs_fd();
  /// SIGKILLs every process still in the cgroup and returns how many: what
  /// its program left running when it exited (a setsid'd child outlives its
  /// process group, not its cgroup), as Slurm ends a step's every process.
  std::size_t kill_remaining();
  /// The processes in the cgroup now (cgroup.procs): its whole tree, setsid
  /// children too.
  std::vector<int> pids() const;
  /// Bytes charged to the cgroup now.
  std::optional<std::uint64_t> usage() const;
  /// Highest charge since creation (v1 max_usage_in_bytes, v2 memory.peak).
  std::optional<std::uint64_t> peak() const;
  /// Processes of this unit the kernel's OOM killer ended (v1
  /// memory.oom_control, v2 memory.events): the unit did not fail, it was
  /// starved, whichever cgroup above it ran out.
  std::optional<std::uint64_t> oom_kills() const;
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
  bool v2_;
  int procs_fd_;
  bool killed_ = false;  ///< kill_remaining() found processes: they are on their way out
};

class CgroupManager {
 public:
  /// Finds where fadd may create unit cgroups, preparing a v2 subtree if it
  /// must (fadd moves itself into a leaf so its parent can delegate memory).
  /// Returns nullptr and sets `why` when per-unit cgroups are not possible.
  static std::unique_ptr<CgroupManager> detect(std::string* why);

  /// Removes the (then empty) base cgroup.
  ~CgroupManager();

  /// Caps what all units together may hold (see units_memory_limit): v1
  /// memory.limit_in_bytes of the base cgroup, v2 memory.high and memory.max
  /// of the units subtree. The error says what the kernel refused.
  Status set_limit(std::uint64_t high, std::uint64_t max);

  /// Creates the cgroup for one unit attempt.
  Result<std::unique_ptr<UnitCgroup>> create(const std::string& name);
  const std::string& base() const { return base_; }
  bool v2() const { return v2_; }

 private:
  CgroupManager(std::string base, bool v2) : base_(std::move(base)), v2_(v2) {}
  std::string base_;
  bool v2_;
};

}  // namespace fad
