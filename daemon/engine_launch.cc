// Compiles run by `fad launch` and builds opened by `fad run`. fadd admits the
// compile (same estimator and scheduler as its own units), the launcher runs
// it and reports its process group and its end; fadd measures, suspends or
// stops it like any unit. A launcher that vanishes never wedges the queue:
// unpolled or orphaned units are dropped after a timeout.
#include <filesystem>
#include <fstream>

#include <spdlog/spdlog.h>

#include "common/size.h"
#include "daemon/engine.h"
#include "daemon/memory_probe.h"
#include "daemon/responses.h"
#include "daemon/planner.h"

namespace fad {

namespace fs = std::filesystem;

namespace {
// A launcher polls every 200 ms; silence this long means it is gone.
constexpr double kPollTimeoutS = 30;
// An admitted launcher reports its compiler's pid at once; this long without means it died.
constexpr double kStartTimeoutS = 60;
// A compiler's group may vanish just before its launcher reports the exit.
constexpr double kGoneGraceS = 10;
// Launches outside `fad run` are grouped per session into one build, closed after this quiet spell.
constexpr double kSessionIdleS = 30;

// Flags that name this call's files rather than how it compiles: left out of
// the learning key, so the same kernel built in another directory is known.
bool takes_path_value(const std::string& a) {
  return a == "-o" || a == "-MF" || a == "-MT" || a == "-MQ" || a == "--output-file" || a == "-odir";
}

std::string key_flags(const std::vector<std::string>& argv, const std::string& source) {
  std::string out;
  for (std::size_t i = 1; i < argv.size(); ++i) {
    const auto& a = argv[i];
    if (takes_path_value(a) || a == "--threads" || a == "-t") {
      ++i;
      continue;
    }
    if (a.rfind("--threads=", 0) == 0 || a == source || fs::path(a).filename() == fs::path(source).filename()) continue;
    out += (out.empty() ? "" : " ") + a;
  }
  return out;
}

// "flash_fwd_hdim128_fp16_sm80" -> "flash_fwd_hdim_fp_sm": siblings that differ
// in head dim or dtype share a family and inform each other's estimates.
std::string family_of(const std::string& source) {
  std::string stem = fs::path(source).stem().string(), out;
  for (char c : stem)
    if (c < '0' || c > '9') out += c;
  return out;
}

}  // namespace

Response Engine::open_build(const OpenBuildRequest& req) {
  if (shutting_down_) return error_response(ErrorCode::failed, "fadd is shutting down");
  BuildRecord b;
  b.name = req.name.empty() ? req.command.substr(0, 80) : req.name;
  b.kind = "external";
  b.command = req.command;
  b.budget_bytes = req.budget_bytes;
  b.created_at = clock_.wall();
  b.kernels_glob = "";
  const auto id = store_.create_build(std::move(b), {});
  last_activity_[id] = clock_.now();
  append_build_log(id, "fad run: " + req.command + "\n");
  return ok_response({{"id", id}});
}

void Engine::finalize_external(const BuildRecord& b, const std::string& why) {
  const double now = clock_.now();
  for (auto& [uid, r] : running_)
    if (r.unit.build_id == b.id) stop_unit(r, StopReason::cancel, now);
  store_.set_pending_units(b.id, UnitState::cancelled, false);
  int failed = 0;
  for (const auto& u : store_.units(b.id)) failed += u.state == UnitState::failed;
  const bool success = why.empty() && failed == 0;
  std::string error = why;
  if (error.empty() && failed) error = std::to_string(failed) + " compile(s) failed";
  store_.set_build_state(b.id, success ? BuildState::succeeded : BuildState::failed, clock_.wall(), error);
  append_build_log(b.id, std::string("build ") + (success ? "succeeded" : "failed: " + error) + "\n");
  last_activity_.erase(b.id);
}

Response Engine::close_build(const CloseBuildRequest& req) {
  auto b = store_.build(req.id);
  if (!b) return error_response(ErrorCode::not_found, "no build " + std::to_string(req.id));
  if (b->kind != "external")
    return error_response(ErrorCode::usage, "build " + std::to_string(req.id) + " was not opened by fad run");
  if (!is_final(b->state))
    finalize_external(*b, req.exit_code == 0 ? "" : "command exited with code " + std::to_string(req.exit_code));
  return ok_response({{"id", req.id}, {"state", to_string(store_.build(req.id)->state)}});
}

Response Engine::launch(const LaunchRequest& req) {
  if (shutting_down_) return error_response(ErrorCode::failed, "fadd is shutting down");
  std::optional<BuildRecord> build;
  if (req.build_id) {
    build = store_.build(*req.build_id);
    if (!build || build->kind != "external" || is_final(build->state))
      return error_response(ErrorCode::not_found,
                            "build " + std::to_string(*req.build_id) + " is not an open fad run build");
  } else {
    build = store_.session_build(req.session);
    if (!build) {
      BuildRecord b;
      b.name = "launches of session " + std::to_string(req.session);
      b.kind = "external";
      b.session = req.session;
      b.created_at = clock_.wall();
      b.kernels_glob = "";
      const auto id = store_.create_build(std::move(b), {});
      build = store_.build(id);
    }
  }
  UnitRecord u;
  u.kind = UnitKind::external;
  u.name = fs::path(req.output.empty() ? req.source : req.output).filename().string();
  u.source = req.source;
  u.family = family_of(req.source);
  u.archs = req.archs;
  u.argv = req.argv;
  u.output_path = req.output;
  u.content_hash = content_hash(read_small_file(req.source));
  u.flags = key_flags(req.argv, req.source);
  auto tc = toolchains_(req.argv.front());
  u.compiler = tc ? tc->version : req.argv.front();
  u.key = unit_key(u).exact();
  const auto unit_id = store_.add_unit(build->id, u, build_dir(build->id) + "/logs");
  {
    std::error_code ec;
    fs::create_directories(fs::path(u.log_path).parent_path(), ec);
    std::ofstream log(u.log_path);
    log << "$ (cd " << req.cwd << " &&";
    for (const auto& a : req.argv) log << " " << a;
    log << ")\n(output goes to the launcher's terminal)\n";
  }
  const double now = clock_.now();
  last_poll_[unit_id] = now;
  last_activity_[build->id] = now;
  update_build(build->id);
  if (wake_) wake_();
  return ok_response({{"unit_id", unit_id}, {"build_id", build->id}});
}

void Engine::admit_external(const UnitRecord& unit, const Decision& d, double now, const std::string& node) {
  store_.start_unit(unit.id, d.threads, d.estimate_bytes, clock_.wall());
  Running r;
  if (!node.empty()) {
    // On a cluster the launcher runs its compiler as a step on this node.
    store_.set_unit_node(unit.id, node);
    r.node = node;
    r.step = launcher_.step_command(LaunchSpec{unit.id, {}, unit.log_path, node, d.threads, d.estimate_bytes});
  }
  r.unit = unit;
  r.started_at = now;
  r.threads = d.threads;
  r.predicted = d.predicted;
  r.guess = d.guess;
  r.external = true;
  running_.emplace(unit.id, std::move(r));
  spdlog::info("admitted {} of build {} with {} thread(s), estimate {} ({})", unit.name, unit.build_id, d.threads,
               format_size(d.estimate_bytes), d.reason);
  update_build(unit.build_id);
}

Response Engine::launch_poll(const UnitRequest& req) {
  const double now = clock_.now();
  if (auto it = running_.find(req.unit_id); it != running_.end() && it->second.external) {
    if (it->second.stop != StopReason::none)
      return ok_response({{"state", "queued"}, {"wait_reason", "being requeued"}});
    json admitted{{"state", "admitted"}, {"threads", it->second.threads}};
    if (!it->second.node.empty()) {
      admitted["node"] = it->second.node;
      admitted["step"] = it->second.step;
    }
    return ok_response(std::move(admitted));
  }
  auto unit = store_.unit(req.unit_id);
  if (!unit || unit->kind != UnitKind::external)
    return error_response(ErrorCode::not_found, "no launched unit " + std::to_string(req.unit_id));
  if (unit->state == UnitState::queued) {
    last_poll_[req.unit_id] = now;
    return ok_response({{"state", "queued"}, {"wait_reason", unit->wait_reason}});
  }
  return ok_response({{"state", to_string(unit->state)}});
}

Response Engine::launch_started(const LaunchStartedRequest& req) {
  auto it = running_.find(req.unit_id);
  if (it == running_.end() || !it->second.external || it->second.pgid != 0 || it->second.stop != StopReason::none)
    return error_response(ErrorCode::failed,
                          "unit " + std::to_string(req.unit_id) + " is not admitted now; poll again");
  it->second.pgid = req.pid;
  // Its profile starts now, not at admission: the launcher's poll and the
  // compiler's start lag behind, and staggered spikes must stay staggered.
  it->second.started_at = clock_.now();
  store_.set_unit_pgid(req.unit_id, req.pid);
  launcher_.adopt_unit(req.pid, req.unit_id);
  last_poll_.erase(req.unit_id);
  return ok_response(json::object());
}

Response Engine::launch_finished(const LaunchFinishedRequest& req) {
  auto it = running_.find(req.unit_id);
  if (it == running_.end() || !it->second.external) {
    auto unit = store_.unit(req.unit_id);
    if (unit && unit->state == UnitState::queued) return ok_response({{"requeue", true}});
    return error_response(ErrorCode::not_found, "unit " + std::to_string(req.unit_id) + " is not running");
  }
  const auto account = launcher_.release(it->second.pgid);
  // A compiler the OOM killer ended may show as a plain exit code through a
  // step wrapper; its cgroup knows better.
  on_exit(req.unit_id, ExitInfo{req.exit_code, req.signaled || account.oom_killed, account.peak_bytes,
                                account.oom_killed, account.lost, account.peak_source});
  // Stopped by fad, or killed by the OOM killer and requeued: the launcher
  // waits for admission again and reruns the compile.
  auto unit = store_.unit(req.unit_id);
  return ok_response({{"requeue", unit && unit->state == UnitState::queued}});
}

void Engine::check_external(double now) {
  std::vector<std::int64_t> lost;
  for (auto& [id, r] : running_) {
    if (!r.external || r.stop != StopReason::none) continue;
    if (r.pgid == 0) {
      if (now - r.started_at > kStartTimeoutS) lost.push_back(id);
    } else if (!launcher_.group_alive(r.pgid)) {
      if (r.gone_since == 0) r.gone_since = now;
      if (now - r.gone_since > kGoneGraceS) lost.push_back(id);
    }
  }
  for (auto id : lost) {
    spdlog::warn("launcher of unit {} vanished; marking it failed", running_.at(id).unit.name);
    on_exit(id, ExitInfo{-1, true, launcher_.release(running_.at(id).pgid).peak_bytes});
  }
  for (auto it = last_poll_.begin(); it != last_poll_.end();) {
    if (now - it->second <= kPollTimeoutS) {
      ++it;
      continue;
    }
    if (auto unit = store_.unit(it->first); unit && unit->state == UnitState::queued) {
      spdlog::warn("launcher of queued unit {} stopped asking; dropping it", unit->name);
      store_.finish_unit(unit->id, UnitState::cancelled, std::nullopt, 0, 0, clock_.wall(), std::nullopt);
    }
    it = last_poll_.erase(it);
  }
  for (const auto& b : store_.active_builds()) {
    if (b.kind != "external" || !b.session) continue;
    auto [activity, inserted] = last_activity_.emplace(b.id, now);
    if (inserted || now - activity->second < kSessionIdleS) continue;
    bool busy = false;
    for (const auto& u : store_.units(b.id)) busy |= u.state == UnitState::queued || u.state == UnitState::running;
    if (!busy) finalize_external(b, "");
  }
}

}  // namespace fad
