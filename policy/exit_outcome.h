// What becomes of a unit when its process ends: the one place that decides
// between success, a rerun and a failure. Pure: the daemon hands in how the
// process ended and why fad stopped it (if it did), and carries the outcome out.
#pragma once

#include <cstdint>
#include <string>

namespace fad {

/// Why fad itself stopped the unit, if it did.
enum class StopCause {
  none,           ///< it ended on its own
  requeue,        ///< stopped under memory pressure, to run later
  requeue_alone,  ///< the last unit, stopped while the machine was short: reruns alone
  cancel,         ///< the user cancelled its build (or its fad run ended)
  shutdown,       ///< fadd is stopping; the next start reruns it
};

struct UnitExit {
  StopCause stop = StopCause::none;
  int exit_code = 0;
  bool signaled = false;
  bool oom_killed = false;   ///< its unit cgroup counted an OOM kill
  int attempts = 1;          ///< runs so far, this one included
  std::uint64_t peak = 0;    ///< highest memory seen for this run
  bool external = false;     ///< run by `fad launch`: its build tool decides about the rest
  bool disk_full = false;    ///< the disk of its output or of fad's state was (nearly) full as it ended
  bool lost = false;         ///< its Slurm node or allocation went away under it
  int lost_runs = 0;         ///< its runs that were lost, this one included
  bool interrupted = false;  ///< its launcher got SIGINT, SIGTERM or SIGHUP and passed it on
};

struct ExitOutcome {
  enum class Action {
    succeed,     ///< done (for a link: once its output is published)
    requeue,     ///< back to the queue; `floor` is its estimate's minimum from now on
    cancelled,   ///< stopped for good by the user
    fail,        ///< failed; the rest of its build goes on (a build tool's own call)
    fail_build,  ///< failed; nothing new of its build starts (like make without -k)
  };
  Action action = Action::succeed;
  std::uint64_t floor = 0;
  bool alone = false;       ///< requeue: it must rerun alone
  bool oom_rerun = false;   ///< requeue: the kernel's OOM killer ended it
  bool disk_rerun = false;  ///< requeue: it failed while its disk was full
  bool lost_rerun = false;  ///< requeue: its Slurm node or allocation went away under it
};

/// Runs in all a unit the OOM killer ends may take: by the last one its own
/// peak was its estimate, so it does not fit even alone.
inline constexpr int kMaxOomAttempts = 3;

/// Runs in all a unit that fails on a full disk may take: enough to ride out
/// a disk that filled and was cleared, few enough that a unit which truly
/// fails beside a nearly full disk still fails soon.
inline constexpr int kMaxDiskFullAttempts = 3;

/// Lost runs a unit may have: a lost step did not fail on its merits, so it
/// runs again; but a unit whose every step is killed (a cluster that
/// cancels it each time) must end, not cycle for ever.
inline constexpr int kMaxLostRuns = 5;

/// The outcome of a unit's end. OOM kills (its cgroup counted one, and it did
/// not succeed: killed, or a driver such as nvcc exiting after its cicc was
/// killed) are not failures: the unit is rerun
/// with its peak + 25% as the floor (the kill cut it short of its true peak),
/// up to kMaxOomAttempts runs in all. A stop under pressure keeps the observed
/// peak as the floor; a stop for shutdown keeps nothing. A unit fadd runs
/// itself that fails while the disk is full did not fail on its merits (a
/// compiler cannot write its object): it is requeued, up to
/// kMaxDiskFullAttempts runs; a launched unit's failure is its build tool's.
/// A lost Slurm step runs again, until its kMaxLostRuns-th loss. A launched
/// compile that did not succeed after its launcher was interrupted (Ctrl-C,
/// a CI job's timeout, a closed terminal) is cancelled, as Slurm marks an
/// interrupted step: stopped from outside, not failed on its own, and its
/// launcher reruns nothing. Any other
/// non-zero exit or signal is a failure, which stops the rest of a bundled
/// build.
ExitOutcome decide_exit(const UnitExit& exit);

}  // namespace fad
