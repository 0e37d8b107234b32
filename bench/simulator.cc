// The build simulator (see simulator.h). Time advances in 1 s steps: every
// running unit progresses by min(1, cores / running threads) seconds of its own
// time (CPU oversubscription slows everyone alike) and uses its true profile's
// memory at that progress. When true use exceeds the machine's memory, the
// kernel's OOM killer takes the newest unit; it is requeued and starts over.
#include "bench/simulator.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <optional>

#include "policy/scheduler.h"

namespace fad::sim {
namespace {

constexpr double kStepS = 1;
/// fad's daemon polls every 0.5 s; deciding every 5 s (and on every finish) is
/// close enough for units that run minutes, and keeps the simulation fast.
constexpr double kDecideEveryS = 5;
/// fad is handed the head of the queue only: it never looks deeper (kBackfillDepth).
constexpr std::size_t kQueueWindow = 72;
constexpr double kGiB = 1024.0 * 1024 * 1024;
constexpr double kGiveUpS = 1e6;  // a livelocked fixed-N build counts as never finishing

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
};

int effective(int threads, int arch_count) { return std::max(1, std::min(threads, std::max(arch_count, 1))); }

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
        Run r;
        r.unit = unit;
        r.threads = d.threads;
        r.started_at = now;
        r.truth = true_profile(units[unit], d.threads);
        r.predicted = d.predicted;
        r.guess = d.guess;
        r.current = r.truth.at(0);
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
          queue.push_front({unit, run->peak});
          running.erase(run);
          ++result.requeues;
        }
        break;
    }
  }
}

}  // namespace

Profile true_profile(const SimUnit& unit, int threads) {
  int e_ref = effective(unit.truth_threads, unit.key.arch_count);
  int e = effective(threads, unit.key.arch_count);
  double memory = 0.3 + 0.7 * e / e_ref;
  double time = std::pow(static_cast<double>(e_ref) / e, 0.85);
  return unit.truth.scaled(memory, time);
}

std::vector<SimUnit> make_workload(const std::vector<Trace>& traces, int count, std::uint64_t seed) {
  static const char* kHdims[] = {"32", "64", "96", "128", "160", "192", "224", "256"};
  SplitMix rng{seed};
  std::vector<SimUnit> units;
  double family_memory = 1, family_time = 1;
  std::size_t trace = 0;
  for (int i = 0; i < count; ++i) {
    int family = i / 8;
    if (i % 8 == 0) {
      family_memory = 0.6 + 0.55 * rng.uniform();
      family_time = 0.6 + 0.8 * rng.uniform();
      trace = static_cast<std::size_t>(family) % traces.size();
    }
    const Trace& t = traces[trace];
    SimUnit u;
    u.key.family = std::string(family % 16 < 8 ? "fwd" : "bwd") + "_hdim" + kHdims[family % 8] + "_v" +
                   std::to_string(family / 16);
    u.key.source = "flash_" + u.key.family + "_split" + std::to_string(i % 8) + ".cu";
    u.key.content_hash = "h" + std::to_string(i);
    u.key.flags = "-O3 --use_fast_math";
    u.key.archs = t.arch_count == 1 ? "90" : "80,90";
    u.key.compiler = "13.0";
    u.key.arch_count = t.arch_count;
    u.truth =
        t.profile.scaled(family_memory * (0.95 + 0.1 * rng.uniform()), family_time * (0.95 + 0.1 * rng.uniform()));
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

  int jobs = policy.jobs, threads = policy.threads;
  if (policy.kind == PolicyKind::flash_attention) {
    // setup.py: max_jobs = min(cpus / 2, free_GB / (5 * NVCC_THREADS)), at least 1.
    int by_memory = static_cast<int>(static_cast<double>(machine.memory) / kGiB / (5.0 * threads));
    jobs = std::max(1, std::min(machine.cores / 2, by_memory));
  }
  SchedulerConfig config;
  config.cores = machine.cores;
  Scheduler scheduler(config, estimator);
  auto capacity = static_cast<std::uint64_t>(static_cast<double>(machine.memory) * 0.9);

  double now = 0, next_decide = 0, memory_time = 0;
  bool changed = true;
  while ((!queue.empty() || !running.empty()) && now < kGiveUpS) {
    if (policy.kind == PolicyKind::fad) {
      if (changed || now >= next_decide) {
        std::vector<QueuedUnit> waiting;
        for (std::size_t i = 0; i < queue.size() && i < kQueueWindow; ++i) {
          QueuedUnit q;
          q.id = static_cast<std::int64_t>(queue[i].unit);
          q.key = units[queue[i].unit].key;
          q.requeued_peak = queue[i].requeued_peak;
          waiting.push_back(std::move(q));
        }
        std::vector<RunningUnit> active;
        std::uint64_t usage = 0;
        for (const auto& r : running) {
          active.push_back({static_cast<std::int64_t>(r.unit), r.started_at, r.threads, r.predicted, r.current, r.peak,
                            r.suspended, r.suspended_at, r.guess});
          usage += r.current;
        }
        MemorySnapshot snap;
        snap.total = machine.memory;
        snap.available = machine.memory > usage ? machine.memory - usage : 0;
        apply(scheduler.decide(now, snap, waiting, active), now, units, queue, running, result);
        next_decide = now + kDecideEveryS;
        changed = false;
      }
    } else {
      while (static_cast<int>(running.size()) < jobs && !queue.empty()) {
        Run r;
        r.unit = queue.front().unit;
        r.threads = threads;
        r.started_at = now;
        r.truth = true_profile(units[r.unit], threads);
        running.push_back(std::move(r));
        queue.pop_front();
      }
    }

    // Advance: oversubscribed cores slow every running unit alike.
    int busy = 0;
    for (const auto& r : running)
      if (!r.suspended) busy += effective(r.threads, units[r.unit].key.arch_count);
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

    // The OOM killer takes the newest unit until memory suffices; it starts over later.
    while (usage > machine.memory && !running.empty()) {
      auto newest = std::max_element(running.begin(), running.end(),
                                     [](const Run& a, const Run& b) { return a.started_at < b.started_at; });
      usage -= newest->current;
      queue.push_front({newest->unit, newest->peak});
      running.erase(newest);
      ++result.oom_kills;
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
  result.makespan_s = now;
  result.mean_utilisation = now > 0 ? memory_time / now / static_cast<double>(machine.memory) : 0;
  return result;
}

}  // namespace fad::sim
