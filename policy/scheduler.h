// The memory-budget scheduler: the policy at the heart of fad. Pure code: it is
// handed the time, a memory snapshot, the queue and the running units, and returns
// decisions. No clock, no /proc, no processes: the daemon's event loop feeds it
// and carries its decisions out; tests and the simulator (bench/) drive the very
// same code with fake time and memory.
//
// One decision is four named steps, each in its own file:
//   capacity.cc   what fad may hold now, and whether memory is under pressure
//   pressure.cc   under pressure: suspend, stop and requeue (with the progress rule)
//   resume.cc     suspended units resume first, when they fit again
//   admission.cc  start queued units (longest first within a build, EASY backfill,
//                 per-build budgets, nvcc threads)
#pragma once

#include <algorithm>
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
  /// What that cgroup holds now, fad's units included, without the page cache
  /// the kernel can drop (usage minus inactive file pages).
  std::uint64_t cgroup_usage = 0;
  std::optional<double> psi_some_avg10;  ///< nullopt where the kernel has no PSI (WSL)

  /// The memory a reserve is a share of: the machine's, or its cgroup's
  /// limit where that is lower.
  std::uint64_t basis() const { return cgroup_limit ? std::min(total, *cgroup_limit) : total; }
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

/// A unit waiting to run. The queue comes in priority order between builds
/// (the daemon passes oldest build first; a fair-share ordering may interleave
/// builds): the scheduler keeps each build's places in that order and only
/// reorders units within a build (longest predicted first).
struct QueuedUnit {
  std::int64_t id = 0;
  std::int64_t build_id = 0;
  UnitKey key;
  std::optional<ManifestPrior> manifest_prior;
  /// Observed peak from an attempt that was stopped under pressure: the
  /// estimate is never below it.
  std::uint64_t requeued_peak = 0;
  /// Stopped as the last running unit while the machine was short: it runs
  /// before anything else, alone, once the machine has its requeued_peak free.
  bool alone = false;
  /// Bytes of the unit's source file: a cheap tie-break for never-seen units
  /// (a bigger source is taken to compile longer).
  std::uint64_t source_bytes = 0;
};

/// A unit that the daemon is running (or has suspended, or the user paused).
struct RunningUnit {
  std::int64_t id = 0;
  double started_at = 0;  ///< seconds, same clock as `now`
  int threads = 1;
  Profile predicted;                ///< the estimate it was started with
  std::uint64_t current_bytes = 0;  ///< measured now over its process tree
  std::uint64_t peak_bytes = 0;     ///< measured peak so far
  bool suspended = false;           ///< by the scheduler, under memory pressure
  double suspended_at = 0;
  bool guess = false;  ///< admitted on the flat prior: nothing known about it
  std::int64_t build_id = 0;
  int arch_count = 1;  ///< archs it compiles: with fewer threads, one spike per turn
  /// Spikes it has come down from (summarize_spikes over its measured memory,
  /// spikes of at least a quarter of its predicted peak); once every turn's
  /// spike is behind it, the rest of it is predicted at its plateau.
  int spikes_seen = 0;
  std::uint64_t since_spike_bytes = 0;  ///< highest measured since its last spike
  /// Frozen by the user (fad pause): holds its memory until resumed, but no
  /// core, never blocks admission and is never stopped for pressure.
  bool paused = false;
  /// Seconds it was frozen (suspended or paused) between started_at and its
  /// current suspension or pause, if any: not part of its age.
  double frozen_s = 0;
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
  /// start: where the estimate came from.
  EstimateSource source = EstimateSource::prior;
  bool imported = false;          ///< start: the estimate rests on imported history only
  bool duration_guessed = false;  ///< start: its predicted duration is a guess (Estimate::duration_guessed)
  /// requeue: the unit was the last one running; it must rerun alone (QueuedUnit::alone).
  bool alone = false;
};

/// What the scheduler expects of a queued unit if it started now (at the
/// fewest threads it may get): for progress displays and `fad status`.
struct Forecast {
  std::uint64_t peak_bytes = 0;
  double duration_s = 0;
  EstimateSource source = EstimateSource::prior;
  bool imported = false;
  bool duration_guessed = false;  ///< Estimate::duration_guessed
};

struct SchedulePlan {
  std::vector<Decision> decisions;
  /// For every queued unit not started: why ("needs 4.0 GiB, 2.1 GiB free").
  std::map<std::int64_t, std::string> wait_reasons;
  /// For every queued unit: its current estimate.
  std::map<std::int64_t, Forecast> forecasts;
  /// Bytes fad may use in total now (budget after reserve and other processes).
  std::uint64_t capacity = 0;
  /// Bytes the running units are predicted to need (max over their remaining profiles).
  /// Units this plan starts or resumes are included.
  std::uint64_t committed = 0;
};

/// The hard cap under all of fad's units together, for their parent cgroup
/// where fadd can make one: a wrong estimate can then only get a fad unit
/// OOM-killed (and rerun), never the host or other users' processes.
struct UnitsLimit {
  std::uint64_t high = 0;  ///< the budget: above it the kernel throttles and reclaims (cgroup v2 memory.high)
  std::uint64_t max = 0;   ///< above it the OOM killer ends a fad unit (v2 memory.max, v1 limit_in_bytes)
};

/// The budget (configured, else the memory less the reserve) as `high`, plus
/// half the reserve as `max`: the scheduler's own response to growth (suspend,
/// stop) gets that room to act before the kernel does, and half the reserve
/// stays untouched by fad's units. Neither exceeds the memory (or fadd's
/// cgroup limit) less half the reserve.
UnitsLimit units_memory_limit(const SchedulerConfig& config, const MemorySnapshot& memory);

class Scheduler {
 public:
  Scheduler(SchedulerConfig config, const Estimator& estimator);

  /// Decides what to start, suspend, resume or stop-and-requeue now.
  /// `build_budgets` caps what each listed build's units may hold together
  /// (fad run --budget); a build's first unit always may start.
  /// Progress rules: when nothing runs, the first queued unit starts even if
  /// its estimate exceeds the capacity (it runs alone; the reason says so).
  /// Under pressure nothing starts; the newest running unit is suspended first,
  /// and a unit suspended longer than suspend_grace_s is requeued. The oldest
  /// is touched only when it is the last one running and the machine itself
  /// (not fad's budget) is short of what it holds: it is then suspended, and
  /// after the grace requeued to rerun alone (QueuedUnit::alone). When the
  /// OOM killer is near (Pressure::critical), the newest unit but the oldest
  /// is requeued at once, without a grace.
  /// `hold`, when not empty, is why no unit may start now for a reason other
  /// than memory (the daemon could not record a start: a full disk). Running
  /// units are still suspended, resumed and stopped as memory requires, and
  /// every queued unit waits with `hold` as its reason, none with a reason
  /// about cores or memory that starts planned and not carried out would give.
  SchedulePlan decide(double now, const MemorySnapshot& memory, const std::vector<QueuedUnit>& queue,
                      const std::vector<RunningUnit>& running,
                      const std::map<std::int64_t, std::uint64_t>& build_budgets = {}, const std::string& hold = {});

  const SchedulerConfig& config() const { return config_; }
  /// When a unit was last stopped because the OOM killer was near; carried
  /// between the per-node schedulers a Slurm allocation creates every tick.
  double last_critical_stop() const { return last_critical_stop_; }
  void set_last_critical_stop(double at) { last_critical_stop_ = at; }

 private:
  SchedulerConfig config_;
  const Estimator& estimator_;
  double last_critical_stop_ = -1e9;
};

}  // namespace fad
