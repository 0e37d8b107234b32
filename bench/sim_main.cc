// fad_sim: compares build policies on simulated FlashAttention-like builds and
// prints one table row per machine, workload and policy. Figures, not a test.
// Usage: fad_sim [TRACES_DIR]
#include <chrono>
#include <optional>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "bench/simulator.h"

namespace {

using fad::Profile;
namespace sim = fad::sim;

constexpr std::uint64_t kGiB = 1ull << 30;
constexpr std::uint64_t kSeed = 20261123;

/// Reads a trace: '#' comment lines, then "seconds<TAB>MiB" per sample.
std::optional<Profile> read_trace(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  Profile p;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    double t = 0, mib = 0;
    if (!(fields >> t >> mib)) continue;
    p.points.emplace_back(t, static_cast<std::uint64_t>(mib * 1024 * 1024));
  }
  if (p.points.size() < 2) return std::nullopt;
  // The last sample holds for one more sampling interval.
  p.duration_s = p.points.back().first + (p.points.back().first - p.points[p.points.size() - 2].first);
  return p;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && (std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h")) {
    std::printf(
        "usage: fad_sim [TRACES_DIR]\n"
        "Simulates 96- and 290-unit builds on 16-64 cores and 32-128 GiB with the real\n"
        "scheduler and estimator, against ninja -j, FlashAttention's heuristic and the\n"
        "lower bound; prints a table. TRACES_DIR defaults to bench/traces.\n");
    return 0;
  }
  std::string dir = argc > 1 ? argv[1] : FAD_TRACES_DIR;
  // 1. The two measured traces: one arch at 1 thread, two archs at 2 threads.
  auto one = read_trace(dir + "/fwd128_fp16_sm90_t1.tsv");
  auto two = read_trace(dir + "/fwd64_bf16_sm80sm90_t2.tsv");
  if (!one || !two) {
    std::fprintf(stderr, "fad_sim: cannot read the traces in %s\n", dir.c_str());
    return 1;
  }
  std::vector<sim::Trace> traces = {{*one, 1, 1}, {*two, 2, 2}};
  auto started = std::chrono::steady_clock::now();

  // 2. Every workload on every machine under every policy.
  std::printf("%-18s %-14s %10s %9s %5s %7s %6s %7s %7s\n", "config", "policy", "makespan", "peak/mem", "OOM",
              "over90%", "util", "susp/rq", "vs LB");
  for (int count : {96, 290}) {
    auto units = sim::make_workload(traces, count, kSeed);
    for (int cores : {16, 32, 64}) {
      for (std::uint64_t gib : {32, 64, 128}) {
        sim::Machine machine{cores, gib * kGiB};
        double bound = sim::lower_bound(units, machine);
        char config[64];
        std::snprintf(config, sizeof config, "%du %dc %lluG", count, cores, static_cast<unsigned long long>(gib));
        fad::Estimator estimator(fad::EstimatorConfig{});
        std::vector<sim::Policy> policies = {
            {sim::PolicyKind::fixed_jobs, "ninja -j" + std::to_string(cores), cores, 1},
            {sim::PolicyKind::flash_attention, "FA setup.py", 0, 2},
            {sim::PolicyKind::fad, "fad cold", 0, 0},
            {sim::PolicyKind::fad, "fad warm", 0, 0},  // the same estimator, having learnt the cold build
        };
        for (const auto& policy : policies) {
          auto r = sim::simulate(units, machine, policy, estimator);
          std::printf("%-18s %-14s %9.0fs %9.2f %5d %6.0fs %5.0f%% %3d/%-3d %6.2fx\n", config, policy.name.c_str(),
                      r.makespan_s, static_cast<double>(r.peak_bytes) / static_cast<double>(machine.memory),
                      r.oom_kills, r.over_capacity_s, 100 * r.mean_utilisation, r.suspends, r.requeues,
                      r.makespan_s / bound);
        }
      }
    }
  }
  double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::printf("(simulated in %.1f s; lower bound = max(CPU time / cores, memory time / memory, longest unit))\n",
              elapsed);
  return 0;
}
