// Step 3 of a decision: once pressure is gone, suspended units resume, oldest
// first, while their remaining profiles fit beside the running load (the first
// one alone if nothing else runs); the others keep their frozen memory. Nothing
// new starts while any stays suspended: they were admitted first.
#include <algorithm>

#include "common/size.h"
#include "policy/schedule_steps.h"

namespace fad::steps {

bool resume_suspended(double now, std::uint64_t capacity, const std::vector<RunningUnit>& running, Load& load,
                      SchedulePlan& plan) {
  std::vector<const RunningUnit*> suspended;
  for (const auto& unit : running)
    if (unit.suspended && !unit.paused) suspended.push_back(&unit);
  if (suspended.empty()) return true;
  std::sort(suspended.begin(), suspended.end(),
            [](const RunningUnit* a, const RunningUnit* b) { return a->started_at < b->started_at; });
  const bool none_active = load.memory.points.empty();
  std::size_t resumed = 0;
  for (; resumed < suspended.size(); ++resumed) {
    const RunningUnit& unit = *suspended[resumed];
    Profile rest = remaining(unit, now);
    Profile frozen;
    for (std::size_t j = resumed + 1; j < suspended.size(); ++j)
      frozen = frozen.plus(Profile::flat(suspended[j]->current_bytes, rest.duration_s), 0);
    std::uint64_t total = load.memory.plus(frozen, 0).peak_with(rest, 0);
    if (total > capacity && !(none_active && resumed == 0)) break;
    Decision d;
    d.kind = Decision::Kind::resume;
    d.unit = unit.id;
    d.threads = unit.threads;
    d.reason = "headroom returned: predicted total " + format_size(total) + " of " + format_size(capacity);
    plan.decisions.push_back(std::move(d));
    load.memory = load.memory.plus(rest, 0);
    load.cpu = load.cpu.plus(flat_threads(unit.threads, rest.duration_s), 0);
    load.by_build[unit.build_id] = load.by_build[unit.build_id].plus(rest, 0);
  }
  if (resumed == suspended.size()) return true;
  for (std::size_t j = resumed; j < suspended.size(); ++j)
    load.memory = load.memory.plus(Profile::flat(suspended[j]->current_bytes, kForever), 0);
  return false;
}

}  // namespace fad::steps
