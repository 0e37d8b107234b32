// The Slurm executor; see slurm_executor.h.
#include "daemon/slurm_executor.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "common/process_exists.h"
#include "common/text.h"
#include "daemon/memory_probe.h"
#include "daemon/slurm_commands.h"
#include "daemon/slurm_parse.h"
#include "daemon/step_wrapper.h"

namespace fad {

namespace fs = std::filesystem;

namespace {
constexpr auto kTick = std::chrono::seconds(1);
/// sstat asks every node's slurmstepd: not on every tick.
constexpr double kSstatEveryS = 5;
constexpr double kNodesEveryS = 60;
constexpr std::size_t kMaxLogTail = 64 * 1024;

/// What a command run since `offset` appended to `path` (srun's messages end up there).
std::string read_from(const std::string& path, std::uintmax_t offset) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  in.seekg(0, std::ios::end);
  const auto size = static_cast<std::uintmax_t>(in.tellg());
  if (size <= offset) return {};
  const auto start = std::max<std::uintmax_t>(offset, size > kMaxLogTail ? size - kMaxLogTail : 0);
  in.seekg(static_cast<std::streamoff>(start));
  std::string text(static_cast<std::size_t>(size - start), '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  return text;
}

/// Runs argv and waits for it (shutdown only, where blocking is allowed).
void run_blocking(const std::vector<std::string>& argv) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execvp(args[0], args.data());
    ::_exit(127);
  }
  if (pid > 0)
    while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {}
}
}  // namespace

std::string SlurmExecutor::default_wrapper() {
  std::error_code ec;
  auto self = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("fad-step") : (self.parent_path() / "fad-step").string();
}

SlurmExecutor::SlurmExecutor(boost::asio::io_context& io, Clock& clock, SlurmConfig config, std::string state_dir,
                             std::vector<std::string> probe_paths)
    : io_(io),
      clock_(clock),
      config_(std::move(config)),
      dir_(state_dir + "/slurm"),
      wrapper_(config_.step_wrapper.empty() ? default_wrapper() : config_.step_wrapper),
      local_(io, nullptr),
      runner_(local_, dir_ + "/commands"),
      allocation_(config_, runner_, wrapper_,
                  [&] {
                    probe_paths.push_back(state_dir);
                    probe_paths.push_back(wrapper_);
                    return probe_paths;
                  }()),
      timer_(io) {
  std::error_code ec;
  fs::create_directories(dir_ + "/steps", ec);
  // An allocation a previous fadd held (it crashed or was killed) would sit
  // idle until its time limit: give it back.
  const auto old = read_small_file(dir_ + "/job");
  if (!old.empty() && std::all_of(old.begin(), old.end(), [](char c) { return (c >= '0' && c <= '9') || c == '\n'; })) {
    spdlog::info("cancelling Slurm job {} left by a previous fadd", old.substr(0, old.find('\n')));
    runner_.run(slurm::scancel_job_argv(std::stoll(old)), [](const CommandOutput&) {});
  }
  fs::remove(dir_ + "/job", ec);
  tick();
}

SlurmExecutor::~SlurmExecutor() { shutdown(); }

void SlurmExecutor::tick() {
  if (stopped_) return;
  const double now = clock_.now();
  if (!config_.job_per_unit) {
    allocation_.poll(now);
    record_job();
  }
  if (!steps_.empty() && now >= next_sstat_) refresh_sstat();
  timer_.expires_after(kTick);
  timer_.async_wait([this](boost::system::error_code ec) {
    if (!ec) tick();
  });
}

std::optional<std::vector<ExecutorNode>> SlurmExecutor::nodes() {
  const double now = clock_.now();
  if (config_.job_per_unit) {
    if (now >= next_nodes_) refresh_partition_nodes();
    return partition_nodes_;
  }
  allocation_.demand(now);
  record_job();
  if (!allocation_.active()) return std::vector<ExecutorNode>{};
  return allocation_.nodes();
}

