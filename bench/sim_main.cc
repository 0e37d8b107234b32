// fad_sim: compares build policies on simulated FlashAttention-like builds.
// Figures, not a test. For every machine and workload it runs every fixed
// setting a user could pick (N jobs x T nvcc threads), the launchers a user
// could use instead of fad, and fad cold and warm, and names the best safe
// fixed setting (the fastest with no OOM kill): the oracle fad must beat;
// also the best one that stays within the memory fad may use (90%).
// Usage: fad_sim [--json] [--fad-threads N] [--only CONFIG,...] [TRACES_DIR]
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "bench/simulator.h"

namespace {

using fad::Profile;
using nlohmann::json;
namespace sim = fad::sim;

constexpr std::uint64_t kGiB = 1ull << 30;
constexpr std::uint64_t kDefaultSeed = 20261123;
/// What users assume per nvcc thread (FlashAttention's setup.py, fad's prior).
constexpr std::uint64_t kPerThreadRule = 5 * kGiB;
/// FlashAttention's setup.py default NVCC_THREADS.
constexpr int kFlashAttentionThreads = 4;

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

struct Row {
  sim::Policy policy;
  sim::SimResult result;
};

json policy_json(const Row& row, const sim::Machine& machine) {
  const auto& r = row.result;
  return {{"name", row.policy.name},
          {"makespan_s", r.finished ? json(r.makespan_s) : json(nullptr)},
          {"oom_kills", r.oom_kills},
          {"peak_bytes", r.peak_bytes},
          {"peak_fraction", static_cast<double>(r.peak_bytes) / static_cast<double>(machine.memory)},
          {"over_90pct_s", r.over_capacity_s},
          {"mean_utilisation", r.mean_utilisation},
          {"suspends", r.suspends},
          {"requeues", r.requeues}};
}

bool safe(const Row& row) { return row.result.finished && row.result.oom_kills == 0; }

/// Safe, and never above the memory fad itself may fill (all but its default
/// 10% reserve): the same room fad is given. The plain oracle may run at 98%
/// of memory, where a machine doing anything else would swap or OOM-kill.
bool within_reserve(const Row& row, const sim::Machine& machine) {
  return safe(row) && static_cast<double>(row.result.peak_bytes) <= 0.9 * static_cast<double>(machine.memory);
}

std::string cell(const Row* row, double bound) {
  if (!row) return "-";
  char buf[64];
  if (!row->result.finished)
    std::snprintf(buf, sizeof buf, "DNF (%d OOM)", row->result.oom_kills);
  else if (row->result.oom_kills > 0)
    std::snprintf(buf, sizeof buf, "%.0fs %.2fx %dOOM", row->result.makespan_s, row->result.makespan_s / bound,
                  row->result.oom_kills);
  else
    std::snprintf(buf, sizeof buf, "%.0fs %.2fx", row->result.makespan_s, row->result.makespan_s / bound);
  return buf;
}

/// The better (safe first, then faster) of the rows whose name starts with `prefix`.
const Row* best_of(const std::vector<Row>& rows, const std::string& prefix) {
  const Row* best = nullptr;
  for (const auto& row : rows) {
    if (row.policy.name.rfind(prefix, 0) != 0) continue;
    auto key = [](const Row& r) { return std::make_pair(!safe(r), r.result.finished ? r.result.makespan_s : 1e18); };
    if (!best || key(row) < key(*best)) best = &row;
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  bool as_json = false;
  int fad_threads = 0;
  std::uint64_t seed = kDefaultSeed;
  std::set<std::string> only;
  std::string dir = FAD_TRACES_DIR;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::printf(
          "usage: fad_sim [--json] [--fad-threads N] [--only CONFIG,...] [--seed N] [TRACES_DIR]\n"
          "Simulates 96- and 290-unit builds on 16-64 cores and 32-128 GiB with the real\n"
          "scheduler and estimator. Policies: every fixed setting jN-tT (N jobs, T nvcc\n"
          "threads; T 1 and 2), FlashAttention's setup.py heuristic, a ninja pool sized\n"
          "memory / peak, a MemAvailable-threshold launcher, pause-at-85%% with\n"
          "cancel-and-retry, fad cold and fad warm (history of the previous version of\n"
          "the sources). Names the best safe fixed setting (no OOM kill) and the best\n"
          "that also stays within the 90%% of memory fad may fill. Prints a table, or\n"
          "with --json one object per configuration.\n"
          "--fad-threads N pins fad's nvcc_threads to N (default: fad chooses per unit).\n"
          "--only runs just the named configurations, e.g. --only 96u-16c-64G,290u-64c-128G.\n"
          "--seed N draws another workload (families' sizes and speeds); the default is\n"
          "the one the committed tables use. Repeat over seeds for a median and spread.\n"
          "TRACES_DIR defaults to bench/traces.\n");
      return 0;
    }
    if (a == "--json") {
      as_json = true;
    } else if (a == "--fad-threads" || a == "--only" || a == "--seed") {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "fad_sim: %s needs a value (see fad_sim --help)\n", a.c_str());
        return 2;
      }
      const std::string v = argv[++i];
      if (a == "--only") {
        std::stringstream list(v);
        for (std::string name; std::getline(list, name, ',');)
          if (!name.empty()) only.insert(name);
        continue;
      }
      if (a == "--seed") {
        char* end = nullptr;
        errno = 0;
        seed = std::strtoull(v.c_str(), &end, 10);
        if (v.empty() || *end != '\0' || v[0] == '-' || errno == ERANGE) {
          std::fprintf(stderr, "fad_sim: --seed must be a whole number, not '%s'\n", v.c_str());
          return 2;
        }
        continue;
      }
      char* end = nullptr;
      const long n = std::strtol(v.c_str(), &end, 10);
      if (v.empty() || *end != '\0' || n < 1 || n > 64) {
        std::fprintf(stderr, "fad_sim: --fad-threads must be a whole number from 1 to 64, not '%s'\n", v.c_str());
        return 2;
      }
      fad_threads = static_cast<int>(n);
    } else if (!a.empty() && a[0] == '-') {
      std::fprintf(stderr, "fad_sim: unknown option %s (see fad_sim --help)\n", a.c_str());
      return 2;
    } else {
      dir = a;
    }
  }
  // 1. The two measured traces: one arch at 1 thread, two archs at 2 threads.
  auto one = read_trace(dir + "/fwd128_fp16_sm90_t1.tsv");
  auto two = read_trace(dir + "/fwd64_bf16_sm80sm90_t2.tsv");
  if (!one || !two) {
    std::fprintf(stderr, "fad_sim: cannot read the traces in %s\n", dir.c_str());
    return 1;
  }
  std::vector<sim::Trace> traces = {{*one, 1, 1}, {*two, 2, 2}};
  const std::vector<int> counts = {96, 290}, core_counts = {16, 32, 64};
  const std::vector<std::uint64_t> memories = {32, 64, 128};
  auto config_name = [](int count, int cores, std::uint64_t gib) {
    return std::to_string(count) + "u-" + std::to_string(cores) + "c-" + std::to_string(gib) + "G";
  };
  for (const auto& name : only) {
    bool known = false;
    for (int count : counts)
      for (int cores : core_counts)
        for (std::uint64_t gib : memories) known = known || name == config_name(count, cores, gib);
    if (!known) {
      std::fprintf(stderr, "fad_sim: --only: no configuration named '%s' (names look like 96u-16c-64G)\n",
                   name.c_str());
      return 2;
    }
  }
  auto started = std::chrono::steady_clock::now();

  // 2. Every workload on every machine under every policy.
  json out = json::array();
  if (!as_json)
    std::printf("%-12s %7s | %-24s %-24s | %-17s %-17s %-17s %-17s %-17s | %-15s %-15s\n", "config", "bound",
                "best safe fixed", "best fixed <= 90% memory", "fa setup.py", "pool mem/peak", "MemAvailable",
                "pause85+retry", "fastest fixed", "fad cold", "fad warm");
  for (int count : counts) {
    const auto units = sim::make_workload(traces, count, seed, 1);
    const auto previous = sim::make_workload(traces, count, seed, 0);  // the sources' previous version
    for (int cores : core_counts) {
      for (std::uint64_t gib : memories) {
        const std::string config = config_name(count, cores, gib);
        if (!only.empty() && !only.count(config)) continue;
        const sim::Machine machine{cores, gib * kGiB};
        const double bound = sim::lower_bound(units, machine);

        std::vector<sim::Policy> policies;
        for (int t : {1, 2})
          for (int j = 1; j <= cores; ++j)
            policies.push_back({sim::PolicyKind::fixed_jobs, "j" + std::to_string(j) + "-t" + std::to_string(t), j, t});
        // setup.py: max_jobs = max(1, min(cpus / 2, free_GB / (5 * NVCC_THREADS))).
        const int fa_jobs = std::max(1, std::min(cores / 2, static_cast<int>(gib / (5 * kFlashAttentionThreads))));
        policies.push_back({sim::PolicyKind::fixed_jobs, "fa-setup.py", fa_jobs, kFlashAttentionThreads});
        for (int t : {1, 2}) {
          // A ninja pool sized memory / peak: the user measured the biggest unit at t threads.
          std::uint64_t peak = 0;
          for (const auto& u : units) peak = std::max(peak, sim::true_profile(u, t).peak());
          const int pool = std::max(1, static_cast<int>(machine.memory * 9 / 10 / std::max<std::uint64_t>(peak, 1)));
          policies.push_back({sim::PolicyKind::fixed_jobs, "pool-t" + std::to_string(t), pool, t});
          policies.push_back({sim::PolicyKind::mem_available, "memavail-t" + std::to_string(t), 0, t,
                              kPerThreadRule * static_cast<std::uint64_t>(t)});
          policies.push_back({sim::PolicyKind::pause_retry, "pause85-t" + std::to_string(t), 0, t});
        }

        std::vector<Row> rows;
        for (const auto& p : policies) {
          fad::Estimator none(fad::EstimatorConfig{});
          rows.push_back({p, sim::simulate(units, machine, p, none)});
        }
        sim::Policy fad_policy;
        fad_policy.fad_threads = fad_threads;
        fad::Estimator cold(fad::EstimatorConfig{});
        fad_policy.name = "fad-cold";
        rows.push_back({fad_policy, sim::simulate(units, machine, fad_policy, cold)});
        fad::Estimator warm(fad::EstimatorConfig{});
        sim::simulate(previous, machine, fad_policy, warm);  // warm: history from the previous version's build
        fad_policy.name = "fad-warm";
        rows.push_back({fad_policy, sim::simulate(units, machine, fad_policy, warm)});

        const Row* oracle = nullptr;
        const Row* reserved = nullptr;
        const Row* fastest = nullptr;
        for (const auto& row : rows) {
          if (row.policy.name.rfind("j", 0) != 0) continue;
          if (row.result.finished && (!fastest || row.result.makespan_s < fastest->result.makespan_s)) fastest = &row;
          if (safe(row) && (!oracle || row.result.makespan_s < oracle->result.makespan_s)) oracle = &row;
          if (within_reserve(row, machine) && (!reserved || row.result.makespan_s < reserved->result.makespan_s))
            reserved = &row;
        }
        json entry = {{"config", config},
                      {"units", count},
                      {"cores", cores},
                      {"memory_bytes", machine.memory},
                      {"lower_bound_s", bound},
                      {"seed", seed},
                      {"best_safe_fixed", oracle ? json(oracle->policy.name) : json(nullptr)},
                      {"best_fixed_within_reserve", reserved ? json(reserved->policy.name) : json(nullptr)},
                      {"fad_nvcc_threads", fad_threads > 0 ? json(fad_threads) : json(nullptr)},
                      {"policies", json::array()}};
        for (const auto& row : rows) entry["policies"].push_back(policy_json(row, machine));
        out.push_back(std::move(entry));
        if (!as_json) {
          const std::string fixed = oracle ? oracle->policy.name + " " + cell(oracle, bound) : std::string("none safe");
          const std::string in_reserve =
              reserved ? reserved->policy.name + " " + cell(reserved, bound) : std::string("none");
          std::printf("%-12s %6.0fs | %-24s %-24s | %-17s %-17s %-17s %-17s %-17s | %-15s %-15s\n", config.c_str(),
                      bound, fixed.c_str(), in_reserve.c_str(), cell(best_of(rows, "fa-setup"), bound).c_str(),
                      cell(best_of(rows, "pool-"), bound).c_str(), cell(best_of(rows, "memavail-"), bound).c_str(),
                      cell(best_of(rows, "pause85-"), bound).c_str(), cell(fastest, bound).c_str(),
                      cell(&rows[rows.size() - 2], bound).c_str(), cell(&rows.back(), bound).c_str());
          std::fflush(stdout);
        }
      }
    }
  }
  if (as_json) {
    std::printf("%s\n", out.dump(1).c_str());
    return 0;
  }
  double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::printf(
      "(simulated in %.1f s; cells: makespan, ratio to the bound; bound = max(CPU time / cores, memory time /\n"
      " memory, longest unit); baselines show the better of 1 and 2 nvcc threads; fastest fixed may OOM)\n",
      elapsed);
  return 0;
}
