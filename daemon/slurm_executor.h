// The Slurm executor: fad's units run as job steps on a Slurm cluster. fad
// keeps its queue, estimator and scheduler; this class holds the allocation
// (SlurmAllocation), starts each unit as `srun ... fad-step ... COMPILER ARGS`
// on the node the engine placed it on, sized by fad's estimate (--mem, -c),
// and turns what comes back (the step wrapper's report, srun's messages,
// sstat) into the ExitInfo and memory readings the engine already uses.
// srun runs here as an ordinary child process, reaped without blocking.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include "common/slurm_config.h"
#include "daemon/boost_launcher.h"
#include "daemon/clock.h"
#include "daemon/command_runner.h"
#include "daemon/slurm_allocation.h"
#include "daemon/slurm_parse.h"
#include "daemon/step_report.h"

namespace fad {

/// How a step ended, from srun's messages (`end`), the wrapper's report and
/// srun's own status; peak fields are left to the caller. Lost (run again,
/// not a failure) when Slurm says its node or allocation went, or when the
/// wrapper was told to stop: fadd's own stops are told apart by the engine,
/// so anyone else's (a cancelled allocation, a time limit) lost it, even
/// when srun exits before it can say so.
ExitInfo step_exit(slurm::StepEnd end, const StepReport& report, const ExitInfo& srun);

class SlurmExecutor final : public ProcessLauncher {
 public:
  /// `state_dir` must be on a filesystem the nodes share (step reports go to
  /// STATE/slurm/); `probe_paths` are checked on every node of an allocation.
  SlurmExecutor(boost::asio::io_context& io, Clock& clock, SlurmConfig config, std::string state_dir,
                std::vector<std::string> probe_paths);
  ~SlurmExecutor() override;

  Result<int> launch(const LaunchSpec& spec, std::function<void(ExitInfo)> on_exit) override;
  void signal_group(int pgid, int sig) override;
  std::uint64_t group_memory(int pgid) override;
  void adopt_unit(int pgid, std::int64_t unit_id) override;
  GroupAccount release(int pgid, Leftovers leftovers) override;
  bool group_alive(int pgid) override;
  bool group_pending(int pgid) override;
  std::optional<std::vector<ExecutorNode>> nodes() override;
  std::string wait_reason() override;
  std::vector<std::string> step_command(const LaunchSpec& spec) override;
  std::string status_json() override;
  void shutdown() override;
  bool drops_rights() const override { return false; }

  /// fad-step's path: the config's, else the one installed next to this program.
  static std::string default_wrapper();

 private:
  struct Step {
    std::int64_t unit_id = 0;
    std::string node;
    std::string report_path;
    std::string log_path;
    std::uintmax_t log_offset = 0;  ///< srun's own messages start here in the log
    std::uint64_t memory = 0;       ///< --mem
    int threads = 1;
    bool external = false;
    std::uint64_t sstat_peak = 0;
    std::uint64_t peak = 0;
    StepReport report;  ///< last read
    /// fadd ended it (SIGTERM, SIGKILL): its end says nothing about the job.
    bool ended_by_fadd = false;
  };
  void tick();
  /// STATE/slurm/job names the allocation fad holds now, for a successor to
  /// cancel when this fadd is killed: written whenever its id changed.
  void record_job();
  /// The step's --mem: fad's estimate with the margin, at most its node's memory.
  std::uint64_t step_memory_for(const LaunchSpec& spec) const;
  void refresh_sstat();
  void refresh_partition_nodes();
  void read_report(Step& step);
  ExitInfo finish(Step& step, const ExitInfo& srun);
  void journal(const Step& step, const ExitInfo& info);
  std::string new_report_path(std::int64_t unit_id);
  Step* step_of(int pgid);

  boost::asio::io_context& io_;
  Clock& clock_;
  SlurmConfig config_;
  std::string dir_;  ///< STATE/slurm
  std::string wrapper_;
  BoostLauncher local_;  ///< srun and Slurm's commands run here
  LauncherCommandRunner runner_;
  SlurmAllocation allocation_;
  boost::asio::steady_timer timer_;
  std::map<int, Step> steps_;                  ///< by srun's pid (the engine's pgid)
  std::map<std::int64_t, Step> external_;      ///< step commands handed out, not started yet
  std::vector<ExecutorNode> partition_nodes_;  ///< job-per-unit mode
  std::string partition_reason_ = "reading the partition's nodes";
  double next_sstat_ = 0, next_nodes_ = 0;
  bool sstat_running_ = false, nodes_running_ = false;
  long reports_ = 0;
  bool stopped_ = false;
  std::int64_t recorded_job_ = 0;  ///< the id STATE/slurm/job holds (0: none)
};

}  // namespace fad