void SlurmExecutor::record_job() {
  // Compared with what was written, not with the id before a poll: the id
  // also changes in the callbacks of Slurm's commands (an allocation lost and
  // asked for again), and a replacement never written was left running by a
  // killed fadd, holding every node until its time limit.
  const std::int64_t job = allocation_.job_id() > 0 ? allocation_.job_id() : 0;
  if (job == recorded_job_) return;
  std::ofstream(dir_ + "/job", std::ios::trunc) << (job > 0 ? std::to_string(job) : "");
  recorded_job_ = job;
}

std::string SlurmExecutor::wait_reason() {
  if (config_.job_per_unit) return partition_nodes_.empty() ? partition_reason_ : "";
  return allocation_.wait_reason();
}

void SlurmExecutor::refresh_partition_nodes() {
  if (nodes_running_) return;
  nodes_running_ = true;
  next_nodes_ = clock_.now() + kNodesEveryS;
  runner_.run(slurm::show_nodes_argv(), [this](const CommandOutput& out) {
    nodes_running_ = false;
    if (slurm::controller_unreachable(out.output)) {
      partition_reason_ = "slurmctld unreachable (retrying)";
      next_nodes_ = clock_.now() + 5;
      return;
    }
    std::vector<ExecutorNode> nodes;
    for (const auto& n : slurm::parse_show_node(out.output)) {
      // Partitions=a,b in the record; without a configured partition, every node.
      if (n.state.find("DOWN") != std::string::npos || n.state.find("DRAIN") != std::string::npos) continue;
      nodes.push_back(ExecutorNode{n.name, std::max(1, n.cpus), n.memory});
    }
    partition_nodes_ = std::move(nodes);
    partition_reason_ = partition_nodes_.empty() ? "no Slurm node is up" : "";
  });
}

std::string SlurmExecutor::new_report_path(std::int64_t unit_id) {
  return dir_ + "/steps/u" + std::to_string(unit_id) + "-" + std::to_string(::getpid()) + "-" +
         std::to_string(++reports_) + ".report";
}

std::uint64_t SlurmExecutor::step_memory_for(const LaunchSpec& spec) const {
  const std::uint64_t wanted = step_memory(config_, spec.estimate_bytes);
  // A unit estimated above what its node holds (a guess, or history from
  // bigger machines) runs alone: a step asking more than the node has pends
  // in Slurm for ever. Capped, it runs, and Slurm's cgroup OOM-kills it if it
  // really needs more (it is then rerun, and fails once its reruns are spent).
  const auto& nodes = config_.job_per_unit ? partition_nodes_ : allocation_.nodes();
  std::uint64_t cap = 0;
  for (const auto& n : nodes)
    if (spec.node.empty() || n.name == spec.node) cap = std::max(cap, n.memory);
  return cap > 0 ? std::min(wanted, cap) : wanted;
}

