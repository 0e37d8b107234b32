// The daemon loop body: measuring, scheduling and carrying decisions out.
// Client requests live in engine_requests.cc.
#include "daemon/engine.h"

#include <signal.h>

#include <algorithm>
#include <utility>
#include <filesystem>
#include <fstream>

#include <spdlog/spdlog.h>

#include "common/size.h"
#include "common/text.h"
#include "daemon/planner.h"

namespace fad {

namespace fs = std::filesystem;

namespace {
// A running unit's measured profile is thinned once it grows past this, so a
// unit compiling for hours costs bounded memory.
constexpr std::size_t kMaxProfilePoints = 2000;
// A unit the OOM killer ends is rerun this many times in all before it counts
// as failed: by then it was killed with its own peak as the estimate, so it
// does not fit even alone.
constexpr int kMaxOomAttempts = 3;
// The link step is small next to compiles; this is its prior.
constexpr ManifestPrior kLinkPrior{512ull << 20, 30};

std::string boot_id() { return read_small_file("/proc/sys/kernel/random/boot_id"); }
}  // namespace

Engine::Engine(EngineOptions options, Store& store, Clock& clock, MemoryProbe& probe, ProcessLauncher& launcher,
               ToolchainLookup toolchains)
    : options_(std::move(options)),
      store_(store),
      clock_(clock),
      probe_(probe),
      launcher_(launcher),
      toolchains_(std::move(toolchains)),
      estimator_(options_.estimator),
      scheduler_(options_.scheduler, estimator_),
      started_at_(clock.now()) {}

void Engine::recover() {
  // Process groups are only meaningful within the boot that created them.
  const auto boot = boot_id();
  const bool same_boot = !boot.empty() && store_.meta("boot_id") == boot;
  for (auto pgid : store_.recover_running_units()) {
    if (same_boot && pgid > 1) {
      spdlog::warn("killing compiler process group {} left running by a previous fadd", pgid);
      launcher_.signal_group(static_cast<int>(pgid), SIGKILL);
    }
  }
  if (!boot.empty()) store_.set_meta("boot_id", boot);
  std::size_t learned = 0;
  for (const auto& h : store_.history()) {
    auto profile = Profile::parse(h.profile);
    if (!profile) continue;
    Observation obs;
    obs.key = UnitKey{h.source, h.content_hash, h.flags, h.archs, h.compiler, h.family, h.arch_count};
    obs.threads = h.threads;
    obs.profile = std::move(*profile);
    estimator_.learn(obs);
    ++learned;
  }
  for (const auto& b : store_.active_builds()) {
    if (b.kind == "external") {
      // Their launchers lost fadd and ran the compilers directly; a fad run
      // build stays open for its command to close.
      store_.set_pending_units(b.id, UnitState::cancelled, false);
      if (b.session) finalize_external(b, "fadd restarted");
    }
    update_build(b.id);
  }
  last_snapshot_ = probe_.sample();
  spdlog::info("recovered state: {} active builds, {} history records", store_.active_builds().size(), learned);
}

void Engine::tick() {
  const double now = clock_.now();
  try {
    // Units stopped before they had a process end now, outside any loop over running_.
    for (auto id : std::exchange(deferred_exits_, {})) on_exit(id, ExitInfo{-1, true, 0});
    last_snapshot_ = probe_.sample();
    measure_running(now);
    for (auto& [id, r] : running_) {
      if (r.stop != StopReason::none && now - r.stop_sent_at > options_.kill_grace_s) {
        launcher_.signal_group(r.pgid, SIGKILL);
      }
    }
    check_external(now);
    if (!shutting_down_) schedule(now, last_snapshot_);
    if (++ticks_ % static_cast<std::uint64_t>(std::max(1, options_.sample_every)) == 0) {
      std::uint64_t fad_bytes = 0;
      for (const auto& [id, r] : running_) fad_bytes += r.current;
      store_.add_sample(MemorySample{clock_.wall(), last_snapshot_.total, last_snapshot_.available,
                                     last_snapshot_.swap_free, fad_bytes, last_committed_,
                                     last_snapshot_.psi_some_avg10});
      if (ticks_ % 1000 == 0) store_.trim_samples(options_.samples_kept);
    }
  } catch (const StoreError& e) {
    // A full disk must not kill the daemon: running units keep running and the
    // next tick tries again.
    spdlog::error("tick: {}", e.what());
  }
}

void Engine::measure_running(double now) {
  std::map<std::int64_t, std::uint64_t> build_bytes;
  for (auto& [id, r] : running_) {
    if (r.pgid <= 0) continue;  // admitted, its launcher has not started it yet
    r.current = launcher_.group_memory(r.pgid);
    r.peak = std::max(r.peak, r.current);
    r.measured.points.emplace_back(now - r.started_at, r.current);
    r.measured.duration_s = now - r.started_at;
    if (r.measured.points.size() > kMaxProfilePoints) r.measured = r.measured.thinned(kMaxProfilePoints / 2);
    build_bytes[r.unit.build_id] += r.current;
  }
  for (const auto& [build, bytes] : build_bytes) store_.raise_build_peak(build, bytes);
}

std::vector<QueuedUnit> Engine::collect_queue(std::map<std::int64_t, UnitRecord>& by_id) {
  std::vector<QueuedUnit> queue;
  for (const auto& b : store_.active_builds()) {
    if (b.state == BuildState::paused) continue;
    const auto units = store_.units(b.id);
    bool compiles_done = true;
    for (const auto& u : units)
      if (u.kind == UnitKind::compile && u.state != UnitState::succeeded) compiles_done = false;
    for (const auto& u : units) {
      if (u.state != UnitState::queued || running_.count(u.id)) continue;
      if (u.kind == UnitKind::link && !compiles_done) {
        store_.set_wait_reason(u.id, "waiting for the compile units");
        continue;
      }
      QueuedUnit q;
      q.id = u.id;
      q.build_id = u.build_id;
      q.key = unit_key(u);
      if (u.kind == UnitKind::link) {
        q.key.arch_count = 1;  // linking is one process whatever the arch count
        q.manifest_prior = kLinkPrior;
      } else if (u.prior_peak > 0) {
        q.manifest_prior = ManifestPrior{u.prior_peak, u.prior_duration_s};
      }
      q.requeued_peak = u.requeued_peak;
      queue.push_back(std::move(q));
      by_id.emplace(u.id, u);
    }
  }
  return queue;
}

std::vector<RunningUnit> Engine::running_view(double now, const std::string* node) const {
  std::vector<RunningUnit> running;
  for (const auto& [id, r] : running_) {
    if (r.stop != StopReason::none || (node && r.node != *node)) continue;
    RunningUnit ru;
    ru.id = id;
    // Admitted but not started yet (a launcher's compiler): all of its
    // profile still lies ahead.
    ru.started_at = r.external && r.pgid == 0 ? now : r.started_at;
    ru.threads = r.threads;
    ru.predicted = r.predicted;
    ru.current_bytes = r.current;
    ru.peak_bytes = r.peak;
    // A unit the user paused holds its memory by the user's choice: to the
    // scheduler it is always freshly suspended, so it is never stopped for it.
    ru.suspended = r.suspended || r.paused;
    ru.suspended_at = r.paused ? now : r.suspended_at;
    ru.guess = r.guess;
    running.push_back(std::move(ru));
  }
  return running;
}

void Engine::schedule(double now, const MemorySnapshot& snap) {
  std::map<std::int64_t, UnitRecord> by_id;
  std::map<std::int64_t, std::uint64_t> budgets;
  for (const auto& b : store_.active_builds())
    if (b.budget_bytes) budgets[b.id] = *b.budget_bytes;
  auto queue = collect_queue(by_id);
  auto running = running_view(now, nullptr);
  if (queue.empty() && running.empty()) {
    last_committed_ = 0;
    return;
  }
  if (auto nodes = launcher_.nodes()) {
    schedule_nodes(now, *nodes, std::move(queue), by_id, budgets);
    return;
  }
  auto plan = scheduler_.decide(now, snap, queue, running);
  last_capacity_ = plan.capacity;
  last_committed_ = plan.committed;
  apply_plan(plan, by_id, budgets, now, "", nullptr);
}

void Engine::apply_plan(SchedulePlan& plan, std::map<std::int64_t, UnitRecord>& by_id,
                        const std::map<std::int64_t, std::uint64_t>& budgets, double now, const std::string& node,
                        std::map<std::int64_t, std::string>* reasons) {
  // A build's own budget (fad run --budget) caps what its units hold together;
  // its first unit always runs (never starve).
  std::map<std::int64_t, std::uint64_t> build_committed;
  for (const auto& [id, r] : running_) build_committed[r.unit.build_id] += r.predicted.peak();
  for (const auto& d : plan.decisions) {
    if (d.kind == Decision::Kind::start) {
      auto it = by_id.find(d.unit);
      if (it == by_id.end()) continue;
      const UnitRecord& unit = it->second;
      if (auto budget = budgets.find(unit.build_id); budget != budgets.end()) {
        auto& used = build_committed[unit.build_id];
        if (used > 0 && used + d.estimate_bytes > budget->second) {
          plan.wait_reasons[unit.id] = "build budget " + format_size(budget->second) + " reached (" +
                                       format_size(used) + " in use, needs " + format_size(d.estimate_bytes) + ")";
          continue;
        }
        used += d.estimate_bytes;
      }
      if (unit.kind == UnitKind::external)
        admit_external(unit, d, now, node);
      else
        start_unit(unit, d, now, node);
      continue;
    }
    auto it = running_.find(d.unit);
    if (it == running_.end()) continue;
    Running& r = it->second;
    switch (d.kind) {
      case Decision::Kind::suspend:
        if (!r.suspended && !r.paused) {
          spdlog::warn("memory pressure: suspending {} ({})", r.unit.name, d.reason);
          launcher_.signal_group(r.pgid, SIGSTOP);
        }
        r.suspended = true;
        r.suspended_at = now;
        break;
      case Decision::Kind::resume:
        if (r.suspended && !r.paused) {
          spdlog::info("resuming {} ({})", r.unit.name, d.reason);
          launcher_.signal_group(r.pgid, SIGCONT);
        }
        r.suspended = false;
        break;
      case Decision::Kind::requeue:
        spdlog::warn("memory pressure: stopping {} to run it later ({})", r.unit.name, d.reason);
        stop_unit(r, StopReason::requeue, now);
        break;
      case Decision::Kind::start: break;
    }
  }
  if (reasons) {
    for (auto& [id, reason] : plan.wait_reasons) reasons->emplace(id, node + ": " + reason);
    return;
  }
  for (const auto& [id, reason] : plan.wait_reasons) store_.set_wait_reason(id, reason);
}

void Engine::start_unit(const UnitRecord& unit, const Decision& d, double now, const std::string& node) {
  std::vector<std::string> argv = unit.argv;
  if (unit.kind == UnitKind::compile) {
    argv.push_back("--threads");
    argv.push_back(std::to_string(d.threads));
  }
  std::error_code ec;
  fs::create_directories(fs::path(unit.output_path).parent_path(), ec);
  fs::create_directories(fs::path(unit.log_path).parent_path(), ec);
  store_.start_unit(unit.id, d.threads, d.estimate_bytes, clock_.wall());
  auto build = store_.build(unit.build_id);
  if (build && build->state == BuildState::queued)
    store_.set_build_state(unit.build_id, BuildState::running, std::nullopt);
  {
    std::ofstream log(unit.log_path, std::ios::app);
    log << "$ " << join(argv, " ") << "\n";
  }
  const auto id = unit.id;
  auto pgid = launcher_.launch(LaunchSpec{id, argv, unit.log_path, node, d.threads, d.estimate_bytes},
                               [this, id](ExitInfo info) { on_exit(id, info); });
  if (!pgid) {
    spdlog::error("unit {}: {}", unit.name, pgid.error());
    std::ofstream(unit.log_path, std::ios::app) << "fad: " << pgid.error() << "\n";
    store_.finish_unit(id, UnitState::failed, std::nullopt, 0, 0, clock_.wall(), std::nullopt);
    store_.set_pending_units(unit.build_id, UnitState::cancelled, false);
    update_build(unit.build_id);
    return;
  }
  store_.set_unit_pgid(id, *pgid);
  if (!node.empty()) store_.set_unit_node(id, node);
  Running r;
  r.unit = unit;
  r.pgid = *pgid;
  r.node = node;
  r.started_at = now;
  r.threads = d.threads;
  r.predicted = d.predicted;
  r.guess = d.guess;
  r.paused = build && build->state == BuildState::paused;
  running_.emplace(id, std::move(r));
  spdlog::info("started {} of build {}{} with {} thread(s), estimate {} ({})", unit.name, unit.build_id,
               node.empty() ? "" : " on " + node, d.threads, format_size(d.estimate_bytes), d.reason);
  append_build_log(unit.build_id, "started " + unit.name + " (threads " + std::to_string(d.threads) + ", estimate " +
                                      format_size(d.estimate_bytes) + ")\n");
}

void Engine::stop_unit(Running& r, StopReason reason, double now) {
  if (r.stop != StopReason::none) return;
  r.stop = reason;
  r.stop_sent_at = now;
  if (r.pgid <= 0) {
    // An admitted external unit whose launcher has not started it yet: there
    // is nothing to signal; it ends here (the launcher polls again).
    deferred_exits_.push_back(r.unit.id);
    if (wake_) wake_();
    return;
  }
  launcher_.signal_group(r.pgid, SIGTERM);
  // A stopped process only acts on SIGTERM once continued.
  if (r.suspended || r.paused) launcher_.signal_group(r.pgid, SIGCONT);
}

void Engine::on_exit(std::int64_t unit_id, ExitInfo info) {
  auto it = running_.find(unit_id);
  if (it == running_.end()) return;
  Running r = std::move(it->second);
  running_.erase(it);
  r.peak = std::max(r.peak, info.peak_bytes);
  if (wake_) wake_();
  const double duration = clock_.now() - r.started_at;
  const auto& u = r.unit;
  try {
    if (!info.peak_source.empty()) store_.set_unit_peak_source(unit_id, info.peak_source);
    switch (r.stop) {
      case StopReason::requeue:
      case StopReason::shutdown:
        // Stopped by fad, not failed: run it again later. A requeue keeps the
        // observed peak so the next estimate is at least that.
        store_.requeue_unit(unit_id, r.stop == StopReason::requeue ? r.peak : 0);
        append_build_log(u.build_id, "stopped " + u.name + " (requeued)\n");
        update_build(u.build_id);
        return;
      case StopReason::cancel:
        store_.finish_unit(unit_id, UnitState::cancelled, info.exit_code, r.peak, duration, clock_.wall(),
                           std::nullopt);
        update_build(u.build_id);
        return;
      case StopReason::none: break;
    }
    if (info.lost) {
      // Its cluster node or allocation went away under it: run it again,
      // wherever the scheduler next places it.
      store_.requeue_unit(unit_id, 0);
      append_build_log(u.build_id, "lost " + u.name + (r.node.empty() ? "" : " on " + r.node) + " (requeued)\n");
      update_build(u.build_id);
      return;
    }
    const auto now_record = info.oom_killed ? store_.unit(unit_id) : std::nullopt;  // attempts incl. this run
    if (info.signaled && now_record && now_record->attempts < kMaxOomAttempts) {
      // Memory ran out under it (estimates too low, or something outside fad
      // grew): not the unit's fault. Requeue it with its peak raised by a
      // margin, since the kill cut it short of its true peak.
      const std::uint64_t floor = r.peak + r.peak / 4;
      store_.requeue_unit(unit_id, floor);
      spdlog::warn(
          "unit {} of build {} was killed by the kernel's OOM killer at {}; requeued with an estimate of at "
          "least {}",
          u.name, u.build_id, format_size(r.peak), format_size(floor));
      append_build_log(u.build_id, "OOM-killed " + u.name + " at " + format_size(r.peak) + " (requeued)\n");
      update_build(u.build_id);
      return;
    }
    bool ok = info.exit_code == 0 && !info.signaled;
    if (ok && u.kind == UnitKind::link) {
      std::error_code ec;
      fs::rename(u.output_path + ".tmp", u.output_path, ec);
      if (ec) {
        std::ofstream(u.log_path, std::ios::app)
            << "fad: cannot publish " << u.output_path << ": " << ec.message() << "\n";
        ok = false;
      } else {
        store_.set_build_artifact(u.build_id, u.output_path);
      }
    }
    std::optional<HistoryRecord> history;
    if (ok && u.kind != UnitKind::link) {
      Observation obs;
      obs.key = unit_key(u);
      obs.threads = r.threads;
      obs.profile = r.measured.thinned(200);
      obs.profile.duration_s = duration;
      // Polling can miss a short spike that the unit's cgroup caught: lift the
      // highest sample to the true peak so estimates are never below it.
      if (obs.profile.peak() < r.peak) {
        auto top = std::max_element(obs.profile.points.begin(), obs.profile.points.end(),
                                    [](const auto& a, const auto& b) { return a.second < b.second; });
        if (top != obs.profile.points.end())
          top->second = r.peak;
        else
          obs.profile.points.emplace_back(0.0, r.peak);
      }
      estimator_.learn(obs);
      history =
          HistoryRecord{obs.key.exact(),  obs.key.source, obs.key.content_hash, obs.key.flags, obs.key.archs,
                        obs.key.compiler, obs.key.family, obs.key.arch_count,   r.threads,     obs.profile.serialize()};
    }
    store_.finish_unit(unit_id, ok ? UnitState::succeeded : UnitState::failed, info.exit_code, r.peak, duration,
                       clock_.wall(), history);
    std::string summary = (ok ? "finished " : "FAILED ") + u.name + " in " + std::to_string(int(duration)) +
                          " s, peak " + format_size(r.peak) +
                          (ok ? "" : ", exit code " + std::to_string(info.exit_code)) + "\n";
    append_build_log(u.build_id, summary + read_small_file(u.log_path));
    if (!ok) {
      spdlog::warn("unit {} of build {} failed with exit code {}", u.name, u.build_id, info.exit_code);
      // Like make without -k: nothing new starts once a unit failed; `fad retry`
      // requeues. External builds are the build tool's to stop (ninja -k).
      if (u.kind != UnitKind::external) store_.set_pending_units(u.build_id, UnitState::cancelled, false);
    }
    update_build(u.build_id);
  } catch (const StoreError& e) {
    spdlog::error("recording the end of unit {}: {}", u.name, e.what());
  }
}

void Engine::update_build(std::int64_t build_id) {
  auto b = store_.build(build_id);
  if (!b || is_final(b->state)) return;
  if (b->kind == "external") {
    // Its end is the build command's (close_build) or, for launches outside
    // fad run, a quiet spell (check_external); until then it is running.
    last_activity_[build_id] = clock_.now();
    if (b->state == BuildState::queued) store_.set_build_state(build_id, BuildState::running, std::nullopt);
    return;
  }
  const auto units = store_.units(build_id);
  int succeeded = 0, failed = 0, started = 0;
  std::string first_failed;
  bool live = false;
  for (const auto& u : units) {
    if (u.state == UnitState::succeeded) ++succeeded;
    if (u.state == UnitState::failed && first_failed.empty()) first_failed = u.name;
    if (u.state == UnitState::failed) ++failed;
    if (u.state != UnitState::queued || u.attempts > 0) ++started;
    if (running_.count(u.id)) live = true;
  }
  if (succeeded == static_cast<int>(units.size())) {
    store_.set_build_state(build_id, BuildState::succeeded, clock_.wall());
    append_build_log(build_id, "build succeeded\n");
    spdlog::info("build {} succeeded", build_id);
  } else if (failed > 0 && !live) {
    const std::string why = std::to_string(failed) + " unit(s) failed, first " + first_failed + "; see 'fad logs " +
                            std::to_string(build_id) + " " + first_failed + "'";
    store_.set_build_state(build_id, BuildState::failed, clock_.wall(), why);
    append_build_log(build_id, "build failed: " + why + "\n");
    spdlog::warn("build {} failed: {}", build_id, why);
  } else if (b->state != BuildState::paused) {
    store_.set_build_state(build_id, started > 0 ? BuildState::running : BuildState::queued, std::nullopt);
  }
}

std::string Engine::build_dir(std::int64_t id) const { return options_.state_dir + "/builds/" + std::to_string(id); }

void Engine::append_build_log(std::int64_t build_id, const std::string& text) {
  std::error_code ec;
  fs::create_directories(build_dir(build_id), ec);
  std::ofstream(build_dir(build_id) + "/build.log", std::ios::app) << "[" << clock_.wall() << "] " << text;
}

void Engine::begin_shutdown() {
  shutting_down_ = true;
  const double now = clock_.now();
  for (auto& [id, r] : running_) stop_unit(r, StopReason::shutdown, now);
}

}  // namespace fad
