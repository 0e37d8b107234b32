// Client requests handled by the engine: one method per protocol message.
// Every failure is an error response; nothing a client sends can stop the loop.
#include <signal.h>
#include <unistd.h>

#include <ctime>
#include <filesystem>
#include <fstream>

#include <spdlog/spdlog.h>

#include "common/arch.h"
#include "daemon/engine.h"
#include "daemon/responses.h"
#include "daemon/manifest.h"
#include "daemon/planner.h"
#include "daemon/status_view.h"

namespace fad {

namespace fs = std::filesystem;

namespace {
Response no_build(std::int64_t id) { return error_response(ErrorCode::not_found, "no build " + std::to_string(id)); }

std::optional<std::time_t> parse_rfc3339(const std::string& s) {
  std::tm tm{};
  if (!strptime(s.c_str(), "%Y-%m-%dT%H:%M:%SZ", &tm)) return std::nullopt;
  return timegm(&tm);
}
}  // namespace

Response Engine::submit(const SubmitRequest& req) {
  if (shutting_down_) return error_response(ErrorCode::failed, "fadd is shutting down; submit again once it restarted");
  auto archs = parse_arch_list(req.archs);
  if (!archs) return error_response(ErrorCode::usage, archs.error());
  const std::string nvcc = req.nvcc.value_or(options_.nvcc);
  auto tc = toolchains_(nvcc);
  if (!tc) return error_response(ErrorCode::usage, tc.error());
  if (auto valid = validate_archs(*archs, tc->archs); !valid) return error_response(ErrorCode::usage, valid.error());
  auto manifest = load_manifest(options_.kernels_dir);
  if (!manifest) return error_response(ErrorCode::internal, manifest.error());
  auto units = plan_build(*manifest, PlanRequest{*archs, req.kernels, *tc, options_.kernels_dir, options_.state_dir});
  if (!units) return error_response(ErrorCode::usage, units.error());
  BuildRecord b;
  b.name = req.name;
  for (const auto& a : *archs) b.archs.push_back(a.display());
  b.kernels_glob = req.kernels;
  b.nvcc = tc->path;
  b.created_at = clock_.wall();
  const auto count = units->size();
  try {
    const auto id = store_.create_build(std::move(b), std::move(*units));
    append_build_log(id, "submitted: " + std::to_string(count) + " units for " + std::to_string(archs->size()) +
                             " arch(s) with " + tc->path + "\n");
    spdlog::info("build {} submitted: {} units", id, count);
    if (wake_) wake_();
    return ok_response({{"id", id}});
  } catch (const StoreError& e) {
    return error_response(ErrorCode::internal, std::string("cannot record the build: ") + e.what());
  }
}

json Engine::daemon_json() {
  return {{"version", FAD_VERSION},
          {"pid", static_cast<int>(::getpid())},
          {"uptime_s", static_cast<std::int64_t>(clock_.now() - started_at_)},
          {"running_units", running_.size()},
          {"memory", memory_json(last_snapshot_, last_capacity_, last_committed_)},
          {"executor", executor_json()}};
}

Response Engine::status(const StatusRequest& req) {
  json builds = json::array();
  if (req.id) {
    auto b = store_.build(*req.id);
    if (!b) return no_build(*req.id);
    builds.push_back(build_json(*b, store_.units(b->id), true));
  } else {
    for (const auto& b : store_.status_builds(10)) builds.push_back(build_json(b, store_.units(b.id), false));
  }
  return ok_response({{"daemon", daemon_json()}, {"builds", std::move(builds)}});
}

Response Engine::cancel(std::int64_t id) {
  auto b = store_.build(id);
  if (!b) return no_build(id);
  if (is_final(b->state))
    return error_response(ErrorCode::failed,
                          "build " + std::to_string(id) + " already " + std::string(to_string(b->state)));
  const double now = clock_.now();
  for (auto& [uid, r] : running_)
    if (r.unit.build_id == id) stop_unit(r, StopReason::cancel, now);
  store_.set_pending_units(id, UnitState::cancelled, true);
  store_.set_build_state(id, BuildState::cancelled, clock_.wall(), "cancelled by user");
  append_build_log(id, "build cancelled\n");
  return ok_response({{"id", id}, {"state", "cancelled"}});
}

Response Engine::pause(std::int64_t id) {
  auto b = store_.build(id);
  if (!b) return no_build(id);
  if (is_final(b->state) || b->state == BuildState::paused)
    return error_response(ErrorCode::failed, "build " + std::to_string(id) + " is " + std::string(to_string(b->state)) +
                                                 ", not running or queued");
  // Running units are frozen (SIGSTOP of their process group), keeping their
  // memory; nothing new starts until resume.
  for (auto& [uid, r] : running_) {
    if (r.unit.build_id != id || r.paused) continue;
    r.paused = true;
    if (!r.suspended) launcher_.signal_group(r.pgid, SIGSTOP);
  }
  store_.set_build_state(id, BuildState::paused, std::nullopt);
  append_build_log(id, "build paused\n");
  return ok_response({{"id", id}, {"state", "paused"}});
}

Response Engine::resume(std::int64_t id) {
  auto b = store_.build(id);
  if (!b) return no_build(id);
  if (b->state != BuildState::paused)
    return error_response(ErrorCode::failed,
                          "build " + std::to_string(id) + " is " + std::string(to_string(b->state)) + ", not paused");
  for (auto& [uid, r] : running_) {
    if (r.unit.build_id != id || !r.paused) continue;
    r.paused = false;
    if (!r.suspended) launcher_.signal_group(r.pgid, SIGCONT);
  }
  store_.set_build_state(id, BuildState::queued, std::nullopt);
  update_build(id);
  if (wake_) wake_();
  append_build_log(id, "build resumed\n");
  return ok_response({{"id", id}, {"state", to_string(store_.build(id)->state)}});
}

Response Engine::retry(std::int64_t id) {
  auto b = store_.build(id);
  if (!b) return no_build(id);
  if (b->state != BuildState::failed && b->state != BuildState::cancelled)
    return error_response(ErrorCode::failed, "build " + std::to_string(id) + " is " + std::string(to_string(b->state)) +
                                                 "; only failed or cancelled builds can be retried");
  for (const auto& [uid, r] : running_)
    if (r.unit.build_id == id)
      return error_response(ErrorCode::failed,
                            "build " + std::to_string(id) + " is still stopping its units; retry in a moment");
  Transaction tx(store_.db());
  const int requeued = store_.requeue_failed_units(id);
  store_.set_build_state(id, BuildState::queued, std::nullopt);
  tx.commit();
  update_build(id);
  if (wake_) wake_();
  append_build_log(id, "retry: " + std::to_string(requeued) + " unit(s) requeued\n");
  return ok_response({{"id", id}, {"state", to_string(store_.build(id)->state)}, {"requeued", requeued}});
}

Response Engine::logs(const LogsRequest& req) {
  auto b = store_.build(req.id);
  if (!b) return no_build(req.id);
  std::string path = build_dir(req.id) + "/build.log";
  bool finished = is_final(b->state);
  if (req.unit) {
    std::optional<UnitRecord> unit;
    for (auto& u : store_.units(req.id))
      if (u.name == *req.unit) unit = u;
    if (!unit)
      return error_response(ErrorCode::not_found, "build " + std::to_string(req.id) + " has no unit '" + *req.unit +
                                                      "' (see 'fad status " + std::to_string(req.id) + "')");
    path = unit->log_path;
    finished = unit->state != UnitState::queued && unit->state != UnitState::running;
  }
  std::ifstream in(path, std::ios::binary);
  std::string data;
  std::uint64_t size = 0;
  if (in) {
    in.seekg(0, std::ios::end);
    size = static_cast<std::uint64_t>(in.tellg());
    if (req.offset < size) {
      in.seekg(static_cast<std::streamoff>(req.offset));
      data.resize(static_cast<std::size_t>(std::min<std::uint64_t>(size - req.offset, req.max_bytes)));
      in.read(data.data(), static_cast<std::streamsize>(data.size()));
      data.resize(static_cast<std::size_t>(in.gcount()));
    }
  }
  const std::uint64_t next = std::min<std::uint64_t>(size, req.offset + data.size());
  // JSON strings must be UTF-8; compilers print plain ASCII, but never let a
  // stray byte break the response.
  for (auto& c : data)
    if (static_cast<unsigned char>(c) >= 0x80) c = '?';
  return ok_response({{"data", data}, {"offset", next}, {"done", finished && next >= size}});
}

Response Engine::history(const HistoryRequest& req) {
  json builds = json::array();
  for (const auto& b : store_.finished_builds(req.limit)) {
    auto j = build_json(b, store_.units(b.id), false);
    auto start = parse_rfc3339(b.created_at);
    auto end = b.finished_at ? parse_rfc3339(*b.finished_at) : std::nullopt;
    j["duration_s"] = start && end ? json(static_cast<std::int64_t>(*end - *start)) : json(nullptr);
    builds.push_back(std::move(j));
  }
  return ok_response({{"builds", std::move(builds)}});
}

}  // namespace fad
