// The config file's `executor` key and its `slurm` object: where and how fadd
// runs compile units when they go to a Slurm cluster instead of this machine.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace fad {

enum class ExecutorKind { local, slurm };

struct SlurmConfig {
  /// "allocation": hold one allocation (a pilot job) and run each unit as a
  /// step in it. "job-per-unit": each unit is a job of its own, for clusters
  /// that forbid pilots (slower: every unit waits in Slurm's queue).
  bool job_per_unit = false;
  int nodes = 1;                        ///< nodes of the allocation
  std::string time_limit = "8:00:00";   ///< its time limit (salloc -t)
  std::string partition;                ///< -p; empty = the cluster's default
  std::string account;                  ///< -A; empty = the user's default
  std::vector<std::string> extra_args;  ///< added to salloc and every srun (e.g. "--qos=build")
  /// Memory a step may use beyond fad's estimate before Slurm's cgroup stops
  /// it: this percentage of the estimate, at least min_margin.
  double memory_margin_percent = 15;
  std::uint64_t min_margin = 128ull << 20;
  /// fad-step on the nodes; empty = the one installed next to fadd.
  std::string step_wrapper;
};

/// Parses the `executor` value; "" when fine, else what is wrong.
std::string parse_executor(const nlohmann::json& v, ExecutorKind& out);
/// Parses the `slurm` object; "" when fine, else what is wrong (every bad key named).
std::string parse_slurm_config(const nlohmann::json& v, SlurmConfig& out);

/// The --mem a step gets for a unit estimated at `estimate` bytes.
std::uint64_t step_memory(const SlurmConfig& config, std::uint64_t estimate);

}  // namespace fad
