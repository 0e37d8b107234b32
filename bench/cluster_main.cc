// fad_cluster_sim: a FlashAttention-3-sized build (290 units) on a Slurm
// cluster of 4 nodes x 32 cores x 64 GiB, placed by fad (its scheduler per
// node, steps sized by its estimates), by Slurm with one declared --mem per
// step, and by free cores only. Prints a table; --json FILE writes every row.
// Figures, not a test.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "bench/cluster_sim.h"

namespace {

namespace sim = fad::sim;
constexpr std::uint64_t kGiB = 1ull << 30;
constexpr std::uint64_t kSeed = 20261123;  // the one-machine simulator's workload

/// Reads a trace: '#' comment lines, then "seconds<TAB>MiB" per sample.
std::optional<fad::Profile> read_trace(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  fad::Profile p;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    double t = 0, mib = 0;
    if (!(fields >> t >> mib)) continue;
    p.points.emplace_back(t, static_cast<std::uint64_t>(mib * 1024 * 1024));
  }
  if (p.points.size() < 2) return std::nullopt;
  p.duration_s = p.points.back().first + (p.points.back().first - p.points[p.points.size() - 2].first);
  return p;
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir = FAD_TRACES_DIR, json_path;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::printf(
          "usage: fad_cluster_sim [--json FILE] [TRACES_DIR]\n"
          "Simulates 290 units on 4 nodes x 32 cores x 64 GiB: fad (its scheduler per node, steps\n"
          "sized by its estimates), Slurm steps with a fixed declared --mem, and placement by free\n"
          "cores only; prints makespan and OOM kills. TRACES_DIR defaults to bench/traces.\n");
      return 0;
    }
    if (a == "--json" && i + 1 < argc)
      json_path = argv[++i];
    else
      dir = a;
  }
  // 1. The workload of the one-machine simulator, from the two measured traces.
  auto one = read_trace(dir + "/fwd128_fp16_sm90_t1.tsv");
  auto two = read_trace(dir + "/fwd64_bf16_sm80sm90_t2.tsv");
  if (!one || !two) {
    std::fprintf(stderr, "fad_cluster_sim: cannot read the traces in %s\n", dir.c_str());
    return 1;
  }
  const auto units = sim::make_workload({{*one, 1, 1}, {*two, 2, 2}}, 290, kSeed);
  const sim::Cluster cluster{4, 32, 64 * kGiB};
  const double bound = sim::cluster_lower_bound(units, cluster);
  auto started = std::chrono::steady_clock::now();

  // 2. Every policy.
  std::vector<sim::ClusterPolicy> policies = {{sim::ClusterPolicyKind::fad, "fad cold", 0, 0},
                                              {sim::ClusterPolicyKind::fad, "fad warm", 0, 0}};
  for (int threads : {1, 2})
    for (std::uint64_t gib : {5, 6, 8, 10, 12, 16})
      policies.push_back({sim::ClusterPolicyKind::fixed_mem,
                          "--mem=" + std::to_string(gib) + "G -c" + std::to_string(threads), gib * kGiB, threads});
  for (int threads : {1, 2})
    policies.push_back({sim::ClusterPolicyKind::cpu_only, "cores only -c" + std::to_string(threads), 0, threads});

  std::printf("290 units, 4 nodes x 32 cores x 64 GiB (lower bound %.0f s)\n", bound);
  std::printf("%-20s %10s %6s %8s %6s %7s\n", "policy", "makespan", "OOM", "requeue", "util", "vs LB");
  fad::Estimator estimator(fad::EstimatorConfig{});  // fad warm reuses what fad cold learnt
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& policy : policies) {
    auto r = sim::simulate_cluster(units, cluster, policy, estimator);
    std::printf("%-20s %9.0fs %6d %8d %5.0f%% %6.2fx%s\n", policy.name.c_str(), r.makespan_s, r.oom_kills, r.requeues,
                100 * r.mean_node_utilisation, r.makespan_s / bound, r.finished ? "" : "  (never finished)");
    rows.push_back({{"policy", policy.name},
                    {"makespan_s", r.makespan_s},
                    {"oom_kills", r.oom_kills},
                    {"requeues", r.requeues},
                    {"finished", r.finished},
                    {"mean_node_utilisation", r.mean_node_utilisation},
                    {"vs_lower_bound", r.makespan_s / bound}});
  }
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::printf("(simulated in %.1f s)\n", elapsed);
  if (!json_path.empty()) {
    nlohmann::json out{{"units", 290},
                       {"nodes", cluster.nodes},
                       {"cores_per_node", cluster.cores},
                       {"memory_per_node_bytes", cluster.memory},
                       {"seed", kSeed},
                       {"lower_bound_s", bound},
                       {"rows", rows}};
    std::ofstream(json_path) << out.dump(2) << "\n";
  }
  return 0;
}
