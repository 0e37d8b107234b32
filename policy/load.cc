// The running units' predicted load from now on: each unit's predicted profile
// from its age on, corrected by what it measures now (a unit using more than
// predicted is a bigger unit than predicted).
#include <algorithm>

#include "policy/schedule_steps.h"
#include "policy/spikes.h"

namespace fad::steps {
namespace {

/// A running unit's memory is never assumed to drop below its measured value
/// sooner than this: the monitor samples about every half second.
constexpr double kHoldS = 5;
/// Measured memory is compared with the prediction's maximum around the unit's
/// age (this fraction of its duration, at least kMinNearS, each side), so a unit
/// merely a little ahead or behind its predicted timeline is not taken as bigger.
constexpr double kNearFraction = 0.05;
constexpr double kMinNearS = 5;
/// A unit running past its predicted end is assumed to hold its current memory
/// for this fraction of its predicted duration more (re-evaluated every decision).
constexpr double kOverrunFraction = 0.25;
/// A unit that came down from every turn's spike (spikes.h) is past the phases
/// that set its memory: what is left of it is predicted at no more than its
/// plateau, the highest of now, since its last spike and 40% of its peak
/// (the traces' plateaus reach 39% and 36% of their spikes, partly only well
/// after the drop), with a 25% margin. A unit admitted on a flat prior then
/// frees what the prior over-estimated within its first minutes, not at its end.
constexpr double kPlateauFloor = 0.4;
constexpr double kPlateauMargin = 1.25;
/// The running load is thinned to this many points: keeps window maxima, so
/// admission stays safe, and a decision stays cheap with many running units.
constexpr std::size_t kLoadPoints = 512;

/// Highest predicted value over [from, to).
std::uint64_t window_peak(const Profile& p, double from, double to) {
  std::uint64_t best = p.at(std::max(from, 0.0));
  for (double t : p.breakpoints())
    if (t > from && t < to) best = std::max(best, p.at(t));
  return best;
}

/// Its compile time so far (a suspended one's stands still).
double age_of(const RunningUnit& unit, double now) {
  return std::max(0.0, (unit.suspended ? unit.suspended_at : now) - unit.started_at - unit.frozen_s);
}

bool past_prediction(const RunningUnit& unit, double now) {
  return unit.predicted.points.empty() || age_of(unit, now) >= unit.predicted.duration_s;
}

}  // namespace

Profile flat_threads(int threads, double duration) {
  return Profile::flat(static_cast<std::uint64_t>(std::max(threads, 0)), duration);
}

Profile remaining(const RunningUnit& unit, double now) {
  const Profile& p = unit.predicted;
  const double age = age_of(unit, now);
  if (past_prediction(unit, now)) {
    // Past its prediction, measurement is all we know (a flat prior's value
    // would keep blocking admission long after the unit settled).
    return Profile::flat(unit.current_bytes, std::max(kHoldS, kOverrunFraction * p.duration_s));
  }
  double near = std::max(kMinNearS, kNearFraction * p.duration_s);
  std::uint64_t expected = window_peak(p, age - near, age + near);
  double factor = expected > 0 && unit.current_bytes > expected
                      ? static_cast<double>(unit.current_bytes) / static_cast<double>(expected)
                      : 1.0;
  Profile rest;
  rest.duration_s = p.duration_s - age;
  rest.points.emplace_back(0.0, p.at(age));
  for (const auto& [t, v] : p.points)
    if (t > age) rest.points.emplace_back(t - age, v);
  if (factor > 1) rest = rest.scaled(factor, 1.0);
  if (unit.spikes_seen >= arch_turns(unit.threads, unit.arch_count)) {
    const double level = std::max({static_cast<double>(unit.current_bytes), static_cast<double>(unit.since_spike_bytes),
                                   kPlateauFloor * static_cast<double>(unit.peak_bytes)});
    const auto plateau = static_cast<std::uint64_t>(kPlateauMargin * level);
    for (auto& point : rest.points) point.second = std::min(point.second, plateau);
  }
  // The floor: at least the measured value until kHoldS.
  std::uint64_t held = rest.at(kHoldS);
  bool cut = false;
  for (auto& [t, v] : rest.points) {
    if (t >= kHoldS) break;
    v = std::max(v, unit.current_bytes);
    cut = true;
  }
  if (cut && kHoldS < rest.duration_s) {
    auto at = std::lower_bound(rest.points.begin(), rest.points.end(), kHoldS,
                               [](const auto& q, double t) { return q.first < t; });
    if (at == rest.points.end() || at->first != kHoldS) rest.points.insert(at, {kHoldS, held});
  }
  return rest;
}

Load running_load(const std::vector<RunningUnit>& running, double now) {
  Load load;
  std::vector<Profile> memory_parts, cpu_parts;
  std::map<std::int64_t, std::vector<Profile>> by_build;
  for (const auto& unit : running) {
    if (unit.paused) continue;  // its memory is taken off the capacity; it holds no core
    ++load.count;
    if (unit.suspended) continue;  // resume_suspended decides about these
    memory_parts.push_back(remaining(unit, now));
    if (past_prediction(unit, now))
      load.first_overrun_end = std::min(load.first_overrun_end, memory_parts.back().duration_s);
    cpu_parts.push_back(flat_threads(unit.threads, memory_parts.back().duration_s));
    by_build[unit.build_id].push_back(memory_parts.back());
  }
  load.memory = Profile::sum(memory_parts).thinned(kLoadPoints);
  load.cpu = Profile::sum(cpu_parts);
  for (auto& [build, parts] : by_build) load.by_build[build] = Profile::sum(parts).thinned(kLoadPoints);
  return load;
}

}  // namespace fad::steps
