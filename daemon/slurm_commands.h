// The Slurm commands fadd runs, as argument vectors (never through a shell):
// the pilot allocation, one step per unit, and the queries that watch them.
// Pure: building a command is separate from running it (slurm_executor.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/slurm_config.h"

namespace fad::slurm {

/// Every step and job fad makes is named so: "fad-u<unit id>".
std::string step_name(std::int64_t unit_id);
/// The unit id in a step name, 0 when it is not one of fad's.
std::int64_t unit_of_step_name(const std::string& name);

/// `salloc --no-shell ...`: the pilot allocation. --no-kill keeps it when one
/// of its nodes fails (that node's units are requeued, the rest go on).
std::vector<std::string> salloc_argv(const SlurmConfig& config);

/// What one unit's step asks for.
struct StepRequest {
  std::int64_t unit_id = 0;
  std::int64_t job_id = 0;   ///< the allocation; 0 in job-per-unit mode
  std::string node;          ///< where fad placed it ("" = Slurm chooses, job-per-unit only)
  int threads = 1;           ///< -c
  std::uint64_t memory = 0;  ///< --mem, bytes (rounded up to MiB)
  std::string wrapper;       ///< fad-step
  std::string report_path;   ///< the wrapper's report file
  std::int64_t launched_ms = 0;
};

/// The srun command line up to and including the wrapper's "--": the program
/// and its arguments follow. In allocation mode the step uses --overlap: fad's
/// own admission already keeps the steps' predicted peaks, staggered, under
/// each node's memory, and Slurm's cgroup still confines each step to its
/// --mem; without it Slurm would reserve every step's peak for its whole life.
std::vector<std::string> srun_prefix(const SlurmConfig& config, const StepRequest& step);

/// Sends `signal` (e.g. "STOP") to a step "JOB.STEP", or cancels it when empty.
std::vector<std::string> scancel_argv(const std::string& step_id, const std::string& signal);
/// Cancels the allocation.
std::vector<std::string> scancel_job_argv(std::int64_t job_id);
std::vector<std::string> show_job_argv(std::int64_t job_id);
std::vector<std::string> show_nodes_argv();
/// The job's running steps: "id|name|node" lines.
std::vector<std::string> squeue_steps_argv(std::int64_t job_id);
/// MaxRSS of every running step of the job: "id|maxrss" lines.
std::vector<std::string> sstat_argv(std::int64_t job_id);
/// The probe step: fad-step --probe PATH... on one node.
std::vector<std::string> probe_argv(const SlurmConfig& config, std::int64_t job_id, const std::string& node,
                                    const std::string& wrapper, const std::vector<std::string>& paths);

}  // namespace fad::slurm
