// Step 2 of a decision, under memory pressure: admit nothing; stop the newest
// suspended unit past its grace, else freeze the newest running one. When the
// pressure is critical (the OOM killer is moments away) there is no grace:
// freezing stops a unit's growth but frees nothing, and without swap the older
// units' own growth still runs into the limit, where the kernel kills the
// biggest unit, usually the oldest and most advanced. Stopping the newest
// ourselves loses the least work (the trace benchmark lost an 11 s unit that
// way, 0.7 s after freezing a 5 s one). The
// oldest running unit is left alone so that the build makes progress, with one
// exception: when it is the last one running and the machine itself is short
// of what it holds (others need the memory; fad's own budget is not enough
// reason), it is frozen too and, if the shortage lasts past the grace,
// stopped and requeued to rerun alone once the machine has its peak free.
// Progress still holds: that unit's floor rises to the peak it reached each
// time, it restarts before anything else, and only fad's own budget or
// estimates can never stop it.
#include <algorithm>
#include <cmath>

#include "policy/schedule_steps.h"

namespace fad::steps {
namespace {

/// At most one suspension per this many seconds: SIGSTOP frees nothing, so the
/// monitor needs a moment to show whether growth stopped.
constexpr double kSuspendSpacingS = 2;

Decision act(Decision::Kind kind, const RunningUnit& unit, std::string reason, bool alone = false) {
  Decision d;
  d.kind = kind;
  d.unit = unit.id;
  d.threads = unit.threads;
  d.reason = std::move(reason);
  d.alone = alone;
  return d;
}

}  // namespace

void respond_to_pressure(const SchedulerConfig& config, double now, const Pressure& pressure,
                         const std::vector<RunningUnit>& running, double& last_critical_stop, SchedulePlan& plan) {
  // Units the user paused are the user's: never chosen here.
  const RunningUnit* oldest = nullptr;
  for (const auto& unit : running)
    if (!unit.paused && (!oldest || unit.started_at < oldest->started_at)) oldest = &unit;
  std::vector<const RunningUnit*> suspended, active;
  double last_suspend = -kForever;
  for (const auto& unit : running) {
    if (unit.suspended) last_suspend = std::max(last_suspend, unit.suspended_at);
    if (unit.paused || &unit == oldest) continue;
    (unit.suspended ? suspended : active).push_back(&unit);
  }
  auto newest_first = [](const RunningUnit* a, const RunningUnit* b) { return a->started_at > b->started_at; };
  std::sort(suspended.begin(), suspended.end(), newest_first);
  std::sort(active.begin(), active.end(), newest_first);
  const std::string grace = std::to_string(std::lround(config.suspend_grace_s));
  auto overdue = std::find_if(suspended.begin(), suspended.end(),
                              [&](const RunningUnit* u) { return now - u->suspended_at > config.suspend_grace_s; });
  const bool may_suspend = now - last_suspend >= kSuspendSpacingS;
  if (pressure.critical && (!suspended.empty() || !active.empty())) {
    if (now - last_critical_stop < kSuspendSpacingS) return;
    last_critical_stop = now;
    // Newest of all, frozen or not: it has done the least work.
    const RunningUnit* newest = suspended.empty() ? active.front()
                                : active.empty()  ? suspended.front()
                                                  : std::min(suspended.front(), active.front(), newest_first);
    plan.decisions.push_back(
        act(Decision::Kind::requeue, *newest,
            "newest running unit, stopped and requeued: the kernel's OOM killer is near (" + pressure.why + ")"));
  } else if (overdue != suspended.end()) {
    plan.decisions.push_back(act(Decision::Kind::requeue, **overdue,
                                 "suspended over " + grace + " s under " + pressure.why + ": stop and requeue"));
  } else if (!active.empty()) {
    if (may_suspend)
      plan.decisions.push_back(
          act(Decision::Kind::suspend, *active.front(), "newest running unit, suspended under " + pressure.why));
  } else if (oldest && suspended.empty() && pressure.machine_short) {
    // The last running unit, and the machine cannot hold it: freeze it so it
    // grows no further; if that does not end the shortage, stop it.
    if (!oldest->suspended) {
      if (may_suspend)
        plan.decisions.push_back(act(Decision::Kind::suspend, *oldest,
                                     "last running unit, suspended: the machine is short (" + pressure.why + ")"));
    } else if (now - oldest->suspended_at > config.suspend_grace_s) {
      plan.decisions.push_back(act(Decision::Kind::requeue, *oldest,
                                   "last running unit, suspended over " + grace + " s while the machine is short (" +
                                       pressure.why + "): stop; it reruns alone when its peak is free",
                                   true));
    }
  }
}

}  // namespace fad::steps
