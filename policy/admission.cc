// Step 4 of a decision: admission. A queued unit starts when its predicted
// profile, laid over the predicted remaining profiles of the running units,
// stays under the capacity at every future moment. That staggers spikes (a
// unit waits until the running units' spikes are past) and packs plateaus,
// instead of reserving each unit's peak for its whole life.
//
// Order: units that must run alone first; then the queue as given between
// builds, longest predicted first within a build (queue_order.h). EASY
// backfill (as in Slurm): the first unit that cannot start gets a reservation
// at its earliest predicted start, and later units may jump it only if, as
// predicted, they do not delay it. A build's own budget (fad run --budget)
// caps what its units hold together, laid over time like the capacity; a unit
// held back only by its build's budget reserves nothing, so other builds use
// the memory meanwhile.
//
// Threads (nvcc_threads auto): nvcc's --threads compiles a unit's archs at
// once, for more memory and somewhat more core-seconds than in turns. A unit
// gets more than its fewest only from cores nothing else would use: those
// memory leaves idle beside the next units in order, or, at the end of a
// build, those the drained queue leaves idle (the unit would be the tail).
#include <algorithm>
#include <cmath>
#include <optional>
#include <set>

#include "common/size.h"
#include "policy/queue_order.h"
#include "policy/schedule_steps.h"

