// decide_exit; see exit_outcome.h.
#include "policy/exit_outcome.h"

namespace fad {

ExitOutcome decide_exit(const UnitExit& e) {
  using Action = ExitOutcome::Action;
  ExitOutcome out;
  switch (e.stop) {
    case StopCause::requeue:
      out.action = Action::requeue;
      out.floor = e.peak;
      return out;
    case StopCause::requeue_alone:
      out.action = Action::requeue;
      out.floor = e.peak;
      out.alone = true;
      return out;
    case StopCause::shutdown: out.action = Action::requeue; return out;
    case StopCause::cancel: out.action = Action::cancelled; return out;
    case StopCause::none: break;
  }
  // Its launcher is leaving (it reruns nothing once interrupted): whatever
  // ended the compile, an OOM kill or a lost step included, no rerun waits
  // for it. A compile that finished all the same succeeded.
  if (e.interrupted && (e.exit_code != 0 || e.signaled)) {
    out.action = Action::cancelled;
    return out;
  }
  if (e.lost) {
    // Whatever its status says, the compile did not end on its own.
    out.action = e.lost_runs < kMaxLostRuns ? Action::requeue : e.external ? Action::fail : Action::fail_build;
    out.lost_rerun = out.action == Action::requeue;
    return out;
  }
  // nvcc is a driver: the OOM killer takes its largest child (cicc, ptxas),
  // and nvcc itself then exits 137 (or 1), not by a signal. The unit's
  // cgroup counted the kill either way; a compile that still succeeded did.
  if (e.oom_killed && (e.signaled || e.exit_code != 0) && e.attempts < kMaxOomAttempts) {
    out.action = Action::requeue;
    out.floor = e.peak + e.peak / 4;
    out.oom_rerun = true;
    return out;
  }
  if (e.exit_code == 0 && !e.signaled) return out;
  if (e.disk_full && !e.external && e.attempts < kMaxDiskFullAttempts) {
    out.action = Action::requeue;
    out.disk_rerun = true;
    return out;
  }
  out.action = e.external ? Action::fail : Action::fail_build;
  return out;
}

}  // namespace fad
