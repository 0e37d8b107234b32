// The memory-budget scheduler: the policy at the heart of fad. Pure code: it is
// handed the time, a memory snapshot, the queue and the running units, and returns
// decisions. No clock, no /proc, no processes: the daemon's event loop feeds it
// and carries its decisions out; tests and the simulator (bench/) drive the very
// same code with fake time and memory.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/config.h"
#include "policy/estimator.h"

namespace fad {

/// The machine's memory as the monitor last saw it.
struct MemorySnapshot {
  std::uint64_t total = 0;      ///< MemTotal (or the cgroup limit, if lower, is in cgroup_limit)
  std::uint64_t available = 0;  ///< MemAvailable
  std::uint64_t swap_total = 0;
  std::uint64_t swap_free = 0;
  std::optional<std::uint64_t> cgroup_limit;  ///< limit of the cgroup fadd runs in
  std::uint64_t cgroup_usage = 0;
  std::optional<double> psi_some_avg10;  ///< nullopt where the kernel has no PSI (WSL)
};

struct SchedulerConfig {
  std::optional<std::uint64_t> budget;  ///< memory_budget; nullopt = "auto" (machine headroom only)
  Reserve reserve;
  bool swap_use = false;
  int max_parallel_units = 0;  ///< 0 = no cap
  int nvcc_threads = 0;        ///< 0 = "auto": chosen per unit; else fixed
  int cores = 1;               ///< CPU cores: caps running units' total threads
  /// Seconds a unit stays suspended under pressure before it is stopped and requeued.
  double suspend_grace_s = 10;
  /// PSI some avg10 (percent) above which memory counts as under pressure.
  double psi_threshold = 10;
};

/// A unit waiting to run, in queue order (the daemon passes oldest build first).
struct QueuedUnit {
  std::int64_t id = 0;
  std::int64_t build_id = 0;
  UnitKey key;
  std::optional<ManifestPrior> manifest_prior;
  /// Observed peak from an attempt that was stopped under pressure: the
  /// estimate is never below it.
  std::uint64_t requeued_peak = 0;
};

/// A unit that the daemon is running (or has suspended).
struct RunningUnit {
  std::int64_t id = 0;
  double started_at = 0;  ///< seconds, same clock as `now`
  int threads = 1;
  Profile predicted;                ///< the estimate it was started with
  std::uint64_t current_bytes = 0;  ///< measured now over its process tree
  std::uint64_t peak_bytes = 0;     ///< measured peak so far
  bool suspended = false;
  double suspended_at = 0;
  bool guess = false;  ///< admitted on the flat prior: nothing known about it
};

struct Decision {
  enum class Kind { start, suspend, resume, requeue };
  Kind kind = Kind::start;
  std::int64_t unit = 0;
  int threads = 1;                   ///< start: nvcc --threads
  Profile predicted;                 ///< start: the profile it was admitted with
  std::uint64_t estimate_bytes = 0;  ///< start: predicted peak
  std::string reason;                ///< human-readable, logged by the daemon
  bool guess = false;                ///< start: estimated from the flat prior (carry into RunningUnit)
};

struct SchedulePlan {
  std::vector<Decision> decisions;
  /// For every queued unit not started: why ("needs 4.0 GiB, 2.1 GiB free").
  std::map<std::int64_t, std::string> wait_reasons;
  /// Bytes fad may use in total now (budget after reserve and other processes).
  std::uint64_t capacity = 0;
  /// Bytes the running units are predicted to need (max over their remaining profiles).
  /// Units this plan starts or resumes are included.
  std::uint64_t committed = 0;
};

class Scheduler {
 public:
  Scheduler(SchedulerConfig config, const Estimator& estimator);

  /// Decides what to start, suspend, resume or stop-and-requeue now.
  /// Progress rule: when nothing runs, the first queued unit starts even if its
  /// estimate exceeds the capacity (it runs alone; the reason says so).
  /// Under pressure it never starts units, suspends the newest running unit
  /// first, requeues a unit suspended longer than suspend_grace_s if pressure
  /// persists, and never suspends or stops the oldest running unit.
  SchedulePlan decide(double now, const MemorySnapshot& memory, const std::vector<QueuedUnit>& queue,
                      const std::vector<RunningUnit>& running);

  const SchedulerConfig& config() const { return config_; }

 private:
  SchedulerConfig config_;
  const Estimator& estimator_;
};

}  // namespace fad