Result<int> SlurmExecutor::launch(const LaunchSpec& spec, std::function<void(ExitInfo)> on_exit) {
  if (spec.argv.empty()) return make_error("empty command");
  // srun starts a step with its caller's rights, and one user's job cannot hold
  // another's steps: a root fadd has no way to run this as its owner. Refused
  // here too, not only at submit, for builds queued before the executor changed.
  if (spec.run_as && spec.run_as->uid != ::geteuid())
    return make_error("fadd runs as root and Slurm steps run with its rights, not with uid " +
                      std::to_string(spec.run_as->uid) + "'s: with executor slurm, each user runs a fadd of their own");
  if (!config_.job_per_unit && !allocation_.active()) return make_error("no Slurm allocation to run the step in");
  Step step;
  step.unit_id = spec.unit_id;
  step.node = spec.node;
  step.report_path = new_report_path(spec.unit_id);
  step.log_path = spec.log_path;
  step.memory = step_memory_for(spec);
  step.threads = spec.threads;
  slurm::StepRequest req{spec.unit_id,     config_.job_per_unit ? 0 : allocation_.job_id(),
                         spec.node,        spec.threads,
                         step.memory,      wrapper_,
                         step.report_path, epoch_ms()};
  auto argv = slurm::srun_prefix(config_, req);
  argv.insert(argv.end(), spec.argv.begin(), spec.argv.end());
  argv[0] = find_program(argv[0]);
  {
    std::ofstream log(spec.log_path, std::ios::app);
    log << "fad: as a Slurm step: " << join(slurm::srun_prefix(config_, req), " ") << "\n";
  }
  std::error_code ec;
  step.log_offset = fs::file_size(spec.log_path, ec);
  if (ec) step.log_offset = 0;
  const auto unit = spec.unit_id;
  Result<int> pid = make_error("");
  try {
    // srun hands its (soft) file size limit on to the step (Slurm's
    // PropagateResourceLimits), and writes the step's output to the log itself.
    LaunchSpec srun_spec{spec.unit_id, argv, spec.log_path};
    srun_spec.max_file_bytes = spec.max_file_bytes;
    pid = local_.launch(srun_spec, [this, unit, on_exit](ExitInfo srun) {
      for (auto it = steps_.begin(); it != steps_.end(); ++it) {
        if (it->second.unit_id != unit || it->second.external) continue;
        Step done = std::move(it->second);
        steps_.erase(it);
        on_exit(finish(done, srun));
        return;
      }
    });
  } catch (const std::exception& e) {
    pid = make_error(e.what());
  }
  if (!pid) return make_error("cannot start srun: " + pid.error());
  steps_.emplace(*pid, std::move(step));
  return *pid;
}

void SlurmExecutor::read_report(Step& step) {
  if (auto r = StepReport::parse(read_small_file(step.report_path))) step.report = std::move(*r);
  step.peak = std::max({step.peak, step.report.peak, step.sstat_peak});
}

ExitInfo SlurmExecutor::finish(Step& step, const ExitInfo& srun) {
  read_report(step);
  const auto messages = read_from(step.log_path, step.log_offset);
  const auto end = slurm::classify_srun(messages);
  ExitInfo info = step_exit(end, step.report, srun);
  info.peak_bytes = step.peak;
  info.peak_source = step.report.peak >= step.sstat_peak && !step.report.source.empty() ? step.report.source
                     : step.sstat_peak > 0                                              ? "sstat"
                                                                                        : "";
  if (info.lost && !step.ended_by_fadd) {
    if (slurm::allocation_ending(messages) && allocation_.job_id() > 0)
      allocation_.ended("Slurm job " + std::to_string(allocation_.job_id()) + " is ending (" + slurm::to_string(end) +
                            ": " + one_line(messages, 160) + ")",
                        clock_.now());
    else
      allocation_.suspect();
    spdlog::warn("unit {}: its Slurm step was lost ({}); it runs again", step.unit_id,
                 end == slurm::StepEnd::normal ? "told to stop, not by fadd" : slurm::to_string(end));
  }
  if (!info.lost && !info.oom_killed && !step.report.error.empty())
    std::ofstream(step.log_path, std::ios::app) << "fad: " << step.report.error << "\n";
  journal(step, info);
  std::error_code ec;
  fs::remove(step.report_path, ec);
  return info;
}

ExitInfo step_exit(slurm::StepEnd end, const StepReport& report, const ExitInfo& srun) {
  ExitInfo info;
  const bool wrapper_done = report.done && report.error.empty();
  // Slurm ends a cancelled or timed-out job's steps with SIGTERM, then SIGKILL.
  const int sig = srun.exit_code - 128;
  const bool srun_killed = sig == SIGTERM || sig == SIGKILL;
  if (end == slurm::StepEnd::out_of_memory || report.oom_kills > 0) {
    // Its cgroup's limit (fad's estimate + margin) was too small: the engine
    // requeues it with the peak it reached + a margin, like a local OOM kill.
    info.signaled = true;
    info.oom_killed = true;
    info.exit_code = 128 + SIGKILL;
  } else if (end == slurm::StepEnd::node_failure || end == slurm::StepEnd::allocation_gone ||
             end == slurm::StepEnd::controller_unreachable || (report.done && report.terminated) ||
             (!report.done && srun_killed && end != slurm::StepEnd::step_refused)) {
    // The last case: killed before its wrapper could report an end (a step
    // that started as its allocation was cancelled dies before srun says
    // why). fad's own stops and kills are told apart by the engine, which
    // knows them (a stop's cause, a log past unit_max_log_size).
    info.lost = true;
    info.signaled = true;
    info.exit_code = srun.exit_code;
  } else if (wrapper_done) {
    info.exit_code = report.exit_code;
    info.signaled = report.signal != 0;
  } else {
    // No report: the wrapper never ran (step refused, or fad-step missing on
    // the node): srun's status and messages (in the log) are all there is.
    info.exit_code = srun.exit_code == 0 ? 1 : srun.exit_code;
    info.signaled = srun.signaled;
  }
  return info;
}

