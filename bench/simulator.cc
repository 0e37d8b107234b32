// The build simulator (see simulator.h). Time advances in 1 s steps: every
// running unit progresses by min(1, cores / running threads) seconds of its own
// time (CPU oversubscription slows everyone alike) and uses its true profile's
// memory at that progress. When true use exceeds the machine's memory, the
// kernel's OOM killer takes the newest unit; it starts over later (fad's
// engine requeues it at the head with its peak + 25% as the floor; a launcher
// is rerun by its user at the back), at most kMaxReruns times per unit.
#include "bench/simulator.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <optional>

#include "policy/scheduler.h"
#include "policy/spikes.h"

namespace fad::sim {
namespace {

constexpr double kStepS = 1;
/// fad's daemon polls every 0.5 s; deciding every 5 s (and on every finish) is
/// close enough for units that run minutes, and keeps the simulation fast.
constexpr double kDecideEveryS = 5;
constexpr double kGiveUpS = 1e6;  // a livelocked build counts as never finishing
/// pause_retry: suspend above, cancel above, resume below (fractions of memory).
constexpr double kPauseAt = 0.85, kCancelAt = 0.95, kResumeBelow = 0.70;

/// Deterministic across platforms, unlike std::uniform_real_distribution.
struct SplitMix {
  std::uint64_t state;
  double uniform() {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return static_cast<double>((z ^ (z >> 31)) >> 11) / 9007199254740992.0;
  }
};

struct Run {
  std::size_t unit = 0;
  int threads = 1;
  double started_at = 0;
  double progress = 0;  ///< seconds of the unit's own (unslowed) time done
  Profile truth;
  Profile predicted;
  std::uint64_t current = 0, peak = 0;
  bool suspended = false;
  double suspended_at = 0;
  bool guess = false;
  std::vector<std::pair<double, std::uint64_t>> samples;
};

struct Waiting {
  std::size_t unit = 0;
  std::uint64_t requeued_peak = 0;
  bool alone = false;
};

Run start_run(const std::vector<SimUnit>& units, std::size_t unit, int threads, double now) {
  Run r;
  r.unit = unit;
  r.threads = threads;
  r.started_at = now;
  r.truth = true_profile(units[unit], threads);
  r.current = r.truth.at(0);
  return r;
}

/// Carries out the scheduler's decisions on the simulated machine.
void apply(const SchedulePlan& plan, double now, const std::vector<SimUnit>& units, std::deque<Waiting>& queue,
           std::vector<Run>& running, SimResult& result) {
  for (const auto& d : plan.decisions) {
    auto unit = static_cast<std::size_t>(d.unit);
    auto run = std::find_if(running.begin(), running.end(), [&](const Run& r) { return r.unit == unit; });
    switch (d.kind) {
      case Decision::Kind::start: {
        auto it = std::find_if(queue.begin(), queue.end(), [&](const Waiting& w) { return w.unit == unit; });
        if (it == queue.end()) break;
        queue.erase(it);
        Run r = start_run(units, unit, d.threads, now);
        r.predicted = d.predicted;
        r.guess = d.guess;
        running.push_back(std::move(r));
        break;
      }
      case Decision::Kind::suspend:
        if (run != running.end()) run->suspended = true, run->suspended_at = now, ++result.suspends;
        break;
      case Decision::Kind::resume:
        if (run != running.end()) run->suspended = false;
        break;
      case Decision::Kind::requeue:
        if (run != running.end()) {
          queue.push_front({unit, run->peak, d.alone});
          running.erase(run);
          ++result.requeues;
        }
        break;
    }
  }
}

/// One decision of fad's scheduler on the simulated machine.
void decide_fad(Scheduler& scheduler, Estimator& estimator, const std::vector<SimUnit>& units, const Machine& machine,
                double now, std::deque<Waiting>& queue, std::vector<Run>& running, SimResult& result) {
  std::vector<QueuedUnit> waiting;
  // The whole queue, as the daemon hands it over: the scheduler ranks all of
  // it (one probe per unknown family, longest first) and bounds its own
  // search (kBackfillDepth).
  for (std::size_t i = 0; i < queue.size(); ++i) {
    QueuedUnit q;
    q.id = static_cast<std::int64_t>(queue[i].unit);
    q.key = units[queue[i].unit].key;
    q.requeued_peak = queue[i].requeued_peak;
    q.alone = queue[i].alone;
    waiting.push_back(std::move(q));
  }
  std::vector<RunningUnit> active;
  std::vector<RunningObservation> evidence;
  std::uint64_t usage = 0;
  for (const auto& r : running) {
    RunningUnit ru;
    ru.id = static_cast<std::int64_t>(r.unit);
    ru.started_at = r.started_at;
    ru.threads = r.threads;
    ru.predicted = r.predicted;
    ru.current_bytes = r.current;
    ru.peak_bytes = r.peak;
    ru.suspended = r.suspended;
    ru.suspended_at = r.suspended_at;
    ru.guess = r.guess;
    ru.arch_count = units[r.unit].key.arch_count;
    Profile so_far;
    so_far.points = r.samples;
    so_far.duration_s = now - r.started_at;
    const SpikeSummary spikes = summarize_spikes(so_far, r.predicted.peak() / 4);
    ru.spikes_seen = spikes.spikes;
    ru.since_spike_bytes = spikes.since_drop;
    active.push_back(std::move(ru));
    evidence.push_back({units[r.unit].key, r.threads, std::move(so_far), r.predicted.peak()});
    usage += r.current;
  }
  estimator.observe_running(evidence);
  MemorySnapshot snap;
  snap.total = machine.memory;
  snap.available = machine.memory > usage ? machine.memory - usage : 0;
  auto plan = scheduler.decide(now, snap, waiting, active);
  apply(plan, now, units, queue, running, result);
}

/// One step of the pause-at-85% / cancel-and-retry launcher.
void step_pause_retry(const std::vector<SimUnit>& units, const Machine& machine, const Policy& policy, double now,
                      std::deque<Waiting>& queue, std::vector<Run>& running, SimResult& result) {
  std::uint64_t usage = 0;
  for (const auto& r : running) usage += r.current;
  const double mem = static_cast<double>(machine.memory);
  auto newest = [&](bool suspended) {
    auto best = running.end();
    for (auto it = running.begin(); it != running.end(); ++it)
      if (it->suspended == suspended && (best == running.end() || it->started_at > best->started_at)) best = it;
    return best;
  };
  if (static_cast<double>(usage) > kCancelAt * mem && running.size() > 1) {
    auto victim = std::max_element(running.begin(), running.end(),
                                   [](const Run& a, const Run& b) { return a.started_at < b.started_at; });
    queue.push_back({victim->unit, 0});
    running.erase(victim);
    ++result.requeues;
    return;
  }
  if (static_cast<double>(usage) > kPauseAt * mem) {
    int active = 0;
    for (const auto& r : running) active += !r.suspended;
    if (active > 1) {
      auto victim = newest(false);
      victim->suspended = true;
      victim->suspended_at = now;
      ++result.suspends;
    }
    return;
  }
  bool any_suspended = false;
  for (const auto& r : running) any_suspended |= r.suspended;
  if (any_suspended) {
    if (static_cast<double>(usage) < kResumeBelow * mem) {
      auto oldest = running.end();
      for (auto it = running.begin(); it != running.end(); ++it)
        if (it->suspended && (oldest == running.end() || it->started_at < oldest->started_at)) oldest = it;
      oldest->suspended = false;
    }
    return;
  }
  const int jobs = std::max(1, machine.cores / std::max(policy.threads, 1));
  while (static_cast<int>(running.size()) < jobs && !queue.empty()) {
    running.push_back(start_run(units, queue.front().unit, policy.threads, now));
    queue.pop_front();
  }
}

}  // namespace

Profile true_profile(const SimUnit& unit, int threads) {
  int e_ref = effective_parallelism(unit.truth_threads, unit.key.arch_count);
  int e = effective_parallelism(threads, unit.key.arch_count);
  double memory = 0.3 + 0.7 * e / e_ref;
  double time = std::pow(static_cast<double>(e_ref) / e, 0.85);
  if (e >= e_ref) return unit.truth.scaled(memory, time);
  // Fewer archs at once than the trace: nvcc compiles them in turn, one cicc
  // spike per turn.
  const int turns = (e_ref + e - 1) / e;
  const Profile one = unit.truth.scaled(memory, time / turns);
  Profile out;
  for (int k = 0; k < turns; ++k)
    for (const auto& [t, v] : one.points) out.points.emplace_back(t + k * one.duration_s, v);
  out.duration_s = turns * one.duration_s;
  return out;
}

std::vector<SimUnit> make_workload(const std::vector<Trace>& traces, int count, std::uint64_t seed, int version) {
  static const char* kHdims[] = {"32", "64", "96", "128", "160", "192", "224", "256"};
  SplitMix family_rng{seed};
  SplitMix unit_rng{seed + 0x51ed2701ull * static_cast<std::uint64_t>(version)};
  std::vector<SimUnit> units;
  double family_memory = 1, family_time = 1;
  std::size_t trace = 0;
  for (int i = 0; i < count; ++i) {
    int family = i / 8;
    if (i % 8 == 0) {
      family_memory = 0.6 + 0.55 * family_rng.uniform();
      family_time = 0.6 + 0.8 * family_rng.uniform();
      trace = static_cast<std::size_t>(family) % traces.size();
    }
    const Trace& t = traces[trace];
    SimUnit u;
    u.key.family = std::string(family % 16 < 8 ? "fwd" : "bwd") + "_hdim" + kHdims[family % 8] + "_v" +
                   std::to_string(family / 16);
    u.key.source = "flash_" + u.key.family + "_split" + std::to_string(i % 8) + ".cu";
    u.key.content_hash = "v" + std::to_string(version) + "-h" + std::to_string(i);
    u.key.flags = "-O3 --use_fast_math";
    u.key.archs = t.arch_count == 1 ? "90" : "80,90";
    u.key.compiler = "13.0";
    u.key.arch_count = t.arch_count;
    const double jitter_memory = 0.95 + 0.1 * unit_rng.uniform();
    const double jitter_time = 0.95 + 0.1 * unit_rng.uniform();
    u.truth = t.profile.scaled(family_memory * jitter_memory, family_time * jitter_time);
    u.truth_threads = t.threads;
    units.push_back(std::move(u));
  }
  return units;
}

double lower_bound(const std::vector<SimUnit>& units, const Machine& machine) {
  double cpu = 0, memory_time = 0, longest = 0;
  for (const auto& u : units) {
    double best_cpu = 1e18, best_memory = 1e18, best_duration = 1e18;
    for (int t = 1; t <= std::max(u.key.arch_count, 1); ++t) {
      Profile p = true_profile(u, t);
      best_cpu = std::min(best_cpu, p.duration_s * t);
      best_memory = std::min(best_memory, p.mean() * p.duration_s);
      best_duration = std::min(best_duration, p.duration_s);
    }
    cpu += best_cpu;
    memory_time += best_memory;
    longest = std::max(longest, best_duration);
  }
  return std::max({cpu / machine.cores, memory_time / static_cast<double>(machine.memory), longest});
}

SimResult simulate(const std::vector<SimUnit>& units, const Machine& machine, const Policy& policy,
                   Estimator& estimator) {
  SimResult result;
  std::deque<Waiting> queue;
  for (std::size_t i = 0; i < units.size(); ++i) queue.push_back({i, 0});
  std::vector<Run> running;
  std::vector<int> kills(units.size(), 0);

  SchedulerConfig config;
  config.cores = machine.cores;
  config.nvcc_threads = policy.fad_threads;
  Scheduler scheduler(config, estimator);
  auto capacity = static_cast<std::uint64_t>(static_cast<double>(machine.memory) * 0.9);

  double now = 0, next_decide = 0, memory_time = 0, next_launch = 0;
  bool changed = true;
  while ((!queue.empty() || !running.empty()) && now < kGiveUpS && result.finished) {
    switch (policy.kind) {
      case PolicyKind::fad:
        if (changed || now >= next_decide) {
          decide_fad(scheduler, estimator, units, machine, now, queue, running, result);
          next_decide = now + kDecideEveryS;
          changed = false;
        }
        break;
      case PolicyKind::fixed_jobs:
        while (static_cast<int>(running.size()) < policy.jobs && !queue.empty()) {
          running.push_back(start_run(units, queue.front().unit, policy.threads, now));
          queue.pop_front();
        }
        break;
      case PolicyKind::mem_available: {
        // A launcher script that polls once a second.
        if (now < next_launch || queue.empty()) break;
        std::uint64_t usage = 0;
        for (const auto& r : running) usage += r.current;
        if (machine.memory > usage && machine.memory - usage > policy.threshold) {
          running.push_back(start_run(units, queue.front().unit, policy.threads, now));
          queue.pop_front();
        }
        next_launch = now + 1;
        break;
      }
      case PolicyKind::pause_retry: step_pause_retry(units, machine, policy, now, queue, running, result); break;
    }

    // Advance: oversubscribed cores slow every running unit alike.
    int busy = 0;
    for (const auto& r : running)
      if (!r.suspended) busy += effective_parallelism(r.threads, units[r.unit].key.arch_count);
    double rate = busy > machine.cores ? static_cast<double>(machine.cores) / busy : 1.0;
    now += kStepS;
    std::uint64_t usage = 0;
    for (auto& r : running) {
      if (!r.suspended) r.progress += kStepS * rate;
      r.current = r.truth.at(std::min(r.progress, r.truth.duration_s - 1e-9));
      r.peak = std::max(r.peak, r.current);
      r.samples.emplace_back(now - r.started_at, r.current);
      usage += r.current;
    }
    result.peak_bytes = std::max(result.peak_bytes, usage);
    memory_time += static_cast<double>(usage) * kStepS;
    if (usage > capacity) result.over_capacity_s += kStepS;

    // The OOM killer takes the newest unit until memory suffices.
    while (usage > machine.memory && !running.empty()) {
      auto newest = std::max_element(running.begin(), running.end(),
                                     [](const Run& a, const Run& b) { return a.started_at < b.started_at; });
      usage -= newest->current;
      ++result.oom_kills;
      if (++kills[newest->unit] > kMaxReruns) result.finished = false;
      if (policy.kind == PolicyKind::fad)
        queue.push_front({newest->unit, newest->peak + newest->peak / 4});
      else
        queue.push_back({newest->unit, 0});
      running.erase(newest);
      changed = true;
    }

    // Finished units leave; fad learns their measured profile.
    for (auto it = running.begin(); it != running.end();) {
      if (it->progress < it->truth.duration_s) {
        ++it;
        continue;
      }
      if (policy.kind == PolicyKind::fad) {
        Observation obs{units[it->unit].key, it->threads, Profile{}};
        obs.profile.points = std::move(it->samples);
        obs.profile.duration_s = now - it->started_at;
        estimator.learn(obs);
      }
      it = running.erase(it);
      changed = true;
    }
  }
  if (now >= kGiveUpS) result.finished = false;
  result.makespan_s = now;
  result.mean_utilisation = now > 0 ? memory_time / now / static_cast<double>(machine.memory) : 0;
  return result;
}

}  // namespace fad::sim
