// Reads the machine's memory state: /proc/meminfo, PSI, and the limit of the
// cgroup fadd runs in (a container, a systemd slice, or a cgroup standing in
// for a WSL VM). Behind an interface so the daemon loop runs on fake memory in tests.
#pragma once

#include <string>

#include "common/file_read.h"
#include "policy/scheduler.h"

namespace fad {

class MemoryProbe {
 public:
  virtual ~MemoryProbe() = default;
  /// A fresh snapshot. Missing optional sources (PSI, cgroup) are left empty.
  virtual MemorySnapshot sample() = 0;
};

/// Reads the real files under `root` ("/" normally; a fixture tree in tests).
class ProcMemoryProbe final : public MemoryProbe {
 public:
  explicit ProcMemoryProbe(std::string root = "/");
  MemorySnapshot sample() override;

 private:
  std::string root_;
  std::string cgroup_dir_;  ///< resolved once: fadd does not move between cgroups
  bool cgroup_v2_ = false;
};

}  // namespace fad
