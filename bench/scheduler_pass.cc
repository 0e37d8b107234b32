// fad_sched_bench: what one scheduling pass costs fadd's event loop with a
// long queue. A shared fadd may hold tens of thousands of queued units
// (several users' full FlashAttention builds); every tick (poll_interval_ms)
// the daemon orders them by fair share and asks the scheduler what to start,
// both of which ask the estimator about every queued unit. Prints the median
// and spread of a pass's CPU time per queue length, with half the families
// learned from finished units, a quarter known only from running siblings
// and the rest never seen.
//
//   fad_sched_bench [--units 17200,4000,500] [--passes 20]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "policy/estimator.h"
#include "policy/fair_share.h"
#include "policy/scheduler.h"

using namespace fad;

namespace {

constexpr int kFamilies = 120;

UnitKey key_of(int unit) {
  UnitKey k;
  const int family = unit % kFamilies;
  k.family = "family_" + std::to_string(family);
  k.source = "src/" + k.family + "_" + std::to_string(unit) + ".cu";
  k.content_hash = std::to_string(static_cast<long long>(unit) * 7919);
  k.flags = "-O3 --use_fast_math -gencode arch=compute_90,code=sm_90";
  k.archs = "90";
  k.compiler = "release 13.0";
  k.arch_count = 1;
  return k;
}

Profile trace(std::uint64_t peak, double seconds) {
  Profile p;
  for (int i = 0; i <= 40; ++i) p.points.emplace_back(seconds * i / 40, peak * (i < 8 ? i + 2 : 10) / 10);
  p.duration_s = seconds;
  return p;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> sizes{17200, 4000, 500};
  int passes = 20;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--units") {
      sizes.clear();
      std::stringstream ss(argv[i + 1]);
      for (std::string n; std::getline(ss, n, ',');) sizes.push_back(std::atoi(n.c_str()));
    } else if (a == "--passes") {
      passes = std::max(1, std::atoi(argv[i + 1]));
    } else {
      std::fprintf(stderr, "fad_sched_bench: unknown option %s (use --units N,N --passes N)\n", a.c_str());
      return 2;
    }
  }
  std::printf("queued units | pass median ms | min-max ms | per unit us\n");
  for (int n : sizes) {
    Estimator estimator(EstimatorConfig{});
    // Half the families learned (a unit of each finished), a quarter with a
    // sibling running past its spike, the rest unknown.
    for (int f = 0; f < kFamilies / 2; ++f)
      estimator.learn(Observation{key_of(1000000 + f), 1, trace(3ull << 30, 300)});
    std::vector<RunningObservation> running;
    std::vector<RunningUnit> live;
    for (int f = kFamilies / 2; f < 3 * kFamilies / 4; ++f) {
      RunningObservation o{key_of(2000000 + f), 1, trace(4ull << 30, 60), 5ull << 30};
      running.push_back(o);
      RunningUnit r;
      r.id = 2000000 + f;
      r.started_at = 0;
      r.predicted = trace(5ull << 30, 300);
      r.current_bytes = r.peak_bytes = 4ull << 30;
      r.build_id = 1;
      live.push_back(r);
    }
    SchedulerConfig cfg;
    cfg.cores = 64;
    Scheduler scheduler(cfg, estimator);
    std::vector<QueuedUnit> queue;
    for (int u = 0; u < n; ++u) {
      QueuedUnit q;
      q.id = u + 1;
      q.build_id = 1 + u % 40;
      q.key = key_of(u);
      q.source_bytes = 10000 + u % 977;
      queue.push_back(q);
    }
    MemorySnapshot snap;
    snap.total = 256ull << 30;
    snap.available = 8ull << 30;  // little free: most of the queue waits, as in a long build
    snap.swap_total = 0;
    std::vector<double> ms;
    for (int p = 0; p < passes; ++p) {
      const auto t0 = std::chrono::steady_clock::now();
      // What Engine::schedule does each tick: new running evidence, the fair
      // share order (one estimate per unit), then the decision.
      for (auto& o : running) o.so_far.duration_s += 0.5;
      estimator.observe_running(running);
      std::vector<ShareCandidate> candidates;
      for (const auto& q : queue)
        candidates.push_back(ShareCandidate{static_cast<uid_t>(1000 + q.build_id % 4), q.build_id,
                                            estimator.estimate(q.key, 1, q.manifest_prior).peak()});
      auto order = fair_share_order(candidates, {});
      auto plan = scheduler.decide(60.0 + p * 0.5, snap, queue, live);
      const auto t1 = std::chrono::steady_clock::now();
      if (order.size() != queue.size()) return 1;  // keeps the work observable
      (void)plan;
      ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    }
    const double med = median(ms);
    std::printf("%12d | %14.1f | %5.1f-%-6.1f | %11.2f\n", n, med, *std::min_element(ms.begin(), ms.end()),
                *std::max_element(ms.begin(), ms.end()), med * 1000.0 / n);
  }
  return 0;
}
