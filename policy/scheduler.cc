// Scheduler::decide: one decision as four named steps (see scheduler.h and the
// files named there). Units the user paused hold their memory, which is taken
// off the capacity, but no core, and they never block admission.
#include "policy/scheduler.h"

#include <algorithm>

#include "policy/schedule_steps.h"

namespace fad {

Scheduler::Scheduler(SchedulerConfig config, const Estimator& estimator)
    : config_(std::move(config)), estimator_(estimator) {
  config_.cores = std::max(config_.cores, 1);  // a machine has at least one core
}

SchedulePlan Scheduler::decide(double now, const MemorySnapshot& memory, const std::vector<QueuedUnit>& queue,
                               const std::vector<RunningUnit>& running,
                               const std::map<std::int64_t, std::uint64_t>& build_budgets, const std::string& hold) {
  SchedulePlan plan;
  // 1. Capacity, and whether memory is under pressure.
  const steps::Capacity cap = steps::measure_capacity(config_, memory, running);
  plan.capacity = cap.capacity;
  const std::uint64_t admit_capacity = steps::sub_sat(cap.capacity, cap.paused);
  const steps::Pressure pressure = steps::detect_pressure(config_, memory, cap);

  // 2. Pressure: nothing starts; suspend or stop.
  if (pressure.active) {
    steps::respond_to_pressure(config_, now, pressure, running, last_critical_stop_, plan);
    steps::forecast(config_, estimator_, queue, running, plan);
    for (const auto& unit : queue) plan.wait_reasons[unit.id] = pressure.wait_reason;
    std::vector<Profile> parts;
    for (const auto& unit : running)
      if (!unit.paused) parts.push_back(steps::remaining(unit, now));
    plan.committed = Profile::sum(parts).peak() + cap.paused;
    return plan;
  }

  // 3. Suspended units resume first.
  steps::Load load = steps::running_load(running, now);
  if (!steps::resume_suspended(now, admit_capacity, running, load, plan)) {
    steps::forecast(config_, estimator_, queue, running, plan);
    for (const auto& unit : queue)
      plan.wait_reasons[unit.id] = "paused by memory pressure: suspended units resume first";
    plan.committed = load.memory.peak() + cap.paused;
    return plan;
  }

  // 4. Admission, unless something else holds every start.
  if (!hold.empty()) {
    steps::forecast(config_, estimator_, queue, running, plan);
    for (const auto& unit : queue) plan.wait_reasons[unit.id] = hold;
    plan.committed = load.memory.peak() + cap.paused;
    return plan;
  }
  steps::AdmissionInput in;
  in.now = now;
  in.capacity = &cap;
  in.admit_capacity = admit_capacity;
  in.queue = &queue;
  in.running = &running;
  in.build_budgets = &build_budgets;
  steps::admit(config_, estimator_, in, load, plan);
  plan.committed = load.memory.peak() + cap.paused;
  return plan;
}

}  // namespace fad
