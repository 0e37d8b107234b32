// The scheduler tests' harness: fake time and fake memory drive decide(); it
// carries decisions out the way the daemon would and tracks true memory.
#pragma once

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "policy/scheduler.h"

namespace fad::test {

constexpr std::uint64_t kGiB = 1ull << 30;

inline UnitKey key(const std::string& source, int arch_count = 1) {
  UnitKey k;
  k.source = source;
  k.content_hash = "h";
  k.archs = arch_count == 1 ? "90" : "80,90";
  k.family = "fam-" + source;
  k.arch_count = arch_count;
  return k;
}

/// A unit shaped like the traces: 4 GiB for a minute, then a 0.5 GiB plateau.
inline Profile spike_then_plateau() {
  Profile p;
  p.points = {{0, 4 * kGiB}, {60, kGiB / 2}};
  p.duration_s = 300;
  return p;
}

/// Carries decisions out like the daemon: starts move queue -> running, and the
/// true memory of a running unit is its predicted profile at its age.
struct Harness {
  Estimator estimator{EstimatorConfig{5 * kGiB, 120}};
  SchedulerConfig config;
  MemorySnapshot memory;
  std::vector<QueuedUnit> queue;
  std::vector<RunningUnit> running;
  std::map<std::int64_t, double> started_at;

  Harness() {
    config.reserve = Reserve{0, 0};
    config.cores = 16;
    memory.total = 64 * kGiB;
  }

  void enqueue(std::int64_t id, const UnitKey& k, std::optional<ManifestPrior> prior = std::nullopt,
               std::int64_t build = 0) {
    QueuedUnit u;
    u.id = id;
    u.build_id = build;
    u.key = k;
    u.manifest_prior = prior;
    queue.push_back(u);
  }

  std::uint64_t usage() const {
    std::uint64_t sum = 0;
    for (const auto& r : running) sum += r.current_bytes;
    return sum;
  }

  /// Advances true memory to `now`, drops finished units, decides and applies.
  SchedulePlan step(double now) {
    std::erase_if(running, [&](const RunningUnit& r) { return now - r.started_at >= r.predicted.duration_s; });
    for (auto& r : running) {
      r.current_bytes = r.predicted.at(now - r.started_at);
      r.peak_bytes = std::max(r.peak_bytes, r.current_bytes);
    }
    memory.available = memory.total - usage();
    Scheduler scheduler(config, estimator);
    SchedulePlan plan = scheduler.decide(now, memory, queue, running);
    for (const auto& d : plan.decisions) {
      if (d.kind != Decision::Kind::start) continue;
      auto it = std::find_if(queue.begin(), queue.end(), [&](const QueuedUnit& q) { return q.id == d.unit; });
      REQUIRE(it != queue.end());
      RunningUnit r;
      r.id = d.unit;
      r.started_at = now;
      r.threads = d.threads;
      r.predicted = d.predicted;
      r.guess = d.guess;
      r.current_bytes = d.predicted.at(0);
      r.build_id = it->build_id;
      r.arch_count = it->key.arch_count;
      running.push_back(r);
      started_at[d.unit] = now;
      queue.erase(it);
    }
    return plan;
  }
};

inline RunningUnit running_unit(std::int64_t id, double started_at, std::uint64_t current, double duration = 300) {
  RunningUnit r;
  r.id = id;
  r.started_at = started_at;
  r.predicted = Profile::flat(current, duration);
  r.current_bytes = current;
  r.peak_bytes = current;
  return r;
}

inline const Decision* find(const SchedulePlan& plan, Decision::Kind kind) {
  for (const auto& d : plan.decisions)
    if (d.kind == kind) return &d;
  return nullptr;
}

}  // namespace fad::test
