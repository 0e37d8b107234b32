// The build simulator extended to a cluster of N identical nodes, as Slurm
// runs it (see simulator.h for the units and their true profiles). Three ways
// to place units:
//   - fad: the Slurm executor's policy, fad's own Scheduler called once per
//     node with that node's memory and running units, each unit a step whose
//     cgroup limit is fad's estimate + margin (an overrun is a step OOM kill:
//     requeued with its peak + 25%, as fadd does);
//   - fixed_mem: Slurm steps with one declared --mem for every unit (what
//     sites do today): Slurm packs a node while the declared memory and cores
//     fit; a unit whose true peak exceeds the declaration is OOM-killed by its
//     cgroup and, resubmitted with the same --mem, again;
//   - cpu_only: placement by free cores only, memory unknown (how sccache-dist
//     schedules): the node's OOM killer takes the newest unit when the sum of
//     true use exceeds the node's memory.
// Pure: no clock, no I/O.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bench/simulator.h"

namespace fad::sim {

struct Cluster {
  int nodes = 4;
  int cores = 32;                      ///< per node
  std::uint64_t memory = 64ull << 30;  ///< per node
};

enum class ClusterPolicyKind { fad, fixed_mem, cpu_only };

struct ClusterPolicy {
  ClusterPolicyKind kind = ClusterPolicyKind::fad;
  std::string name;
  std::uint64_t mem = 0;  ///< fixed_mem: the declared --mem per unit
  int threads = 1;        ///< fixed_mem / cpu_only: -c and nvcc --threads
};

struct ClusterResult {
  double makespan_s = 0;
  int oom_kills = 0;  ///< step cgroup kills plus node OOM kills
  int requeues = 0;   ///< fad: units stopped under pressure and rerun
  bool finished = true;
  double mean_node_utilisation = 0;  ///< true use / memory, averaged over nodes and time
};

/// Runs the whole build on the cluster. For fad, `estimator` is consulted and
/// taught (pass one that learnt from an earlier build for a warm run).
ClusterResult simulate_cluster(const std::vector<SimUnit>& units, const Cluster& cluster, const ClusterPolicy& policy,
                               Estimator& estimator);

/// The lower bound on the makespan: the one-machine bound of a machine with
/// all the cluster's cores and memory, and never below the longest unit.
double cluster_lower_bound(const std::vector<SimUnit>& units, const Cluster& cluster);

}  // namespace fad::sim
