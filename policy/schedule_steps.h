// The steps of one scheduling decision (see scheduler.h), shared by the files
// that implement them. Internal to the policy library: the daemon and the
// simulator only call Scheduler::decide.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "policy/scheduler.h"

namespace fad::steps {

/// Far enough in the future to mean "until further notice".
inline constexpr double kForever = 1e9;

inline std::uint64_t sub_sat(std::uint64_t a, std::uint64_t b) { return a > b ? a - b : 0; }

/// What fad may hold now.
struct Capacity {
  /// What admission plans within: the machine's share for fad, capped by the configured budget.
  std::uint64_t capacity = 0;
  /// What the machine itself leaves fad (no configured budget): MemTotal, the
  /// cgroup's limit less what others in it hold, MemAvailable plus fad's own
  /// usage, each less the reserve.
  std::uint64_t machine = 0;
  std::uint64_t reserve = 0;
  std::uint64_t available = 0;  ///< MemAvailable (+ free swap with swap: use)
  std::uint64_t fad_usage = 0;  ///< measured over all of fad's units, paused ones included
  std::uint64_t paused = 0;     ///< of which units the user paused hold
};

Capacity measure_capacity(const SchedulerConfig& config, const MemorySnapshot& memory,
                          const std::vector<RunningUnit>& running);

struct Pressure {
  bool active = false;
  /// The machine itself is short (not only fad's budget): the condition under
  /// which even the last running unit may be stopped.
  bool machine_short = false;
  /// The kernel's OOM killer is moments away: fad's units, or fadd's cgroup,
  /// within a quarter of the reserve of their hard limit, or less than half
  /// the reserve left in memory and swap. Freezing frees nothing then; the
  /// newest unit is stopped at once.
  bool critical = false;
  std::string why;  ///< e.g. "memory pressure (PSI 25%)"
  /// What a queued unit waits for meanwhile, in a user's words: the machine's
  /// pressure, or fad's own units past their budget (the machine may be idle).
  std::string wait_reason;
};

Pressure detect_pressure(const SchedulerConfig& config, const MemorySnapshot& memory, const Capacity& capacity);

/// Under pressure: suspend, or stop and requeue, at most one unit per call.
/// `last_critical_stop` is when a unit was last stopped for critical pressure
/// (updated here): a stopped unit leaves the running list before its memory is
/// freed, so the next stop waits for the monitor to show the effect.
void respond_to_pressure(const SchedulerConfig& config, double now, const Pressure& pressure,
                         const std::vector<RunningUnit>& running, double& last_critical_stop, SchedulePlan& plan);

/// What a running (or suspended, as if resumed now) unit is predicted to use
/// from now on, time relative to now, corrected by what it measures.
Profile remaining(const RunningUnit& unit, double now);

/// A constant profile of `threads` cores for `duration` seconds.
Profile flat_threads(int threads, double duration);

/// The predicted load of the active units (not suspended, not paused) from now on.
struct Load {
  Profile memory;
  Profile cpu;
  int count = 0;                             ///< units counted against max_parallel_units (suspended included)
  std::map<std::int64_t, Profile> by_build;  ///< memory per build (for per-build budgets)
  /// When the first unit running past its predicted end is assumed to end
  /// (a guess re-made each decision, so a start that waits for it is not
  /// known); kForever: none runs past its prediction.
  double first_overrun_end = kForever;
};

Load running_load(const std::vector<RunningUnit>& running, double now);

/// Resumes suspended units oldest first while they fit. Returns false when some
/// stay suspended: nothing new may start before them (their memory is frozen
/// and they were admitted first).
bool resume_suspended(double now, std::uint64_t capacity, const std::vector<RunningUnit>& running, Load& load,
                      SchedulePlan& plan);

struct AdmissionInput {
  double now = 0;
  const Capacity* capacity = nullptr;
  std::uint64_t admit_capacity = 0;  ///< capacity less what paused units hold
  const std::vector<QueuedUnit>* queue = nullptr;
  const std::vector<RunningUnit>* running = nullptr;
  const std::map<std::int64_t, std::uint64_t>* build_budgets = nullptr;
};

/// Fills plan.forecasts: every queued unit's estimate at its fewest threads.
void forecast(const SchedulerConfig& config, const Estimator& estimator, const std::vector<QueuedUnit>& queue,
              const std::vector<RunningUnit>& running, SchedulePlan& plan);

/// Starts queued units that fit, in priority order with EASY backfill; also
/// fills plan.forecasts.
void admit(const SchedulerConfig& config, const Estimator& estimator, const AdmissionInput& in, Load& load,
           SchedulePlan& plan);

}  // namespace fad::steps
