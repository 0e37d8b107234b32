// The pilot allocation's lifecycle; see slurm_allocation.h.
#include "daemon/slurm_allocation.h"

#include <spdlog/spdlog.h>

#include "common/size.h"
#include "common/text.h"
#include "daemon/slurm_commands.h"
#include "daemon/slurm_parse.h"

namespace fad {

namespace {
/// After a failed probe: a missing mount is not fixed in seconds.
constexpr double kProbeRetryS = 60;

bool node_usable(const std::string& state) {
  // A node that is down, drained or failing takes no new steps.
  for (const char* bad : {"DOWN", "DRAIN", "FAIL", "NOT_RESPONDING", "POWER"})
    if (state.find(bad) != std::string::npos) return false;
  return true;
}
}  // namespace

const char* to_string(SlurmAllocation::State state) {
  switch (state) {
    case SlurmAllocation::State::none: return "none";
    case SlurmAllocation::State::requesting: return "requesting";
    case SlurmAllocation::State::probing: return "probing";
    case SlurmAllocation::State::active: return "active";
    case SlurmAllocation::State::unreachable: return "unreachable";
    case SlurmAllocation::State::refused: return "refused";
  }
  return "?";
}

SlurmAllocation::SlurmAllocation(SlurmConfig config, CommandRunner& runner, std::string wrapper,
                                 std::vector<std::string> probe_paths)
    : config_(std::move(config)), runner_(runner), wrapper_(std::move(wrapper)), probe_paths_(std::move(probe_paths)) {}

void SlurmAllocation::demand(double now) {
  last_demand_ = now;
  if ((state_ == State::none || state_ == State::unreachable || state_ == State::refused) && now >= next_retry_)
    request(now);
}

void SlurmAllocation::request(double now) {
  state_ = State::requesting;
  wait_reason_ = "waiting for the Slurm allocation (salloc: " + std::to_string(config_.nodes) + " node(s), " +
                 config_.time_limit + ")";
  const auto generation = ++generation_;
  spdlog::info("asking Slurm for an allocation: {}", fmt::join(slurm::salloc_argv(config_), " "));
  runner_.run(slurm::salloc_argv(config_), [this, generation, now](const CommandOutput& out) {
    if (generation != generation_) return;
    auto id = slurm::parse_salloc_job_id(out.output);
    if (out.exit_code != 0 || !id || !slurm::salloc_granted(out.output)) {
      const bool unreachable = slurm::controller_unreachable(out.output);
      state_ = unreachable ? State::unreachable : State::refused;
      wait_reason_ = std::string(unreachable ? "slurmctld unreachable" : "Slurm refused the allocation") + ": " +
                     one_line(out.output, 200) + " (retrying)";
      spdlog::warn("{}", wait_reason_);
      if (id) runner_.run(slurm::scancel_job_argv(*id), [](const CommandOutput&) {});
      next_retry_ = now + retry_every_s;
      return;
    }
    job_id_ = *id;
    spdlog::info("Slurm granted allocation {}", job_id_);
    state_ = State::probing;
    wait_reason_ = "checking that the nodes of Slurm job " + std::to_string(job_id_) + " see fad's files";
    next_check_ = 0;
    checking_ = false;
  });
}

void SlurmAllocation::poll(double now) {
  if (job_id_ > 0 && state_ != State::requesting && now - last_demand_ > idle_release_s) {
    spdlog::info("no work for {} s: giving Slurm allocation {} back", static_cast<int>(idle_release_s), job_id_);
    release();
    return;
  }
  if ((state_ == State::probing || state_ == State::active) && !checking_ && now >= next_check_) check(now);
  if ((state_ == State::unreachable || state_ == State::refused) && now >= next_retry_ && now - last_demand_ < 5)
    request(now);
}

void SlurmAllocation::suspect() {
  next_check_ = 0;
  ++suspicions_;
  suspected_ = job_id_ > 0;  // cleared only by a check asked after this
}

std::string SlurmAllocation::wait_reason() const {
  if (state_ == State::active && suspected_)
    return "a step was lost: checking that Slurm job " + std::to_string(job_id_) + " still runs";
  return wait_reason_;
}

void SlurmAllocation::check(double now) {
  checking_ = true;
  next_check_ = now + check_every_s;
  const auto generation = generation_;
  const auto suspicions = suspicions_;
  runner_.run(slurm::show_job_argv(job_id_), [this, generation, now, suspicions](const CommandOutput& out) {
    if (generation != generation_) return;
    checking_ = false;
    on_job(out, now, suspicions);
  });
}

void SlurmAllocation::on_job(const CommandOutput& out, double now, std::uint64_t suspicions) {
  if (slurm::controller_unreachable(out.output)) {
    // The job may well still run; steps already running go on. Nothing new
    // starts until slurmctld answers again.
    if (state_ == State::active) {
      wait_reason_ = "slurmctld unreachable: " + one_line(out.output, 200) + " (retrying)";
      nodes_.clear();
      state_ = State::probing;  // re-read the job before starting anything
    }
    next_check_ = now + retry_every_s;
    return;
  }
  auto job = slurm::parse_show_job(out.output);
  if (!job || !slurm::job_state_running(job->state)) {
    lose(job ? "Slurm job " + std::to_string(job_id_) + " ended (" + job->state + ")"
             : "Slurm job " + std::to_string(job_id_) + " is gone",
         now);
    return;
  }
  std::vector<ExecutorNode> nodes;
  for (const auto& n : job->nodes) nodes.push_back(ExecutorNode{n.name, std::max(1, n.cpus), n.memory});
  // Nodes that failed under a --no-kill job stay in its list: leave them out.
  runner_.run(slurm::show_nodes_argv(),
              [this, generation = generation_, nodes, now, suspicions](const CommandOutput& out) {
                if (generation != generation_) return;
                std::vector<ExecutorNode> usable;
                auto infos = slurm::parse_show_node(out.output);
                for (const auto& n : nodes) {
                  bool ok = true;
                  for (const auto& info : infos)
                    if (info.name == n.name) ok = node_usable(info.state);
                  if (ok) usable.push_back(n);
                }
                if (usable.empty()) {
                  lose("no node of Slurm job " + std::to_string(job_id_) + " is up", now);
                  return;
                }
                nodes_ = std::move(usable);
                if (suspicions == suspicions_) suspected_ = false;
                if (state_ == State::probing && probes_pending_ == 0) probe(now);
              });
}

void SlurmAllocation::probe(double now) {
  // One small step per node: the nodes must see the same files as fadd
  // (sources, outputs, logs and fad-step itself), or every unit would fail.
  probes_pending_ = static_cast<int>(nodes_.size());
  probe_problems_.clear();
  const auto generation = generation_;
  for (const auto& node : nodes_) {
    runner_.run(slurm::probe_argv(config_, job_id_, node.name, wrapper_, probe_paths_),
                [this, generation, now, name = node.name](const CommandOutput& out) {
                  if (generation != generation_) return;
                  if (out.exit_code != 0) {
                    auto text = out.output.empty() ? "exit code " + std::to_string(out.exit_code) : out.output;
                    while (!text.empty() && text.back() == '\n') text.pop_back();
                    probe_problems_.push_back(name + ": " + text);
                  }
                  if (--probes_pending_ > 0) return;
                  if (probe_problems_.empty()) {
                    state_ = State::active;
                    wait_reason_.clear();
                    spdlog::info("Slurm allocation {} ready: {} node(s)", job_id_, nodes_.size());
                    return;
                  }
                  // Without shared files nothing can run: say what is missing,
                  // give the allocation back, and try again later (a mount may
                  // come back).
                  std::string all;
                  for (const auto& p : probe_problems_) all += (all.empty() ? "" : "; ") + p;
                  spdlog::error(
                      "the Slurm nodes do not see fad's files (sources, outputs and fad-step must be on a filesystem "
                      "the nodes share): {}",
                      all);
                  const auto job = job_id_;
                  release();
                  state_ = State::refused;
                  wait_reason_ = "the Slurm nodes do not see fad's files (job " + std::to_string(job) + "): " + all;
                  next_retry_ = now + kProbeRetryS;
                });
  }
}

void SlurmAllocation::lose(const std::string& why, double now) {
  spdlog::warn("{}; asking for a new allocation when there is work", why);
  ++generation_;
  job_id_ = 0;
  nodes_.clear();
  probes_pending_ = 0;
  probe_problems_.clear();
  checking_ = false;
  suspected_ = false;
  state_ = State::none;
  wait_reason_ = why + "; asking for a new allocation";
  next_retry_ = now;
}

void SlurmAllocation::release() {
  if (job_id_ > 0) runner_.run(slurm::scancel_job_argv(job_id_), [](const CommandOutput&) {});
  ++generation_;
  job_id_ = 0;
  nodes_.clear();
  probes_pending_ = 0;
  probe_problems_.clear();
  checking_ = false;
  suspected_ = false;
  state_ = State::none;
  wait_reason_ = "no Slurm allocation yet";
}

}  // namespace fad