void SlurmExecutor::journal(const Step& step, const ExitInfo& info) {
  // One line per step, for operators and the step-overhead benchmark:
  // launched_ms (fadd started srun) to started_ms (the compiler started on its node).
  std::ofstream(dir_ + "/steps.log", std::ios::app)
      << "unit=" << step.unit_id << " step=" << step.report.step << " node=" << step.report.node
      << " mem=" << step.memory << " launched_ms=" << step.report.launched_ms
      << " started_ms=" << step.report.started_ms << " peak=" << info.peak_bytes << " source=" << info.peak_source
      << " exit=" << info.exit_code << " oom=" << info.oom_killed << " lost=" << info.lost << "\n";
}

SlurmExecutor::Step* SlurmExecutor::step_of(int pgid) {
  auto it = steps_.find(pgid);
  return it == steps_.end() ? nullptr : &it->second;
}

void SlurmExecutor::signal_group(int pgid, int sig) {
  Step* step = step_of(pgid);
  if (!step) {
    if (pgid > 1 && !config_.job_per_unit) ::kill(pgid, sig);  // not ours (e.g. a previous fadd's srun)
    return;
  }
  if (sig == SIGTERM || sig == SIGKILL) step->ended_by_fadd = true;
  if (step->report.step.empty()) read_report(*step);
  const auto& id = step->report.step;
  if (!id.empty()) {
    // Slurm signals every process of the step on its node (the wrapper
    // forwards termination to the compiler's group and reports the end).
    const char* name = sig == SIGSTOP ? "STOP" : sig == SIGCONT ? "CONT" : sig == SIGTERM ? "TERM" : "";
    if (sig == SIGKILL || name[0] != '\0')
      runner_.run(slurm::scancel_argv(id, sig == SIGKILL ? "" : name), [](const CommandOutput&) {});
    return;
  }
  // The wrapper has not reported yet: srun forwards SIGTERM/SIGINT to the step.
  if (!step->external && (sig == SIGTERM || sig == SIGKILL)) ::kill(pgid, sig == SIGKILL ? SIGKILL : SIGTERM);
}

std::uint64_t SlurmExecutor::group_memory(int pgid) {
  Step* step = step_of(pgid);
  if (!step) return 0;
  read_report(*step);
  return step->report.done ? 0 : step->report.usage;
}

// srun leads its own group: while it runs, so does the step.
bool SlurmExecutor::group_alive(int pgid) { return pgid > 1 && process_exists(pgid); }

// srun runs from the start, but its step's wrapper only once Slurm has given
// the job (job-per-unit) or the step (in the allocation) its resources; the
// wrapper's first report says when.
bool SlurmExecutor::group_pending(int pgid) {
  Step* step = step_of(pgid);
  if (!step || step->report.started_ms != 0 || step->report.done) return false;  // started: for good
  read_report(*step);
  return step->report.started_ms == 0 && !step->report.done;
}

