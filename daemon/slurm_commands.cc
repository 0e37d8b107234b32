// Slurm command lines; see slurm_commands.h.
#include "daemon/slurm_commands.h"

#include <cstdlib>

namespace fad::slurm {

namespace {
constexpr const char* kPrefix = "fad-u";
constexpr const char* kPilotName = "fad-pilot";

void add_common(const SlurmConfig& config, std::vector<std::string>& argv) {
  if (!config.partition.empty()) argv.push_back("--partition=" + config.partition);
  if (!config.account.empty()) argv.push_back("--account=" + config.account);
  argv.insert(argv.end(), config.extra_args.begin(), config.extra_args.end());
}
}  // namespace

std::string step_name(std::int64_t unit_id) { return kPrefix + std::to_string(unit_id); }

std::int64_t unit_of_step_name(const std::string& name) {
  const std::string prefix = kPrefix;
  if (name.rfind(prefix, 0) != 0 || name.size() == prefix.size() || name.size() > prefix.size() + 18) return 0;
  for (std::size_t i = prefix.size(); i < name.size(); ++i)
    if (name[i] < '0' || name[i] > '9') return 0;
  return std::atoll(name.c_str() + prefix.size());
}

std::vector<std::string> salloc_argv(const SlurmConfig& config) {
  std::vector<std::string> argv{"salloc",
                                "--no-shell",
                                "--no-kill",
                                "--exclusive",
                                "--mem=0",
                                "--nodes=" + std::to_string(config.nodes),
                                "--time=" + config.time_limit,
                                "--job-name=" + std::string(kPilotName)};
  add_common(config, argv);
  return argv;
}

std::vector<std::string> srun_prefix(const SlurmConfig& config, const StepRequest& step) {
  const std::uint64_t mib = (step.memory + (1ull << 20) - 1) >> 20;
  std::vector<std::string> argv{"srun"};
  if (step.job_id > 0) {
    argv.insert(argv.end(), {"--jobid=" + std::to_string(step.job_id), "--exact", "--overlap"});
  } else {
    // A job of its own: it asks for its time and partition itself.
    argv.push_back("--time=" + config.time_limit);
    add_common(config, argv);
  }
  argv.insert(argv.end(), {"--nodes=1", "--ntasks=1", "--cpus-per-task=" + std::to_string(step.threads),
                           "--mem=" + std::to_string(std::max<std::uint64_t>(mib, 1)) + "M",
                           "--job-name=" + step_name(step.unit_id)});
  if (!step.node.empty()) argv.push_back("--nodelist=" + step.node);
  if (step.job_id > 0) argv.insert(argv.end(), config.extra_args.begin(), config.extra_args.end());
  argv.insert(argv.end(),
              {step.wrapper, "--report", step.report_path, "--launched-ms", std::to_string(step.launched_ms), "--"});
  return argv;
}

std::vector<std::string> scancel_argv(const std::string& step_id, const std::string& signal) {
  std::vector<std::string> argv{"scancel", "--quiet"};
  if (!signal.empty()) argv.push_back("--signal=" + signal);
  argv.push_back(step_id);
  return argv;
}

std::vector<std::string> scancel_job_argv(std::int64_t job_id) {
  return {"scancel", "--quiet", std::to_string(job_id)};
}

std::vector<std::string> show_job_argv(std::int64_t job_id) {
  return {"scontrol", "show", "job", "--details", "--oneliner", std::to_string(job_id)};
}

std::vector<std::string> show_nodes_argv() { return {"scontrol", "show", "node", "--oneliner"}; }

std::vector<std::string> squeue_steps_argv(std::int64_t job_id) {
  return {"squeue", "--steps", "--noheader", "--jobs=" + std::to_string(job_id), "--format=%i|%j|%N"};
}

std::vector<std::string> sstat_argv(std::int64_t job_id) {
  return {
      "sstat", "--allsteps", "--noheader", "--parsable2", "--jobs=" + std::to_string(job_id), "--format=JobID,MaxRSS"};
}

std::vector<std::string> probe_argv(const SlurmConfig& config, std::int64_t job_id, const std::string& node,
                                    const std::string& wrapper, const std::vector<std::string>& paths) {
  std::vector<std::string> argv{"srun",
                                "--jobid=" + std::to_string(job_id),
                                "--overlap",
                                "--nodes=1",
                                "--ntasks=1",
                                "--mem=64M",
                                "--job-name=fad-probe",
                                "--nodelist=" + node};
  argv.insert(argv.end(), config.extra_args.begin(), config.extra_args.end());
  argv.push_back(wrapper);
  argv.push_back("--probe");
  argv.insert(argv.end(), paths.begin(), paths.end());
  return argv;
}

}  // namespace fad::slurm