namespace fad::steps {
namespace {

/// Backfill looks at most this deep into the queue (Slurm's bf_max_job_test):
/// bounds the cost of one decision with hundreds of queued units.
constexpr std::size_t kBackfillDepth = 64;
/// The head's earliest start is searched on a load of at most this many points.
constexpr std::size_t kSearchPoints = 128;
/// A unit fad knows nothing about (no history for it or its family, no running
/// sibling, no manifest prior) is estimated from the flat configured prior, a
/// guess that real units overshoot (FlashAttention's backward units reach
/// 6.2 GiB on one thread against 5 GiB). Beside another running guess, it is
/// admitted only with this margin, so two guesses that are both too low do not
/// meet at their peaks; beside measured units only (whose estimates hold) it
/// needs none.
constexpr double kGuessMargin = 1.25;
/// A unit never runs exactly on its recorded timeline: CPU contention and I/O
/// put it ahead or behind, and spikes laid half a second apart on paper meet in
/// practice (in the trace benchmark two units predicted at 3.5 GiB together
/// reached 3.8 GiB and were OOM-killed). So every admitted prediction is
/// widened by this fraction of its duration, at least kMinDriftS, either side:
/// a candidate and a running unit may drift twice that apart, the tolerance
/// load.cc allows a running unit's measurement (5%). kMinDriftS is about the
/// monitor's sampling interval, the resolution of a recorded timeline.
constexpr double kDriftFraction = 0.025;
constexpr double kMinDriftS = 0.5;

/// Raises an estimate to a requeued unit's observed peak: it got that far before.
Profile at_least(const Profile& p, std::uint64_t peak) {
  std::uint64_t predicted = p.peak();
  if (peak <= predicted) return p;
  if (predicted == 0) return Profile::flat(peak, p.duration_s);
  return p.scaled(static_cast<double>(peak) / static_cast<double>(predicted), 1.0);
}

/// The first queued unit that could not start: where, as predicted, it starts.
struct Reservation {
  double start = 0;
  bool alone = false;  ///< it needs more than the capacity: nothing may run past start
  Profile memory;      ///< running load plus the head at `start`
  Profile cpu;         ///< running threads plus the head's at `start`
};

std::string threads_text(int t) { return std::to_string(t) + (t == 1 ? " thread" : " threads"); }

/// The first moment before `before`, where the running load drops, from which
/// `est` at `threads` fits beside it (searched on a coarser load, which only
/// over-estimates); nullopt when there is none.
std::optional<double> earliest_start(const Load& load, const Profile& est, int threads, std::uint64_t capacity,
                                     int cores, double before) {
  Profile cpu_need = flat_threads(threads, est.duration_s);
  const Profile coarse = load.memory.thinned(kSearchPoints);
  std::vector<double> starts;
  for (const Profile* p : {&coarse, &load.cpu})
    for (std::size_t k = 1; k < p->points.size(); ++k)
      if (p->points[k].second < p->points[k - 1].second) starts.push_back(p->points[k].first);
  starts.push_back(coarse.duration_s);
  starts.push_back(load.cpu.duration_s);
  std::sort(starts.begin(), starts.end());
  for (std::size_t k = 0; k < starts.size() && k < kSearchPoints; ++k) {
    const double s = starts[k];
    if (s <= 0) continue;
    if (s >= before) break;
    if (coarse.peak_with(est, s) <= capacity && static_cast<int>(load.cpu.peak_with(cpu_need, s)) <= cores) return s;
  }
  return std::nullopt;
}

int max_threads_of(const SchedulerConfig& config, const QueuedUnit& unit) {
  int arch = std::max(unit.key.arch_count, 1);
  return config.nvcc_threads > 0 ? std::min(config.nvcc_threads, arch) : std::max(1, std::min(arch, config.cores));
}

int lowest_threads_of(const SchedulerConfig& config, const QueuedUnit& unit) {
  return config.nvcc_threads > 0 ? max_threads_of(config, unit) : 1;
}

/// The estimate users are shown: the estimator's, with the guess margin and
/// never below a requeued unit's observed peak.
Estimate forecast_unit(const Estimator& estimator, const QueuedUnit& unit, int threads, int guesses_running) {
  Estimate est = estimator.estimate(unit.key, threads, unit.manifest_prior);
  if (est.source == EstimateSource::prior && guesses_running > 0) est.profile = est.profile.scaled(kGuessMargin, 1.0);
  est.profile = at_least(est.profile, unit.requeued_peak);
  return est;
}

/// The estimate admission uses: the forecast widened for drift. Widening
/// keeps the peak and the duration, so the forecast (every queued unit, every
/// tick) does without it: at 17,200 queued units it was most of the pass.
Estimate estimate_unit(const Estimator& estimator, const QueuedUnit& unit, int threads, int guesses_running) {
  Estimate est = forecast_unit(estimator, unit, threads, guesses_running);
  est.profile = est.profile.widened(std::max(kMinDriftS, kDriftFraction * est.profile.duration_s));
  return est;
}

int count_guesses(const std::vector<RunningUnit>& running) {
  int n = 0;
  for (const auto& unit : running) n += unit.guess && !unit.paused;
  return n;
}

}  // namespace

void forecast(const SchedulerConfig& config, const Estimator& estimator, const std::vector<QueuedUnit>& queue,
              const std::vector<RunningUnit>& running, SchedulePlan& plan) {
  const int guesses = count_guesses(running);
  for (const auto& unit : queue) {
    Estimate est = forecast_unit(estimator, unit, lowest_threads_of(config, unit), guesses);
    plan.forecasts[unit.id] =
        Forecast{est.peak(), est.profile.duration_s, est.source, est.imported, est.duration_guessed};
  }
}

void admit(const SchedulerConfig& config, const Estimator& estimator, const AdmissionInput& in, Load& load,
           SchedulePlan& plan) {
  const auto& queue = *in.queue;
  const Capacity& cap = *in.capacity;
  const std::uint64_t capacity = in.admit_capacity;
  int guesses_running = count_guesses(*in.running);
  std::map<std::int64_t, std::uint64_t> paused_by_build;
  std::map<std::int64_t, int> units_by_build;  // running, suspended or paused: a build's first unit is free
  for (const auto& unit : *in.running) {
    if (unit.paused) paused_by_build[unit.build_id] += unit.current_bytes;
    ++units_by_build[unit.build_id];
  }
  auto lowest_of = [&](const QueuedUnit& unit) { return lowest_threads_of(config, unit); };
  auto estimate = [&](const QueuedUnit& unit, int t) { return estimate_unit(estimator, unit, t, guesses_running); };

  // Every queued unit's estimate at its fewest threads is its forecast; its
  // rank is its duration at the most threads the machine can give it: the
  // time nothing can take it below, which is what sets a build's tail. (By
  // the fewest, a two-arch unit that compiles its archs in turns ranked at
  // twice what it then ran at two threads, and one-arch units longer than
  // that started last, on 64 cores 350 s into a build, and ended it.)
  std::vector<Estimate> base;
  std::vector<QueueRank> ranks;
  base.reserve(queue.size());
  std::set<std::pair<std::int64_t, std::string>> probed;  // (build, family) with a probe already
  for (const auto& unit : queue) {
    base.push_back(estimate(unit, lowest_of(unit)));
    const Estimate& est = base.back();
    plan.forecasts[unit.id] =
        Forecast{est.peak(), est.profile.duration_s, est.source, est.imported, est.duration_guessed};
    const bool probe = est.source == EstimateSource::prior && !unit.key.family.empty() &&
                       !estimator.knows_family(unit.key) && probed.emplace(unit.build_id, unit.key.family).second;
    const int most = std::min(max_threads_of(config, unit), std::max(config.cores, 1));
    // Unwidened: widening keeps the duration, and costs a sort per unit.
    const double shortest_s = most > lowest_of(unit)
                                  ? forecast_unit(estimator, unit, most, guesses_running).profile.duration_s
                                  : est.profile.duration_s;
    ranks.push_back({unit.build_id, probe, shortest_s,
                     unit.source_bytes * static_cast<std::uint64_t>(std::max(unit.key.arch_count, 1))});
  }

  auto start = [&](const QueuedUnit& unit, int t, Estimate est, std::string reason) {
    load.memory = load.memory.plus(est.profile, 0);
    load.cpu = load.cpu.plus(flat_threads(t, est.profile.duration_s), 0);
    load.by_build[unit.build_id] = load.by_build[unit.build_id].plus(est.profile, 0);
    ++load.count;
    ++units_by_build[unit.build_id];
    const bool guess = est.source == EstimateSource::prior;
    guesses_running += guess;
    Decision d;
    d.kind = Decision::Kind::start;
    d.unit = unit.id;
    d.threads = t;
    d.estimate_bytes = est.peak();
    d.reason = std::move(reason);
    d.guess = guess;
    d.source = est.source;
    d.imported = est.imported;
    d.duration_guessed = est.duration_guessed;
    d.predicted = std::move(est.profile);
    plan.decisions.push_back(std::move(d));
  };

  // A unit stopped as the last one running while the machine was short runs
  // first and alone, once the machine (not the budget) leaves fad its peak.
  for (std::size_t i = 0; i < queue.size(); ++i) {
    const QueuedUnit& unit = queue[i];
    if (!unit.alone) continue;
    const std::uint64_t room = sub_sat(cap.machine, cap.paused);
    if (load.count > 0) {
      plan.wait_reasons[unit.id] = "must run alone: waits for the running units to finish";
    } else if (room < unit.requeued_peak) {
      plan.wait_reasons[unit.id] =
          "must run alone: needs " + format_size(unit.requeued_peak) + ", the machine leaves fad " + format_size(room);
    } else {
      int t = lowest_of(unit);
      start(unit, t, base[i],
            "runs alone after it was stopped while the machine was short: needs " + format_size(unit.requeued_peak) +
                ", the machine leaves fad " + format_size(room));
    }
    for (const auto& other : queue)
      if (other.id != unit.id && !plan.wait_reasons.count(other.id))
        plan.wait_reasons[other.id] = "waiting for a unit that must run alone";
    return;
  }

  // When the queue's work at its fewest threads would keep every core busy
  // for this long; a unit that alone runs longer would be the build's tail.
  double queue_work = load.cpu.mean() * load.cpu.duration_s;
  for (std::size_t i = 0; i < queue.size(); ++i) queue_work += base[i].profile.duration_s * lowest_of(queue[i]);
  const double drain_s = queue_work / std::max(config.cores, 1);

  const std::vector<std::size_t> order = longest_first_within_builds(ranks);
  std::optional<Reservation> head;
  auto used_threads = [&] { return static_cast<int>(load.cpu.at(0)); };
  for (std::size_t rank = 0; rank < order.size(); ++rank) {
    const std::size_t i = order[rank];
    const QueuedUnit& unit = queue[i];
    if (config.max_parallel_units > 0 && load.count >= config.max_parallel_units) {
      plan.wait_reasons[unit.id] = "max_parallel_units reached (" + std::to_string(config.max_parallel_units) + ")";
      continue;
    }
    if (head && rank >= kBackfillDepth) {
      plan.wait_reasons[unit.id] = "waiting for earlier units (queue order)";
      continue;
    }
    const int max_threads = max_threads_of(config, unit);
    const int free_cores = config.cores - used_threads();
    const bool nothing_runs = load.count == 0 && cap.paused == 0;
    // The build's own budget, over the build's running units (its first unit is free).
    auto budget = in.build_budgets->find(unit.build_id);
    const bool budgeted = budget != in.build_budgets->end() && units_by_build[unit.build_id] > 0;
    const Profile& build_load = load.by_build[unit.build_id];
    const std::uint64_t build_paused = paused_by_build[unit.build_id];

    // Of the thread counts that fit now (auto; or the fixed one): the most
    // that take only cores nothing else would use, else the fewest.
    const int lowest = lowest_of(unit);
    const int highest = std::min(max_threads, free_cores);
    std::optional<std::pair<int, Estimate>> chosen;
    // Not base[i]: a guess started in this very decision adds the guess margin.
    const Estimate smallest = estimate(unit, lowest);
    // More nvcc threads than the fewest cost cores the rest of the queue could
    // use now (nvcc's threads are far from perfectly parallel): they are taken
    // only from cores that memory would otherwise leave idle, i.e. beyond what
    // the next units in order, at their fewest threads, would start on beside it.
    auto spare_cores_for = [&](const Estimate& est, int t) {
      std::uint64_t room = sub_sat(capacity, load.memory.at(0) + est.peak());
      int cores = free_cores - t;
      for (std::size_t k = rank + 1; k < order.size() && k <= rank + kBackfillDepth && cores >= 0; ++k) {
        const std::size_t j = order[k];
        if (base[j].peak() > room) break;
        room -= base[j].peak();
        cores -= lowest_of(queue[j]);
      }
      return cores >= 0;
    };
    // Or from cores the queue leaves idle at the end: one that would finish
    // after the rest has drained takes all the threads it can now.
    const bool tail = smallest.profile.duration_s > drain_s;
    bool blocked_by_head = false, blocked_by_budget = false;
    for (int t = highest; t >= lowest; --t) {
      Estimate est = t == lowest ? smallest : estimate(unit, t);
      if (load.memory.peak_with(est.profile, 0) > capacity) continue;
      if (budgeted && build_load.peak_with(est.profile, 0) + build_paused > budget->second) {
        blocked_by_budget = true;
        continue;
      }
      if (head) {
        bool ok = head->alone ? est.profile.duration_s <= head->start
                              : head->memory.peak_with(est.profile, 0) <= capacity &&
                                    static_cast<int>(head->cpu.peak_with(flat_threads(t, est.profile.duration_s), 0)) <=
                                        config.cores;
        if (!ok) {
          blocked_by_head = true;
          continue;
        }
      }
      // The most threads that only take spare cores; else the fewest that fit.
      if (t == lowest || tail || spare_cores_for(est, t)) {
        chosen.emplace(t, std::move(est));
        break;
      }
    }

    // Fewer threads than archs compiles them in turns: longer, one spike per
    // turn. When all archs at once would start soon enough to finish first,
    // the unit waits for that instead (the earliest completion wins), if the
    // cores it waits for are ones nothing else would use: spare beside the
    // next units, or left idle by the drained queue (the tail, which on
    // 64 cores otherwise started on the last free core and ran alone for
    // minutes at the end of the build).
    std::optional<std::pair<double, Estimate>> wait_for_all;
    if (chosen && chosen->first < max_threads && max_threads <= config.cores && !blocked_by_budget) {
      Estimate all = estimate(unit, max_threads);
      const double finish_now = chosen->second.profile.duration_s;
      if (all.profile.duration_s < finish_now && (tail || spare_cores_for(all, max_threads))) {
        auto s =
            earliest_start(load, all.profile, max_threads, capacity, config.cores, finish_now - all.profile.duration_s);
        if (s && (!head || head->memory.peak_with(all.profile, *s) <= capacity)) {
          wait_for_all.emplace(*s, std::move(all));
          chosen.reset();
        }
      }
    }

    std::string reason;
    if (!chosen && nothing_runs && !wait_for_all) {
      // Progress rule: nothing runs, so this unit runs even if it is too big.
      reason = "runs alone: needs " + format_size(smallest.peak()) + ", budget " + format_size(capacity);
      chosen.emplace(lowest, smallest);
    }
    if (chosen) {
      auto& [t, est] = *chosen;
      if (reason.empty())
        reason = "predicted peak " + format_size(est.peak()) + " (" + std::string(to_string(est.source)) + ", " +
                 threads_text(t) + "), predicted total " + format_size(load.memory.peak_with(est.profile, 0)) + " of " +
                 format_size(capacity);
      if (head) {
        head->memory = head->memory.plus(est.profile, 0);
        head->cpu = head->cpu.plus(flat_threads(t, est.profile.duration_s), 0);
      }
      start(unit, t, std::move(est), std::move(reason));
      continue;
    }

    // Not started: say why, and reserve the first such unit's earliest start.
    if (wait_for_all) {
      const auto& [at, all] = *wait_for_all;
      reason = "waits ~" + std::to_string(std::lround(at)) + " s to compile its " +
               std::to_string(std::max(unit.key.arch_count, 1)) + " archs at once (" + threads_text(max_threads) +
               "): finishes sooner than in turns now";
      if (!head) {
        Reservation r;
        r.start = at;
        r.memory = load.memory.plus(all.profile, at);
        r.cpu = load.cpu.plus(flat_threads(max_threads, all.profile.duration_s), at);
        head = std::move(r);
      }
      plan.wait_reasons[unit.id] = std::move(reason);
      continue;
    }
    if (highest < lowest) {
      reason = "all " + std::to_string(config.cores) + " cores busy";
    } else if (blocked_by_budget && !blocked_by_head) {
      plan.wait_reasons[unit.id] = "build budget " + format_size(budget->second) + " reached (" +
                                   format_size(build_load.at(0) + build_paused) + " in use, needs " +
                                   format_size(smallest.peak()) + ")";
      continue;  // its own build holds it back: it reserves nothing of the machine
    } else if (blocked_by_head) {
      reason = "waiting for earlier units (queue order)";
    } else {
      std::uint64_t free_now = sub_sat(capacity, load.memory.at(0));
      reason = "needs " + format_size(smallest.peak()) + ", " + format_size(free_now) + " free";
      if (smallest.peak() <= free_now) reason += " now, but its peak would meet the running units' peaks";
      if (cap.paused > 0) reason += " (paused builds hold " + format_size(cap.paused) + ")";
    }
    if (!head) {
      // Its earliest start: the first moment, where the load drops, from which it fits.
      Reservation r;
      const double all_done = std::max(load.memory.duration_s, load.cpu.duration_s);
      r.alone = smallest.peak() > capacity || lowest > config.cores;
      r.start = all_done;
      if (!r.alone)
        r.start = earliest_start(load, smallest.profile, lowest, capacity, config.cores, all_done).value_or(all_done);
      r.memory = load.memory.plus(smallest.profile, r.start);
      r.cpu = load.cpu.plus(flat_threads(lowest, smallest.profile.duration_s), r.start);
      if (r.start < kForever / 2) {
        reason += " (expected to start in ~" + std::to_string(std::lround(r.start)) + " s";
        // The end of a unit past its prediction is a guess made again each
        // decision: a start after it would be "in ~N s" for as long as the
        // unit overruns.
        reason +=
            r.start >= load.first_overrun_end ? " at the soonest; a running unit is past its estimated end)" : ")";
      }
      head = std::move(r);
    }
    plan.wait_reasons[unit.id] = std::move(reason);
  }
}

}  // namespace fad::steps
