// Pure parsers of what Slurm's commands print (scontrol, squeue, sstat,
// salloc and srun's messages), tested on output captured from a real
// slurmctld/slurmd. No I/O: the Slurm executor runs the commands and hands
// their text here. Formats are those of Slurm 22.05 and later; lines a parser
// does not recognise are skipped rather than guessed at.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fad::slurm {

/// "a=1 b=x y=..." (one `scontrol -o` record) as key -> value. A value runs to
/// the next space; later duplicates of a key are dropped (the first wins).
std::map<std::string, std::string> parse_record(std::string_view line);

/// Expands a Slurm hostlist ("node[01-03,7],gpu1") into names; empty on a
/// malformed list.
std::vector<std::string> expand_hostlist(std::string_view list);

/// A size as Slurm prints memory: "4524K", "12M", "1.5G", "3T"; no suffix
/// means KiB (sstat's unit). nullopt when not a size.
std::optional<std::uint64_t> parse_memory(std::string_view text);

/// One node of `scontrol show node -o`.
struct NodeInfo {
  std::string name;
  int cpus = 0;              ///< CPUTot
  std::uint64_t memory = 0;  ///< RealMemory, bytes
  std::string state;         ///< e.g. "IDLE", "ALLOCATED", "DOWN+DRAIN"
};
std::vector<NodeInfo> parse_show_node(std::string_view text);

/// What a job holds on one of its nodes (`scontrol show job -d -o`).
struct JobNode {
  std::string name;
  int cpus = 0;              ///< from CPU_IDs
  std::uint64_t memory = 0;  ///< Mem=, bytes
};

/// One job of `scontrol show job -d -o`.
struct JobInfo {
  std::int64_t id = 0;
  std::string state;   ///< JobState: PENDING, RUNNING, COMPLETING, NODE_FAIL, TIMEOUT, CANCELLED...
  std::string reason;  ///< Reason=
  std::vector<JobNode> nodes;
  std::string end_time;  ///< EndTime=
};
std::optional<JobInfo> parse_show_job(std::string_view text);

/// Whether a job in this state can run steps.
bool job_state_running(std::string_view state);

/// The job id in salloc's "Granted job allocation N" / "Pending job allocation N".
std::optional<std::int64_t> parse_salloc_job_id(std::string_view text);
/// Whether salloc's messages say the allocation was granted.
bool salloc_granted(std::string_view text);

/// One step of `squeue -s -h -o '%i|%j|%N'`.
struct StepEntry {
  std::string id;  ///< "JOB.STEP"
  std::string name;
  std::string node;
};
std::vector<StepEntry> parse_squeue_steps(std::string_view text);

/// `sstat -a -n -P -o JobID,MaxRSS ...`: step id -> its MaxRSS in bytes.
std::map<std::string, std::uint64_t> parse_sstat_max_rss(std::string_view text);

/// How a step ended, from srun's own messages (its exit status alone does not
/// tell: srun exits 0 when the step's node fails).
enum class StepEnd {
  normal,                  ///< nothing from Slurm: the program's exit status stands
  out_of_memory,           ///< the step's cgroup limit (--mem) was hit: OOM-killed
  node_failure,            ///< its node failed
  allocation_gone,         ///< the job ended (time limit, cancelled) or is unknown
  controller_unreachable,  ///< srun could not reach slurmctld; nothing ran
  step_refused,            ///< Slurm would not create the step (bad request, no resources)
};
StepEnd classify_srun(std::string_view stderr_text);
const char* to_string(StepEnd end);

/// Whether a command's messages say slurmctld could not be reached.
bool controller_unreachable(std::string_view text);

/// Whether srun's messages say the job itself is ending or has ended (its
/// time limit, already completing): no step can start in it any more,
/// whatever its state reads for the few seconds it takes to complete.
bool allocation_ending(std::string_view text);

}  // namespace fad::slurm
