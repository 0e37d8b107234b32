// Step 1 of a decision: how much memory fad may hold now, and whether memory
// is under pressure.
//
// Inside a cgroup (a container, a systemd slice, a cgroup standing in for a
// WSL VM) the limit is shared with whatever else runs there: what others hold
// (the cgroup's usage less fad's own units) is not fad's to plan with. The
// host's MemAvailable says the same for the machine as a whole; fad's units
// are added back because MemAvailable already excludes them.
#include <algorithm>
#include <cmath>

#include "common/size.h"
#include "policy/schedule_steps.h"

namespace fad::steps {

Capacity measure_capacity(const SchedulerConfig& config, const MemorySnapshot& memory,
                          const std::vector<RunningUnit>& running) {
  Capacity c;
  for (const auto& unit : running) {
    c.fad_usage += unit.current_bytes;
    if (unit.paused) c.paused += unit.current_bytes;
  }
  c.reserve = config.reserve.resolve(memory.basis());
  c.available = memory.available + (config.swap_use ? memory.swap_free : 0);
  c.machine = sub_sat(memory.total, c.reserve);
  if (memory.cgroup_limit) {
    const std::uint64_t others = sub_sat(memory.cgroup_usage, c.fad_usage);
    c.machine = std::min(c.machine, sub_sat(*memory.cgroup_limit, others + c.reserve));
  }
  c.machine = std::min(c.machine, sub_sat(c.available + c.fad_usage, c.reserve));
  c.capacity = config.budget ? std::min(c.machine, *config.budget) : c.machine;
  return c;
}

Pressure detect_pressure(const SchedulerConfig& config, const MemorySnapshot& memory, const Capacity& c) {
  Pressure p;
  const bool psi_high = memory.psi_some_avg10 && *memory.psi_some_avg10 > config.psi_threshold;
  p.machine_short = c.available < c.reserve || c.fad_usage > c.machine;
  // Critical: within a quarter of the reserve of a limit whose overrun is an
  // OOM kill: the units' own cgroup limit, fadd's cgroup limit, or the
  // machine's memory and swap together (swap counts here even without
  // swap_use: the kernel swaps before it kills).
  const std::uint64_t margin = c.reserve / 4;
  p.critical = c.fad_usage + margin > units_memory_limit(config, memory).max ||
               (memory.cgroup_limit && memory.cgroup_usage + margin > *memory.cgroup_limit) ||
               memory.available + memory.swap_free < c.reserve / 2;
  p.active = psi_high || p.machine_short || c.fad_usage > c.capacity;
  // Name the trigger that fired: stalls, the machine (or fadd's cgroup)
  // running short, or fad's own units outgrowing their budget (estimates too low).
  if (psi_high)
    p.why = "memory pressure (PSI " + std::to_string(std::lround(*memory.psi_some_avg10)) + "%)";
  else if (c.available < c.reserve)
    p.why = "memory pressure (" + format_size(c.available) + " available, reserve " + format_size(c.reserve) + ")";
  else if (p.machine_short)
    p.why = "memory pressure (fad's units use " + format_size(c.fad_usage) + ", the machine leaves fad " +
            format_size(c.machine) + ")";
  else
    p.why = "memory pressure (fad's units use " + format_size(c.fad_usage) + " of " + format_size(c.capacity) + ")";
  p.wait_reason = psi_high || p.machine_short ? "paused by " + p.why
                                              : "fad's running units use " + format_size(c.fad_usage) + ", over its " +
                                                    format_size(c.capacity) + " budget: waiting for them to end";
  return p;
}

}  // namespace fad::steps

namespace fad {

UnitsLimit units_memory_limit(const SchedulerConfig& config, const MemorySnapshot& memory) {
  const std::uint64_t basis = memory.basis();
  const std::uint64_t reserve = config.reserve.resolve(basis);
  const std::uint64_t ceiling = steps::sub_sat(basis, reserve / 2);
  const std::uint64_t budget = config.budget ? *config.budget : steps::sub_sat(basis, reserve);
  UnitsLimit limit;
  limit.high = std::min(budget, ceiling);
  limit.max = std::min(budget + reserve / 2, ceiling);
  return limit;
}

}  // namespace fad
