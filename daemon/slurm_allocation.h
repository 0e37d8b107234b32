// The pilot allocation fad holds on a Slurm cluster: asked for when there is
// work (salloc --no-shell), checked with one probe step per node (are fadd's
// paths visible there?), watched while held (scontrol show job), asked for
// again when it ends (time limit, cancelled, all its nodes lost), and given
// back after a quiet spell. slurmctld being unreachable is a state with a
// retry, never an error. All commands run through a CommandRunner, so nothing
// here blocks the daemon's loop and the logic is tested with scripted answers.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/slurm_config.h"
#include "daemon/command_runner.h"
#include "daemon/process_launcher.h"

namespace fad {

class SlurmAllocation {
 public:
  enum class State { none, requesting, probing, active, unreachable, refused };

  /// `probe_paths`: what every node must see (the state dir, the kernels dir,
  /// the step wrapper); `wrapper`: fad-step's path on the nodes.
  SlurmAllocation(SlurmConfig config, CommandRunner& runner, std::string wrapper, std::vector<std::string> probe_paths);

  /// There is work: ask for an allocation if none is held or coming.
  void demand(double now);
  /// Periodic housekeeping (about once a second): retries, watching the job,
  /// giving it back after `idle_release_s` without demand.
  void poll(double now);
  /// Something suggests the job or a node is gone (a step was lost): check
  /// at the next poll instead of waiting for the regular interval, and start
  /// nothing until a check asked after this says the job still runs (steps
  /// started into a cancelled job are lost at once, and again, in a loop).
  void suspect();
  /// Cancels the allocation (fadd stops, or it was idle).
  void release();
  /// The job is ending (a step was refused as it completes, at its time
  /// limit): a new one is asked for at once. A check would still read it
  /// running for some seconds, during which every step started in it is
  /// lost at once: a unit was lost five times in four seconds and failed.
  void ended(const std::string& why, double now) { lose(why, now); }

  State state() const { return state_; }
  /// A step was lost since the last check: nothing starts until the next.
  bool suspected() const { return suspected_; }
  /// Steps may start: the job runs, its nodes see fad's files, and nothing
  /// since the last check suggested otherwise.
  bool active() const { return state_ == State::active && !suspected_; }
  std::int64_t job_id() const { return job_id_; }
  /// The job's nodes that were up at the last check, each with what the job
  /// holds there; units may use them only while active().
  const std::vector<ExecutorNode>& nodes() const { return nodes_; }
  /// Why units wait ("" when active()).
  std::string wait_reason() const;
  /// Seconds without demand after which the allocation is given back.
  double idle_release_s = 300;
  /// Seconds between checks of a held job, and between retries.
  double check_every_s = 10;
  double retry_every_s = 5;

 private:
  void request(double now);
  void check(double now);
  void on_job(const CommandOutput& out, double now, std::uint64_t suspicions);
  void probe(double now);
  void lose(const std::string& why, double now);

  SlurmConfig config_;
  CommandRunner& runner_;
  std::string wrapper_;
  std::vector<std::string> probe_paths_;
  State state_ = State::none;
  std::int64_t job_id_ = 0;
  std::vector<ExecutorNode> nodes_;
  std::string wait_reason_ = "no Slurm allocation yet";
  double last_demand_ = -1e18;
  double next_check_ = 0;
  double next_retry_ = 0;
  bool checking_ = false;
  bool suspected_ = false;
  std::uint64_t suspicions_ = 0;  ///< suspect() calls so far: a check asked before the last clears nothing
  int probes_pending_ = 0;
  std::vector<std::string> probe_problems_;
  /// Bumped whenever the allocation changes, so answers about an old one are dropped.
  std::uint64_t generation_ = 0;
};

const char* to_string(SlurmAllocation::State state);

}  // namespace fad