std::vector<std::string> SlurmExecutor::step_command(const LaunchSpec& spec) {
  Step step;
  step.unit_id = spec.unit_id;
  step.node = spec.node;
  step.external = true;
  step.report_path = new_report_path(spec.unit_id);
  step.memory = step_memory_for(spec);
  step.threads = spec.threads;
  slurm::StepRequest req{spec.unit_id,     config_.job_per_unit ? 0 : allocation_.job_id(),
                         spec.node,        spec.threads,
                         step.memory,      wrapper_,
                         step.report_path, epoch_ms()};
  external_[spec.unit_id] = std::move(step);
  return slurm::srun_prefix(config_, req);
}

void SlurmExecutor::adopt_unit(int pgid, std::int64_t unit_id) {
  auto it = external_.find(unit_id);
  if (it == external_.end()) return;
  steps_[pgid] = std::move(it->second);
  external_.erase(it);
}

GroupAccount SlurmExecutor::release(int pgid, Leftovers /*leftovers: the step's end kills them*/) {
  auto it = steps_.find(pgid);
  if (it == steps_.end()) return {};
  Step step = std::move(it->second);
  steps_.erase(it);
  read_report(step);
  GroupAccount account;
  account.peak_bytes = step.peak;
  account.peak_source = step.report.peak >= step.sstat_peak && !step.report.source.empty() ? step.report.source
                        : step.sstat_peak > 0                                              ? "sstat"
                                                                                           : "";
  account.oom_killed = step.report.oom_kills > 0;
  // srun's messages went to the launcher's terminal: the report must tell.
  // No report, an unfinished one, or a wrapper told to stop that fad did not
  // stop (the engine ignores `lost` for units it stopped itself): the step's
  // allocation or node went away under it.
  account.lost = !account.oom_killed && (!step.report.done || step.report.terminated);
  if (account.lost && !step.ended_by_fadd) allocation_.suspect();
  std::error_code ec;
  fs::remove(step.report_path, ec);
  return account;
}

void SlurmExecutor::refresh_sstat() {
  if (sstat_running_ || config_.job_per_unit || !allocation_.active()) return;
  sstat_running_ = true;
  next_sstat_ = clock_.now() + kSstatEveryS;
  runner_.run(slurm::sstat_argv(allocation_.job_id()), [this](const CommandOutput& out) {
    sstat_running_ = false;
    auto rss = slurm::parse_sstat_max_rss(out.output);
    for (auto& [pgid, step] : steps_) {
      if (step.report.step.empty()) continue;
      if (auto it = rss.find(step.report.step); it != rss.end())
        step.sstat_peak = std::max(step.sstat_peak, it->second);
    }
  });
}

std::string SlurmExecutor::status_json() {
  nlohmann::json nodes = nlohmann::json::array();
  for (const auto& n : config_.job_per_unit ? partition_nodes_ : allocation_.nodes()) {
    int running = 0;
    for (const auto& [pgid, step] : steps_) running += step.node == n.name;
    nodes.push_back({{"name", n.name}, {"cpus", n.cpus}, {"memory_bytes", n.memory}, {"running_units", running}});
  }
  nlohmann::json j{
      {"kind", "slurm"},
      {"mode", config_.job_per_unit ? "job-per-unit" : "allocation"},
      {"state", config_.job_per_unit ? "jobs"
                : allocation_.suspected() && allocation_.state() == SlurmAllocation::State::active
                    ? "checking"
                    : to_string(allocation_.state())},
      {"job_id", allocation_.job_id() > 0 ? nlohmann::json(allocation_.job_id()) : nlohmann::json(nullptr)},
      {"nodes", std::move(nodes)},
      {"wait_reason", wait_reason()}};
  return j.dump();
}

void SlurmExecutor::shutdown() {
  if (stopped_) return;
  stopped_ = true;
  timer_.cancel();
  // Synchronous at shutdown: the loop is about to stop, and an allocation left
  // behind would hold its nodes until its time limit.
  if (allocation_.job_id() > 0) {
    spdlog::info("giving Slurm allocation {} back", allocation_.job_id());
    run_blocking(slurm::scancel_job_argv(allocation_.job_id()));
  }
  std::error_code ec;
  fs::remove(dir_ + "/job", ec);
}

}  // namespace fad
