// The real ProcessLauncher: Boost.Process v2 on the daemon's io_context.
#pragma once

#include <map>
#include <memory>
#include <string>

#include <boost/asio/io_context.hpp>

#include "daemon/process_launcher.h"
#include "daemon/unit_cgroup.h"

namespace fad {

class BoostLauncher final : public ProcessLauncher {
 public:
  /// `cgroups` (may be null: then memory is polled from /proc) gives each unit
  /// a memory cgroup of its own. `exec_helper`: fad-exec, through which every
  /// program starts (exec_helper.h); empty to exec programs directly, for
  /// programs fadd itself chose (srun).
  BoostLauncher(boost::asio::io_context& io, CgroupManager* cgroups, std::string exec_helper = {});
  ~BoostLauncher() override;
  Result<int> launch(const LaunchSpec& spec, std::function<void(ExitInfo)> on_exit) override;
  void signal_group(int pgid, int sig) override;
  std::uint64_t group_memory(int pgid) override;
  std::map<int, std::uint64_t> groups_memory(const std::set<int>& pgids) override;
  void adopt(int pgid) override;
  GroupAccount release(int pgid, Leftovers leftovers) override;
  bool group_alive(int pgid) override;
  bool group_stopped(int pgid) override;

 private:
  struct Child;
  /// Waits (without blocking) for child `pid` to exit; reap() collects it.
  void watch(int pid);
  void reap(int pid);
  /// The unit cgroup of group `pgid` (launched or adopted); nullptr when it has none.
  UnitCgroup* cgroup_of(int pgid);
  /// The group's usage from its unit cgroup; nullopt when it has none.
  std::optional<std::uint64_t> cgroup_memory(int pgid);
  boost::asio::io_context& io_;
  CgroupManager* cgroups_;
  std::string exec_helper_;
  int launches_ = 0;
  std::map<int, std::unique_ptr<Child>> children_;
  std::map<int, std::unique_ptr<UnitCgroup>> adopted_;
};

}  // namespace fad
