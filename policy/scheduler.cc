// Scheduler::decide: admits queued units when their predicted profile, laid over
// the predicted remaining profiles of the running units, stays under the
// capacity at every future moment. That staggers spikes (a unit waits until the
// running units' spikes are past) and packs plateaus, instead of reserving each
// unit's peak for its whole life.
//
// Queue order is priority with EASY backfill (as in Slurm): the first unit that
// cannot start gets a reservation at its earliest predicted start, and later
// units may jump it only if, as predicted, they do not delay that reservation.
// Under memory pressure nothing starts; the newest unit is suspended, and
// stopped and requeued after suspend_grace_s; the oldest is never touched.
#include "policy/scheduler.h"

#include <algorithm>
#include <cmath>

#include "common/size.h"

namespace fad {
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
/// Under pressure, at most one suspension per this many seconds: SIGSTOP frees
/// nothing, so the monitor needs a moment to show whether growth stopped.
constexpr double kSuspendSpacingS = 2;
/// Backfill looks at most this deep into the queue (Slurm's bf_max_job_test):
/// bounds the cost of one decision with hundreds of queued units.
constexpr std::size_t kBackfillDepth = 64;
/// The running load is thinned to this many points: keeps window maxima, so
/// admission stays safe, and a decision stays cheap with many running units.
constexpr std::size_t kLoadPoints = 512;
/// The head's earliest start is searched on a load of at most this many points.
constexpr std::size_t kSearchPoints = 128;
constexpr double kForever = 1e9;
/// A unit fad knows nothing about (no history for it or its family, no
/// manifest prior) is estimated from the flat configured prior, a guess that
/// real units overshoot (FlashAttention's backward units reach 6.2 GiB on one
/// thread against 5 GiB). Beside another running guess, it is admitted only
/// with this margin, so two guesses that are both too low do not meet at their
/// peaks; beside measured units only (whose estimates hold) it needs none.
constexpr double kGuessMargin = 1.25;

std::uint64_t sub_sat(std::uint64_t a, std::uint64_t b) { return a > b ? a - b : 0; }

/// Highest predicted value over [from, to).
std::uint64_t window_peak(const Profile& p, double from, double to) {
  std::uint64_t best = p.at(std::max(from, 0.0));
  for (double t : p.breakpoints())
    if (t > from && t < to) best = std::max(best, p.at(t));
  return best;
}

/// What a running (or suspended, as if resumed now) unit is predicted to use
/// from now on, time relative to now. Measured memory corrects the prediction:
/// never below the current value for the next kHoldS, and when the unit uses
/// more than its prediction allows anywhere near its age, the rest of its
/// profile is scaled up by that ratio (it is a bigger unit than predicted).
Profile remaining(const RunningUnit& unit, double now) {
  const Profile& p = unit.predicted;
  double age = std::max(0.0, (unit.suspended ? unit.suspended_at : now) - unit.started_at);
  if (p.points.empty() || age >= p.duration_s) {
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
                               [](const auto& p, double t) { return p.first < t; });
    if (at == rest.points.end() || at->first != kHoldS) rest.points.insert(at, {kHoldS, held});
  }
  return rest;
}

/// Raises an estimate to a requeued unit's observed peak: it got that far before.
Profile at_least(const Profile& p, std::uint64_t peak) {
  std::uint64_t predicted = p.peak();
  if (peak <= predicted) return p;
  if (predicted == 0) return Profile::flat(peak, p.duration_s);
  return p.scaled(static_cast<double>(peak) / static_cast<double>(predicted), 1.0);
}

Profile flat_threads(int threads, double duration) {
  return Profile::flat(static_cast<std::uint64_t>(std::max(threads, 0)), duration);
}

/// The first queued unit that could not start: where, as predicted, it starts.
struct Reservation {
  double start = 0;
  bool alone = false;  ///< it needs more than the capacity: nothing may run past start
  Profile memory;      ///< running load plus the head at `start`
  Profile cpu;         ///< running threads plus the head's at `start`
};

}  // namespace

