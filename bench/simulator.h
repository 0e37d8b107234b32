// A discrete-event (fixed-step) simulator of a CUDA kernel build: units with
// true memory profiles run on a machine with some cores and memory, under a
// policy: a fixed job count and nvcc thread count, one of the launchers a user
// could pick instead of fad, or fad's own Scheduler + Estimator (the very code
// the daemon runs, fed fake time and memory, the estimator learning from
// running and finished units). Pure: no clock, no I/O.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "policy/estimator.h"
#include "policy/profile.h"

namespace fad::sim {

/// A compile unit as it really behaves.
struct SimUnit {
  UnitKey key;
  Profile truth;  ///< true memory over time when run with `truth_threads`
  int truth_threads = 1;
};

/// A measured trace that workloads are built from.
struct Trace {
  Profile profile;
  int threads = 1;
  int arch_count = 1;
};

struct Machine {
  int cores = 16;
  std::uint64_t memory = 64ull << 30;
};

enum class PolicyKind {
  fixed_jobs,     ///< N jobs at T nvcc threads (ninja -j, MAX_JOBS; a pool sized memory / peak)
  mem_available,  ///< start the next compile while MemAvailable > threshold (one start per second)
  pause_retry,    ///< start up to the cores; above 85% memory suspend the newest, above 95%
                  ///< cancel it and retry it later (the BuildXL / Buck2 approach)
  fad,
};

struct Policy {
  PolicyKind kind = PolicyKind::fad;
  std::string name;
  int jobs = 0;                 ///< fixed_jobs: N
  int threads = 1;              ///< nvcc --threads for every policy but fad
  std::uint64_t threshold = 0;  ///< mem_available: start while available > threshold
  int fad_threads = 0;          ///< fad: the nvcc_threads config key (0: fad chooses per unit)
};

struct SimResult {
  bool finished = true;  ///< false: some unit was OOM-killed more than kMaxReruns times
  double makespan_s = 0;
  std::uint64_t peak_bytes = 0;  ///< highest true memory in use
  int oom_kills = 0;             ///< units killed because memory ran out
  double over_capacity_s = 0;    ///< seconds with true use above memory - 10% reserve
  double mean_utilisation = 0;   ///< mean true use / memory over the makespan
  int suspends = 0;
  int requeues = 0;  ///< fad: stopped under pressure; pause_retry: cancelled and retried
};

/// An OOM-killed unit is rerun (at the back of the queue for launchers, as a
/// user would rerun a failed build) at most this many times; then the build
/// does not finish.
inline constexpr int kMaxReruns = 3;

/// The true profile of `unit` with `threads` nvcc threads. Model: memory scales
/// as 0.3 + 0.7 * e / e_ref with e = min(threads, arch_count) (fits the traces:
/// 4.03 GiB at one thread, 6.89 GiB at two, ratio 1.7); time as (e_ref / e)^0.85
/// (parallel compilation of archs is not perfectly efficient). With fewer
/// threads than the trace's, the archs compile in turns: the scaled trace
/// plays once per turn (one spike each).
Profile true_profile(const SimUnit& unit, int threads);

/// `count` units in families of 8, built from the traces with deterministic
/// per-family scaling (memory x0.6..1.15, time x0.6..1.4) and per-unit jitter
/// (+-5%), alternating between the traces by family. `version` stands for a
/// release of the sources: another version has other content hashes and its
/// own per-unit jitter (the families are the same code, so they scale alike).
std::vector<SimUnit> make_workload(const std::vector<Trace>& traces, int count, std::uint64_t seed, int version = 0);

/// The lower bound on the makespan: max(total CPU time / cores, total memory
/// time / memory, longest unit), each at the unit's most favourable thread count.
double lower_bound(const std::vector<SimUnit>& units, const Machine& machine);

/// Runs the whole build. For PolicyKind::fad, `estimator` is consulted and
/// taught (pass one that learnt from another build for a warm run).
SimResult simulate(const std::vector<SimUnit>& units, const Machine& machine, const Policy& policy,
                   Estimator& estimator);

}  // namespace fad::sim
