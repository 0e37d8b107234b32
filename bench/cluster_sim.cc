// The cluster simulator; see cluster_sim.h. Time advances in 1 s steps as in
// simulator.cc: on each node, running units progress by min(1, cores / busy
// threads) seconds of their own time and use their true profile's memory.
#include "bench/cluster_sim.h"

#include <algorithm>
#include <cmath>
#include <deque>

#include "common/slurm_config.h"
#include "policy/scheduler.h"

namespace fad::sim {
namespace {

constexpr double kStepS = 1;
constexpr double kDecideEveryS = 5;  // and on every finish, as in simulator.cc
constexpr double kGiveUpS = 2e5;     // a build that keeps getting killed never finishes

struct Run {
  std::size_t unit = 0;
  int node = 0;
  int threads = 1;
  double started_at = 0, progress = 0;
  Profile truth, predicted;
  std::uint64_t limit = 0;  ///< the step's cgroup limit; 0 = none
  std::uint64_t current = 0, peak = 0;
  bool suspended = false, guess = false;
  double suspended_at = 0;
  std::vector<std::pair<double, std::uint64_t>> samples;
};

struct Waiting {
  std::size_t unit = 0;
  std::uint64_t requeued_peak = 0;
};

int effective(int threads, int arch_count) { return std::max(1, std::min(threads, std::max(arch_count, 1))); }

}  // namespace

double cluster_lower_bound(const std::vector<SimUnit>& units, const Cluster& cluster) {
  Machine all{cluster.cores * cluster.nodes, cluster.memory * static_cast<std::uint64_t>(cluster.nodes)};
  return lower_bound(units, all);
}

ClusterResult simulate_cluster(const std::vector<SimUnit>& units, const Cluster& cluster, const ClusterPolicy& policy,
                               Estimator& estimator) {
  ClusterResult result;
  std::deque<Waiting> queue;
  for (std::size_t i = 0; i < units.size(); ++i) queue.push_back({i, 0});
  std::vector<Run> running;
  SlurmConfig slurm;  // the step margin fadd uses
  SchedulerConfig config;
  config.cores = cluster.cores;
  Scheduler scheduler(config, estimator);

  auto start = [&](std::size_t unit, int node, int threads, double now) {
    Run r;
    r.unit = unit;
    r.node = node;
    r.threads = threads;
    r.started_at = now;
    r.truth = true_profile(units[unit], threads);
    r.current = r.truth.at(0);
    running.push_back(std::move(r));
    return &running.back();
  };

  double now = 0, next_decide = 0, utilisation = 0;
  bool changed = true;
  while ((!queue.empty() || !running.empty()) && now < kGiveUpS) {
    if (policy.kind == ClusterPolicyKind::fad) {
      if (changed || now >= next_decide) {
        for (int node = 0; node < cluster.nodes && !queue.empty(); ++node) {
          std::vector<QueuedUnit> waiting;
          for (std::size_t i = 0; i < queue.size(); ++i) {  // the whole queue, as engine_nodes.cc
            QueuedUnit q;
            q.id = static_cast<std::int64_t>(queue[i].unit);
            q.key = units[queue[i].unit].key;
            q.requeued_peak = queue[i].requeued_peak;
            waiting.push_back(std::move(q));
          }
          std::vector<RunningUnit> active;
          std::uint64_t usage = 0;
          for (const auto& r : running) {
            if (r.node != node) continue;
            active.push_back({static_cast<std::int64_t>(r.unit), r.started_at, r.threads, r.predicted, r.current,
                              r.peak, r.suspended, r.suspended_at, r.guess});
            usage += r.current;
          }
          MemorySnapshot snap;
          snap.total = cluster.memory;
          snap.available = cluster.memory > usage ? cluster.memory - usage : 0;
          auto plan = scheduler.decide(now, snap, waiting, active);
          for (const auto& d : plan.decisions) {
            auto unit = static_cast<std::size_t>(d.unit);
            auto run = std::find_if(running.begin(), running.end(), [&](const Run& r) { return r.unit == unit; });
            if (d.kind == Decision::Kind::start) {
              auto it = std::find_if(queue.begin(), queue.end(), [&](const Waiting& w) { return w.unit == unit; });
              if (it == queue.end()) continue;
              queue.erase(it);
              Run* r = start(unit, node, d.threads, now);
              r->predicted = d.predicted;
              r->guess = d.guess;
              r->limit = step_memory(slurm, d.estimate_bytes);
            } else if (run != running.end()) {
              if (d.kind == Decision::Kind::suspend) run->suspended = true, run->suspended_at = now;
              if (d.kind == Decision::Kind::resume) run->suspended = false;
              if (d.kind == Decision::Kind::requeue) {
                queue.push_front({unit, run->peak});
                running.erase(run);
                ++result.requeues;
              }
            }
          }
        }
        next_decide = now + kDecideEveryS;
        changed = false;
      }
    } else {
      // Slurm's placement: first node with room, in queue order (no backfill
      // is needed: every unit asks for the same).
      for (int node = 0; node < cluster.nodes; ++node) {
        int used = 0;
        std::uint64_t declared = 0;
        for (const auto& r : running)
          if (r.node == node) used += r.threads, declared += policy.mem;
        while (!queue.empty() && used + policy.threads <= cluster.cores &&
               (policy.kind == ClusterPolicyKind::cpu_only || declared + policy.mem <= cluster.memory)) {
          Run* r = start(queue.front().unit, node, policy.threads, now);
          r->limit = policy.kind == ClusterPolicyKind::fixed_mem ? policy.mem : 0;
          queue.pop_front();
          used += policy.threads;
          declared += policy.mem;
        }
      }
    }

    // Advance each node; oversubscribed cores slow its units alike.
    now += kStepS;
    std::vector<int> busy(static_cast<std::size_t>(cluster.nodes), 0);
    for (const auto& r : running)
      if (!r.suspended) busy[static_cast<std::size_t>(r.node)] += effective(r.threads, units[r.unit].key.arch_count);
    std::vector<std::uint64_t> usage(static_cast<std::size_t>(cluster.nodes), 0);
    for (auto& r : running) {
      const int b = busy[static_cast<std::size_t>(r.node)];
      const double rate = b > cluster.cores ? static_cast<double>(cluster.cores) / b : 1.0;
      if (!r.suspended) r.progress += kStepS * rate;
      r.current = r.truth.at(std::min(r.progress, r.truth.duration_s - 1e-9));
      r.peak = std::max(r.peak, r.current);
      r.samples.emplace_back(now - r.started_at, r.current);
      usage[static_cast<std::size_t>(r.node)] += r.current;
    }
    for (auto u : usage) utilisation += static_cast<double>(u) / static_cast<double>(cluster.memory);

    // A step past its cgroup limit is killed by it; a node past its memory,
    // by the kernel (newest unit first). Both rerun later.
    for (auto it = running.begin(); it != running.end();) {
      if (it->limit == 0 || it->current <= it->limit) {
        ++it;
        continue;
      }
      usage[static_cast<std::size_t>(it->node)] -= it->current;
      queue.push_front({it->unit, it->peak + it->peak / 4});
      it = running.erase(it);
      ++result.oom_kills;
      changed = true;
    }
    for (int node = 0; node < cluster.nodes; ++node) {
      while (usage[static_cast<std::size_t>(node)] > cluster.memory) {
        auto newest = running.end();
        for (auto it = running.begin(); it != running.end(); ++it)
          if (it->node == node && (newest == running.end() || it->started_at > newest->started_at)) newest = it;
        if (newest == running.end()) break;
        usage[static_cast<std::size_t>(node)] -= newest->current;
        queue.push_front({newest->unit, newest->peak + newest->peak / 4});
        running.erase(newest);
        ++result.oom_kills;
        changed = true;
      }
    }

    for (auto it = running.begin(); it != running.end();) {
      if (it->progress < it->truth.duration_s) {
        ++it;
        continue;
      }
      if (policy.kind == ClusterPolicyKind::fad) {
        Observation obs{units[it->unit].key, it->threads, Profile{}};
        obs.profile.points = std::move(it->samples);
        obs.profile.duration_s = now - it->started_at;
        estimator.learn(obs);
      }
      it = running.erase(it);
      changed = true;
    }
  }
  result.finished = queue.empty() && running.empty();
  result.makespan_s = now;
  result.mean_node_utilisation = now > 0 ? utilisation / now / cluster.nodes : 0;
  return result;
}

}  // namespace fad::sim