Scheduler::Scheduler(SchedulerConfig config, const Estimator& estimator)
    : config_(std::move(config)), estimator_(estimator) {
  config_.cores = std::max(config_.cores, 1);  // a machine has at least one core
}

SchedulePlan Scheduler::decide(double now, const MemorySnapshot& memory, const std::vector<QueuedUnit>& queue,
                               const std::vector<RunningUnit>& running) {
  SchedulePlan plan;

  // Capacity: what fad may hold in total. MemAvailable excludes what fad's units
  // already use, so their usage is added back.
  std::uint64_t fad_usage = 0;
  for (const auto& unit : running) fad_usage += unit.current_bytes;
  std::uint64_t basis = memory.cgroup_limit ? std::min(memory.total, *memory.cgroup_limit) : memory.total;
  std::uint64_t reserve = config_.reserve.resolve(basis);
  std::uint64_t available = memory.available + (config_.swap_use ? memory.swap_free : 0);
  std::uint64_t capacity = sub_sat(memory.total, reserve);
  if (memory.cgroup_limit) capacity = std::min(capacity, sub_sat(*memory.cgroup_limit, reserve));
  capacity = std::min(capacity, sub_sat(available + fad_usage, reserve));
  if (config_.budget) capacity = std::min(capacity, *config_.budget);
  plan.capacity = capacity;

  const RunningUnit* oldest = nullptr;
  for (const auto& unit : running)
    if (!oldest || unit.started_at < oldest->started_at) oldest = &unit;
  auto newest_first = [](const RunningUnit* a, const RunningUnit* b) { return a->started_at > b->started_at; };

  bool psi_high = memory.psi_some_avg10 && *memory.psi_some_avg10 > config_.psi_threshold;
  if (available < reserve || fad_usage > capacity || psi_high) {
    // Pressure: admit nothing; stop the newest suspended unit past its grace,
    // else freeze the newest running one. Never the oldest: it must finish.
    // Name the trigger that fired: the machine running short, fad's own units
    // outgrowing their capacity (estimates too low), or stalls.
    std::string why =
        psi_high ? "memory pressure (PSI " + std::to_string(std::lround(*memory.psi_some_avg10)) + "%)"
        : available < reserve
            ? "memory pressure (" + format_size(available) + " available, reserve " + format_size(reserve) + ")"
            : "memory pressure (fad's units use " + format_size(fad_usage) + " of " + format_size(capacity) + ")";
    std::vector<const RunningUnit*> suspended, active;
    double last_suspend = -kForever;
    for (const auto& unit : running) {
      if (&unit == oldest) continue;
      (unit.suspended ? suspended : active).push_back(&unit);
      if (unit.suspended) last_suspend = std::max(last_suspend, unit.suspended_at);
    }
    std::sort(suspended.begin(), suspended.end(), newest_first);
    std::sort(active.begin(), active.end(), newest_first);
    auto overdue = std::find_if(suspended.begin(), suspended.end(),
                                [&](const RunningUnit* u) { return now - u->suspended_at > config_.suspend_grace_s; });
    if (overdue != suspended.end()) {
      plan.decisions.push_back({Decision::Kind::requeue,
                                (*overdue)->id,
                                (*overdue)->threads,
                                {},
                                0,
                                "suspended over " + std::to_string(std::lround(config_.suspend_grace_s)) + " s under " +
                                    why + ": stop and requeue"});
    } else if (!active.empty() && now - last_suspend >= kSuspendSpacingS) {
      plan.decisions.push_back({Decision::Kind::suspend,
                                active.front()->id,
                                active.front()->threads,
                                {},
                                0,
                                "newest running unit, suspended under " + why});
    }
    for (const auto& unit : queue) plan.wait_reasons[unit.id] = "paused by memory pressure";
    std::vector<Profile> parts;
    for (const auto& unit : running) parts.push_back(remaining(unit, now));
    plan.committed = Profile::sum(parts).peak();
    return plan;
  }

  // The running units' predicted load from now on: memory and threads.
  std::vector<Profile> memory_parts, cpu_parts;
  std::vector<const RunningUnit*> suspended;
  int count = static_cast<int>(running.size());
  for (const auto& unit : running) {
    if (unit.suspended) {
      suspended.push_back(&unit);
      continue;
    }
    memory_parts.push_back(remaining(unit, now));
    cpu_parts.push_back(flat_threads(unit.threads, memory_parts.back().duration_s));
  }
  Profile load = Profile::sum(memory_parts).thinned(kLoadPoints);
  Profile cpu = Profile::sum(cpu_parts);
  bool none_active = memory_parts.empty();

  // Resume suspended units oldest first while they fit (alone if nothing else
  // runs); the others keep their memory frozen meanwhile.
  std::sort(suspended.begin(), suspended.end(),
            [](const RunningUnit* a, const RunningUnit* b) { return a->started_at < b->started_at; });
  std::size_t resumed = 0;
  for (; resumed < suspended.size(); ++resumed) {
    const RunningUnit& unit = *suspended[resumed];
    Profile rest = remaining(unit, now);
    Profile frozen;
    for (std::size_t j = resumed + 1; j < suspended.size(); ++j)
      frozen = frozen.plus(Profile::flat(suspended[j]->current_bytes, rest.duration_s), 0);
    std::uint64_t total = load.plus(frozen, 0).peak_with(rest, 0);
    if (total > capacity && !(none_active && resumed == 0)) break;
    plan.decisions.push_back(
        {Decision::Kind::resume,
         unit.id,
         unit.threads,
         {},
         0,
         "headroom returned: predicted total " + format_size(total) + " of " + format_size(capacity)});
    load = load.plus(rest, 0);
    cpu = cpu.plus(flat_threads(unit.threads, rest.duration_s), 0);
  }
  if (resumed < suspended.size()) {
    for (std::size_t j = resumed; j < suspended.size(); ++j)
      load = load.plus(Profile::flat(suspended[j]->current_bytes, kForever), 0);
    for (const auto& unit : queue)
      plan.wait_reasons[unit.id] = "paused by memory pressure: suspended units resume first";
    plan.committed = load.peak();
    return plan;
  }

  // Admission in queue order, with EASY backfill behind the first blocked unit.
  std::optional<Reservation> head;
  int guesses_running = 0;
  for (const auto& unit : running) guesses_running += unit.guess;
  auto used_threads = [&] { return static_cast<int>(cpu.at(0)); };
  for (std::size_t i = 0; i < queue.size(); ++i) {
    const QueuedUnit& unit = queue[i];
    if (config_.max_parallel_units > 0 && count >= config_.max_parallel_units) {
      plan.wait_reasons[unit.id] = "max_parallel_units reached (" + std::to_string(config_.max_parallel_units) + ")";
      continue;
    }
    if (head && i >= kBackfillDepth) {
      plan.wait_reasons[unit.id] = "waiting for earlier units (queue order)";
      continue;
    }
    int arch = std::max(unit.key.arch_count, 1);
    int max_threads =
        config_.nvcc_threads > 0 ? std::min(config_.nvcc_threads, arch) : std::max(1, std::min(arch, config_.cores));
    int free_cores = config_.cores - used_threads();
    bool nothing_runs = count == 0;
    auto estimate = [&](int t) {
      Estimate est = estimator_.estimate(unit.key, t, unit.manifest_prior);
      if (est.source == EstimateSource::prior && guesses_running > 0)
        est.profile = est.profile.scaled(kGuessMargin, 1.0);
      est.profile = at_least(est.profile, unit.requeued_peak);
      return est;
    };

    // Largest thread count that fits now (auto), or the fixed one.
    int lowest = config_.nvcc_threads > 0 ? max_threads : 1;
    int highest = std::min(max_threads, free_cores);
    std::optional<std::pair<int, Estimate>> chosen;
    std::optional<Estimate> smallest;  // the estimate at `lowest` threads, once made
    bool blocked_by_head = false;
    for (int t = highest; t >= lowest && !chosen; --t) {
      Estimate est = estimate(t);
      if (t == lowest) smallest = est;
      if (load.peak_with(est.profile, 0) > capacity) continue;
      if (head) {
        bool ok = head->alone ? est.profile.duration_s <= head->start
                              : head->memory.peak_with(est.profile, 0) <= capacity &&
                                    static_cast<int>(head->cpu.peak_with(flat_threads(t, est.profile.duration_s), 0)) <=
                                        config_.cores;
        if (!ok) {
          blocked_by_head = true;
          continue;
        }
      }
      chosen.emplace(t, std::move(est));
    }

    std::string reason;
    if (!chosen && nothing_runs) {
      // Progress rule: nothing runs, so this unit runs even if it is too big.
      Estimate est = estimate(lowest);
      reason = "runs alone: needs " + format_size(est.peak()) + ", budget " + format_size(capacity);
      chosen.emplace(lowest, std::move(est));
    }
    if (chosen) {
      auto& [t, est] = *chosen;
      if (reason.empty())
        reason = "predicted peak " + format_size(est.peak()) + " (" + std::string(to_string(est.source)) + ", " +
                 std::to_string(t) + (t == 1 ? " thread" : " threads") + "), predicted total " +
                 format_size(load.peak_with(est.profile, 0)) + " of " + format_size(capacity);
      load = load.plus(est.profile, 0);
      cpu = cpu.plus(flat_threads(t, est.profile.duration_s), 0);
      if (head) {
        head->memory = head->memory.plus(est.profile, 0);
        head->cpu = head->cpu.plus(flat_threads(t, est.profile.duration_s), 0);
      }
      ++count;
      const bool guess = est.source == EstimateSource::prior;
      guesses_running += guess;
      plan.decisions.push_back({Decision::Kind::start, unit.id, t, est.profile, est.peak(), std::move(reason), guess});
      continue;
    }

    // Not started: say why, and reserve the first such unit's earliest start.
    if (highest < lowest) {
      reason = "all " + std::to_string(config_.cores) + " cores busy";
    } else if (blocked_by_head) {
      reason = "waiting for earlier units (queue order)";
    } else {
      std::uint64_t free_now = sub_sat(capacity, load.at(0));
      reason = "needs " + format_size(smallest->peak()) + ", " + format_size(free_now) + " free";
      if (smallest->peak() <= free_now) reason += " now, but its peak would meet the running units' peaks";
    }
    if (!head) {
      if (!smallest) smallest = estimate(lowest);
      // Its earliest start: the first moment, where the load drops, from which
      // it fits (searched on a coarser load, which only over-estimates).
      Reservation r;
      Profile threads = flat_threads(lowest, smallest->profile.duration_s);
      Profile coarse = load.thinned(kSearchPoints);
      std::vector<double> starts;
      for (const Profile* p : {&coarse, &cpu})
        for (std::size_t k = 1; k < p->points.size(); ++k)
          if (p->points[k].second < p->points[k - 1].second) starts.push_back(p->points[k].first);
      starts.push_back(coarse.duration_s);
      std::sort(starts.begin(), starts.end());
      double all_done = std::max(load.duration_s, cpu.duration_s);
      r.start = all_done;
      r.alone = smallest->peak() > capacity || lowest > config_.cores;
      for (std::size_t k = 0; k < starts.size() && k < kSearchPoints && !r.alone; ++k) {
        double s = starts[k];
        if (s <= 0 || s >= all_done) continue;
        if (coarse.peak_with(smallest->profile, s) <= capacity &&
            static_cast<int>(cpu.peak_with(threads, s)) <= config_.cores) {
          r.start = s;
          break;
        }
      }
      r.memory = load.plus(smallest->profile, r.start);
      r.cpu = cpu.plus(threads, r.start);
      if (r.start < kForever / 2) reason += " (expected to start in ~" + std::to_string(std::lround(r.start)) + " s)";
      head = std::move(r);
    }
    plan.wait_reasons[unit.id] = std::move(reason);
  }
  plan.committed = load.peak();
  return plan;
}

}  // namespace fad
