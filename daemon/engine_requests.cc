// Client requests handled by the engine: one method per protocol message.
// Every failure is an error response; nothing a client sends can stop the loop.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <filesystem>

#include <spdlog/spdlog.h>

#include "common/arch.h"
#include "common/duration.h"
#include "common/file_read.h"
#include "common/text.h"
#include "daemon/credentials.h"
#include "common/time_text.h"
#include "daemon/engine.h"

#include <algorithm>
#include <cmath>
#include "daemon/responses.h"
#include "daemon/manifest.h"
#include "daemon/planner.h"
#include "daemon/status_view.h"

namespace fad {

namespace fs = std::filesystem;

namespace {
json opt_json(const std::optional<std::string>& v) { return v ? json(*v) : json(nullptr); }

/// What a logs reply's data may take once JSON escapes it. A control byte
/// takes six (\u001b): a slice of them (max_bytes is at most half the limit)
/// would pass the message limit, while a usual slice, even of coloured
/// compiler output, is sent whole.
constexpr std::size_t kLogReplyBytes = kMaxMessageBytes * 3 / 4;

/// How many leading bytes of `data` stay within `budget` once JSON escapes them.
std::size_t fits_escaped(std::string_view data, std::size_t budget) {
  std::size_t used = 0, n = 0;
  for (; n < data.size(); ++n) {
    const auto c = static_cast<unsigned char>(data[n]);
    const bool short_escape = c == '"' || c == '\\' || c == '\b' || c == '\f' || c == '\n' || c == '\r' || c == '\t';
    const std::size_t cost = short_escape ? 2 : c < 0x20 ? 6 : 1;
    if (used + cost > budget) break;
    used += cost;
  }
  return n;
}

json seconds_between(const std::optional<std::string>& from, const std::optional<std::string>& to) {
  auto a = from ? parse_rfc3339(*from) : std::nullopt;
  auto b = to ? parse_rfc3339(*to) : std::nullopt;
  return a && b ? json(static_cast<std::int64_t>(*b - *a)) : json(nullptr);
}
}  // namespace

Response Engine::no_build(std::int64_t id) {
  std::string text = "no build " + std::to_string(id);
  // Numbers are never given twice (AUTOINCREMENT): one below the last given
  // that is not here any more had its record deleted.
  if (id > 0 && id <= store_.last_build_id() && options_.keep_records_per_user > 0)
    text += " (its record was deleted: fadd keeps those of each user's newest " +
            std::to_string(options_.keep_records_per_user) + " finished builds, keep_records_per_user)";
  return error_response(ErrorCode::not_found, text);
}

std::optional<Response> Engine::refuse_unless_owner(const Caller& caller, const BuildRecord& b, const char* verb) {
  const uid_t owner = owner_of(b);
  if (caller.is_root() || caller.uid == owner) return std::nullopt;
  const std::string name = user_name(owner);
  const std::string who = owner == 0 ? std::string("root") : name + " or root";
  return error_response(ErrorCode::failed, "build " + std::to_string(b.id) + " belongs to " + name + "; only " + who +
                                               " may " + verb + " it");
}

std::string Engine::learning_scope(const Caller& caller) const {
  if (caller.is_root() || caller.uid == options_.daemon_uid) return "";
  return "uid:" + std::to_string(caller.uid);
}

std::optional<Response> Engine::refuse_compiles_for(const Caller& caller) {
  // Root runs each user's compiles as that user. Any other fadd can only run
  // them as itself, which would hand the caller its rights: refused. So is a
  // root fadd whose executor cannot drop rights (Slurm steps run as fadd).
  if (caller.uid == options_.daemon_uid || caller.is_root()) return std::nullopt;
  if (options_.daemon_uid == 0) {
    if (launcher_.drops_rights()) return std::nullopt;
    return error_response(ErrorCode::failed,
                          "this fadd runs as root with executor slurm, whose steps run with fadd's rights and in "
                          "its allocation, so it cannot compile for " +
                              user_name(caller.uid) + "; start your own with 'fad daemon start'");
  }
  return error_response(ErrorCode::failed, "this fadd runs as " + user_name(options_.daemon_uid) +
                                               " and cannot compile for " + user_name(caller.uid) +
                                               "; start your own with 'fad daemon start', or ask for a system fadd "
                                               "run by root");
}

std::optional<Response> Engine::refuse_past_allowance(const HourlyAllowance& allowance, uid_t uid,
                                                      const std::string& did, const std::string& key,
                                                      const std::string& then) const {
  if (uid == 0) return std::nullopt;  // root's own work is not what the limit guards against
  const double wait = allowance.wait_s(uid, clock_.now());
  if (wait <= 0) return std::nullopt;
  return error_response(ErrorCode::failed, user_name(uid) + did + " one user may in an hour (" + key + " = " +
                                               std::to_string(allowance.per_hour()) + "); " + then + " " +
                                               format_age(static_cast<std::int64_t>(std::ceil(wait))));
}

std::optional<Response> Engine::refuse_over_build_limit(uid_t owner) {
  if (auto refused = refuse_past_allowance(build_allowance_, owner, " has opened the most builds",
                                           "max_builds_per_user_per_hour", "try again in"))
    return refused;
  const int limit = options_.max_builds_per_user;
  if (limit <= 0) return std::nullopt;
  const int open = store_.open_builds_of(owner);
  if (open < limit) return std::nullopt;
  return error_response(ErrorCode::failed, user_name(owner) + " has " + std::to_string(open) +
                                               " builds queued, running or paused, the most one user may have "
                                               "(max_builds_per_user = " +
                                               std::to_string(limit) + "); try again once one has ended");
}

void Engine::submit(const Caller& caller, const SubmitRequest& req, Reply done) {
  if (shutting_down_)
    return done(error_response(ErrorCode::failed, "fadd is shutting down; submit again once it restarted"));
  if (auto refused = refuse_compiles_for(caller)) return done(*refused);
  if (auto refused = refuse_over_build_limit(caller.uid)) return done(*refused);
  auto archs = parse_arch_list(req.archs);
  if (!archs) return done(error_response(ErrorCode::usage, archs.error()));
  // The compiler is probed as the user who will run it, off the event loop;
  // the answer comes when the probe ends.
  BuildRecord as_owner = build_owned_by(caller);
  ToolchainQuery query{req.nvcc.value_or(options_.nvcc), run_as(as_owner)};
  toolchains_(query, [this, caller, req, archs = *archs, done = std::move(done)](Result<Toolchain> tc) {
    // Planning and recording thousands of units is the submit's real cost,
    // and it runs here, after the server has charged the request.
    const auto start = std::chrono::steady_clock::now();
    try {
      finish_submit(caller, req, archs, std::move(tc), done);
    } catch (const std::exception& e) {
      // Answered later, outside the request handler's guard: guard here.
      spdlog::error("submit failed: {}", e.what());
      done(error_response(ErrorCode::internal, std::string("internal error: ") + e.what()));
    }
    if (charge_) charge_(caller.uid, std::chrono::steady_clock::now() - start);
  });
}

void Engine::finish_submit(const Caller& caller, const SubmitRequest& req, const std::vector<Arch>& archs,
                           Result<Toolchain> tc, const Reply& done) {
  if (shutting_down_)
    return done(error_response(ErrorCode::failed, "fadd is shutting down; submit again once it restarted"));
  if (!tc) return done(error_response(ErrorCode::usage, tc.error()));
  // Again: other submits of the same user may have ended their probes first.
  if (auto refused = refuse_over_build_limit(caller.uid)) return done(*refused);
  if (auto valid = validate_archs(archs, tc->archs); !valid)
    return done(error_response(ErrorCode::usage, valid.error()));
  auto manifest = load_manifest(options_.kernels_dir);
  if (!manifest) return done(error_response(ErrorCode::internal, manifest.error()));
  auto units = plan_build(*manifest, PlanRequest{archs, req.kernels, *tc, options_.kernels_dir, options_.state_dir});
  if (!units) return done(error_response(ErrorCode::usage, units.error()));
  // The caller's units run with the caller's rights (a root fadd compiles
  // as them), so the caller can make them look bigger or slower than they
  // are (ptrace, SIGSTOP); a compiler they chose may be anything that prints
  // nvcc's version. What they show teaches only the caller's own builds.
  for (auto& u : *units) {
    u.scope = learning_scope(caller);
    u.key = unit_key(u).exact();
  }
  BuildRecord b = build_owned_by(caller);
  b.name = req.name;
  for (const auto& a : archs) b.archs.push_back(a.display());
  b.kernels_glob = req.kernels;
  b.nvcc = tc->path;
  b.created_at = clock_.wall();
  const auto count = units->size();
  try {
    const auto id = store_.create_build(std::move(b), std::move(*units));
    build_allowance_.take(caller.uid, clock_.now());
    append_build_log(id, "submitted: " + std::to_string(count) + " units for " + std::to_string(archs.size()) +
                             " arch(s) with " + tc->path + " by " + user_name(caller.uid) + "\n");
    spdlog::info("build {} submitted by {}: {} units", id, user_name(caller.uid), count);
    // The compile cache serves builds whose compiles run as fadd itself; a
    // root fadd compiling as another user neither restores into nor stores
    // from their files with its own rights.
    if (cache_ && !run_as(*store_.build(id))) {
      cache_identity_[id] = probed_identity(*tc);
      restore_cached_units(id);
    }
    if (wake_) wake_();
    return done(ok_response({{"id", id}}));
  } catch (const StoreError& e) {
    storage_failed(e.what());
    return done(error_response(ErrorCode::internal, std::string("cannot record the build: ") + e.what()));
  }
}

Response Engine::shutdown(const Caller& caller) {
  if (caller.is_root() || caller.uid == options_.daemon_uid) return ok_response(json::object());
  if (options_.daemon_uid == 0) return error_response(ErrorCode::failed, "only root may stop this fadd");
  return error_response(ErrorCode::failed,
                        "only root or " + user_name(options_.daemon_uid) + " (who runs this fadd) may stop it");
}

void Engine::overlay_unrecorded(std::vector<UnitRecord>& units) const {
  // Ended units whose end the database has not taken yet (a full disk) are
  // shown as they ended, not as the "running" their row still says.
  using Action = ExitOutcome::Action;
  for (auto& u : units) {
    // A cancel not written yet: its units are shown as it will write them.
    if (unrecorded_cancels_.count(u.build_id) && (u.state == UnitState::queued || u.state == UnitState::running)) {
      u.state = UnitState::cancelled;
      continue;
    }
    // Being ended for good (its build cancelled or closed, its launcher
    // gone): shown as its end will be written, so a summary taken at once
    // counts it.
    if (u.state == UnitState::running && ending_for_good(u.id)) {
      u.state = UnitState::cancelled;
      continue;
    }
    const auto it = unrecorded_.find(u.id);
    if (it == unrecorded_.end() || it->second.recorded) continue;
    const Ended& e = it->second;
    switch (e.outcome.action) {
      case Action::requeue: u.state = UnitState::queued; continue;
      case Action::cancelled: u.state = UnitState::cancelled; break;
      case Action::succeed:
      case Action::fail:
      case Action::fail_build: u.state = e.ok ? UnitState::succeeded : UnitState::failed; break;
    }
    u.exit_code = known_exit_code(e.info);
    u.peak_bytes = std::max(u.peak_bytes, e.run.peak);
    u.duration_s = e.duration;
    u.finished_at = e.finished_at;
  }
}

bool Engine::ending_for_good(std::int64_t unit_id) const {
  const auto r = running_.find(unit_id);
  return r != running_.end() && r->second.stop == StopReason::cancel;
}

UnitSummary Engine::listed_summary(const BuildRecord& b) {
  // Counted in SQL: a listing of every open build must not read each unit's
  // row (a launched build may hold thousands, with their command lines).
  UnitSummary s = store_.unit_summary(b.id);
  for (const auto& [id, e] : unrecorded_) {
    if (e.recorded || e.run.unit.build_id != b.id) continue;
    auto stored = store_.unit(id);
    if (!stored) continue;
    std::vector<UnitRecord> shown{*stored};
    overlay_unrecorded(shown);
    s.count(stored->state, -1);
    s.count(shown[0].state);
  }
  const bool cancel_unwritten = unrecorded_cancels_.count(b.id) > 0;
  if (cancel_unwritten)
    for (const UnitState pending : {UnitState::queued, UnitState::running}) {
      const int n = s.by_state[static_cast<int>(pending)];
      s.count(pending, -n);
      s.count(UnitState::cancelled, n);
    }
  for (const auto& [id, r] : running_) {
    if (r.unit.build_id != b.id) continue;
    s.current_bytes += r.current;
    if (!cancel_unwritten && r.stop == StopReason::cancel) {  // counted as overlay_unrecorded shows it
      s.count(UnitState::running, -1);
      s.count(UnitState::cancelled);
    }
  }
  return s;
}

namespace {
/// "has succeeded", "is running": a state said in a sentence ("is succeeded" is not English).
std::string state_phrase(const std::string& state) {
  if (state == "succeeded" || state == "failed") return "has " + state;
  if (state == "cancelled") return "was cancelled";
  return "is " + state;
}
}  // namespace

std::string Engine::shown_state(const BuildRecord& b) const {
  // A cancel, pause or resume not written yet is shown as asked: its compilers are.
  if (unrecorded_cancels_.count(b.id)) return "cancelled";
  if (const auto asked = unrecorded_pauses_.find(b.id); asked != unrecorded_pauses_.end())
    return asked->second ? "paused" : "queued";
  return std::string(to_string(b.state));
}

json Engine::owned_build_json(const BuildRecord& stored, std::size_t unit_list_bytes) {
  BuildRecord b = stored;
  b.pruned_at = pruned_on(stored);
  if (const auto asked = unrecorded_pauses_.find(b.id); asked != unrecorded_pauses_.end())
    b.state = asked->second ? BuildState::paused : BuildState::queued;
  if (const auto cancelled = unrecorded_cancels_.find(b.id); cancelled != unrecorded_cancels_.end()) {
    b.state = BuildState::cancelled;
    b.finished_at = cancelled->second;
    b.error = "cancelled by user";
  }
  json j;
  if (unit_list_bytes == 0) {
    j = build_json(b, listed_summary(b));
  } else {
    auto units = store_.unit_views(b.id);
    overlay_unrecorded(units);
    const auto live = running_live(units);
    j = build_json(b, units, live);
    // A build of thousands of units (cached launches) must fit one message too.
    UnitRows rows = bounded_unit_rows(units, live, queued_live(b), unit_list_bytes, b.pruned_at.has_value());
    j["unit_list"] = std::move(rows.rows);
    if (rows.left_out) j["units_left_out"] = rows.left_out;
  }
  j["started_at"] = opt_json(store_.build_started_at(b.id));
  add_owner(j, b);
  return j;
}

void Engine::add_owner(json& j, const BuildRecord& b) const {
  const uid_t owner = owner_of(b);
  j["uid"] = owner;
  j["user"] = user_name(owner);
}

json Engine::daemon_json() {
  json warnings = json::array();
  if (!storage_problem_.empty()) warnings.push_back(storage_problem_);
  if (!hold_warning_.empty()) warnings.push_back(hold_warning_);
  if (!database_replaced_.empty()) warnings.push_back(database_replaced_);
  std::uint64_t used = 0;
  for (const auto& [id, r] : running_) used += r.current;
  return {{"version", FAD_VERSION},
          {"pid", static_cast<int>(::getpid())},
          {"uptime_s", static_cast<std::int64_t>(clock_.now() - started_at_)},
          {"running_units", running_.size()},
          {"state_dir", options_.state_dir},
          {"nvcc", options_.nvcc},
          {"memory", memory_json(last_snapshot_, last_capacity_, last_committed_, used)},
          {"warnings", std::move(warnings)},
          {"executor", executor_json()}};
}

namespace {
// A listing must fit the protocol's message limit however many builds there
// are (thousands of queued builds, a --limit of 10000): past this many bytes
// the rest are counted, not sent.
constexpr std::size_t kListingBytes = kMaxMessageBytes * 3 / 4;

/// Appends `item` to `list` unless the listing would pass kListingBytes.
bool append_within(json& list, json item, std::size_t& used) {
  const std::size_t bytes = item.dump(-1, ' ', false, json::error_handler_t::replace).size() + 1;
  if (used + bytes > kListingBytes) return false;
  used += bytes;
  list.push_back(std::move(item));
  return true;
}
}  // namespace

Response Engine::status(const Caller&, const StatusRequest& req) {
  // Everyone sees every build (a shared queue is only fair if it is visible);
  // acting on one, or reading its logs, is for its owner and root.
  json builds = json::array();
  std::size_t left_out = 0, used = 0;
  if (req.id) {
    auto b = store_.build(*req.id);
    if (!b) return no_build(*req.id);
    builds.push_back(owned_build_json(*b, kListingBytes));
  } else {
    // Oldest first, as a queue is read: the newest are the ones left out.
    for (const auto& b : store_.status_builds(10))
      left_out += left_out > 0 || !append_within(builds, owned_build_json(b), used);
  }
  json result{{"daemon", daemon_json()}, {"builds", std::move(builds)}};
  if (left_out) result["builds_left_out"] = left_out;
  return ok_response(std::move(result));
}

Response Engine::cancel(const Caller& caller, std::int64_t id) {
  auto b = store_.build(id);
  if (!b) return no_build(id);
  if (auto refused = refuse_unless_owner(caller, *b, "cancel")) return *refused;
  if (is_final(b->state))
    return error_response(ErrorCode::failed,
                          "build " + std::to_string(id) + " already " + std::string(to_string(b->state)));
  // Recorded first, all at once. A database that cannot take it (a full
  // disk, perhaps filled by this very build) must not keep its compilers
  // running: they are stopped, and the cancel is written before anything
  // else once the database can take it (nothing starts until then). Lost
  // only if fadd stops before that: the build then runs again.
  bool recorded = true;
  try {
    store_.cancel_build(id, clock_.wall(), "cancelled by user");
    unrecorded_cancels_.erase(id);  // asked again, and taken this time
    unrecorded_pauses_.erase(id);
  } catch (const StoreError& err) {
    storage_failed(err.what());
    spdlog::warn(
        "build {} cancelled, not recorded yet ({}): its compilers are stopped, the cancel is written "
        "once the database can take it",
        id, err.what());
    unrecorded_cancels_.emplace(id, clock_.wall());
    unrecorded_pauses_.erase(id);  // the cancel, written first, ends it
    recorded = false;
  }
  const double now = clock_.now();
  for (auto& [uid, r] : running_)
    if (r.unit.build_id == id) stop_unit(r, StopReason::cancel, now);
  if (recorded) best_effort([&] { append_build_log(id, "build cancelled\n"); });
  json result{{"id", id}, {"state", "cancelled"}};
  if (!recorded) result["recorded"] = false;
  return ok_response(std::move(result));
}

Response Engine::pause(const Caller& caller, std::int64_t id) {
  auto b = store_.build(id);
  if (!b) return no_build(id);
  if (auto refused = refuse_unless_owner(caller, *b, "pause")) return *refused;
  if (is_final(b->state) || unrecorded_cancels_.count(id) || paused(*b))
    return error_response(ErrorCode::failed, "build " + std::to_string(id) + " " + state_phrase(shown_state(*b)) +
                                                 ": only a running or queued build can be paused");
  // A database that cannot take it (a full disk, perhaps filled by this
  // build) must not keep the build running: it is paused at once, and the
  // pause written once the database can take it.
  const bool recorded = record_pause(*b, true);
  // Running units are frozen (SIGSTOP of their process group), keeping their
  // memory; nothing new starts until resume.
  for (auto& [uid, r] : running_) {
    if (r.unit.build_id != id || r.paused) continue;
    r.paused = true;
    r.note_frozen(clock_.now());
    if (!r.suspended) signal_unit(r, SIGSTOP);
    record_event(uid, "pause");
  }
  if (recorded) best_effort([&] { append_build_log(id, "build paused\n"); });
  json result{{"id", id}, {"state", "paused"}};
  if (!recorded) result["recorded"] = false;
  return ok_response(std::move(result));
}

Response Engine::resume(const Caller& caller, std::int64_t id) {
  auto b = store_.build(id);
  if (!b) return no_build(id);
  if (auto refused = refuse_unless_owner(caller, *b, "resume")) return *refused;
  if (is_final(b->state) || unrecorded_cancels_.count(id) || !paused(*b))
    return error_response(ErrorCode::failed,
                          "build " + std::to_string(id) + " " + state_phrase(shown_state(*b)) + ", not paused");
  const bool recorded = record_pause(*b, false);
  for (auto& [uid, r] : running_) {
    if (r.unit.build_id != id || !r.paused) continue;
    r.paused = false;
    r.note_frozen(clock_.now());
    if (!r.suspended) signal_unit(r, SIGCONT);
    record_event(uid, "unpause");
  }
  if (wake_) wake_();
  if (recorded) best_effort([&] { append_build_log(id, "build resumed\n"); });
  auto now = store_.build(id);
  json result{{"id", id}, {"state", recorded && now ? to_string(now->state) : "queued"}};
  if (!recorded) result["recorded"] = false;
  return ok_response(std::move(result));
}

Response Engine::retry(const Caller& caller, std::int64_t id) {
  auto b = store_.build(id);
  if (!b) return no_build(id);
  if (auto refused = refuse_unless_owner(caller, *b, "retry")) return *refused;
  // Whoever asks, the units would run as the build's owner: refused where
  // they cannot (see refuse_compiles_for), not left to fail one by one.
  if (auto refused = refuse_compiles_for(Caller{owner_of(*b), owner_of(*b), 0})) return *refused;
  // Its compiles were run by launchers that have ended: requeued, nothing
  // would ever run them.
  if (b->kind == "external")
    return error_response(ErrorCode::failed,
                          "build " + std::to_string(id) +
                              " holds the compiles of a fad run or fad launch command; run that command again");
  if (b->state != BuildState::failed && b->state != BuildState::cancelled)
    return error_response(ErrorCode::failed,
                          "build " + std::to_string(id) +
                              (b->state == BuildState::succeeded ? std::string(" succeeded")
                                                                 : " is " + std::string(to_string(b->state))) +
                              "; only failed or cancelled builds can be retried");
  for (const auto& [uid, r] : running_)
    if (r.unit.build_id == id)
      return error_response(ErrorCode::failed,
                            "build " + std::to_string(id) + " is still stopping its units; retry in a moment");
  if (const auto pruned = pruned_on(*b))
    return error_response(ErrorCode::failed, "build " + std::to_string(id) + "'s outputs were pruned on " + *pruned +
                                                 "; submit it again instead");
  // Reopened, it counts against its owner's limits like a new one.
  if (auto refused = refuse_over_build_limit(owner_of(*b))) return *refused;
  build_allowance_.take(owner_of(*b), clock_.now());
  int failed = 0, cancelled = 0;
  for (const auto& u : store_.units(id)) {
    failed += u.state == UnitState::failed;
    cancelled += u.state == UnitState::cancelled;
    lost_runs_.erase(u.id);  // a retry starts its count of lost steps afresh
  }
  Transaction tx(store_.db());
  const int requeued = store_.requeue_failed_units(id);
  store_.set_build_state(id, BuildState::queued, std::nullopt);
  tx.commit();
  update_build(id);
  if (wake_) wake_();
  append_build_log(id, "retry: " + std::to_string(requeued) + " unit(s) requeued\n");
  return ok_response({{"id", id},
                      {"state", to_string(store_.build(id)->state)},
                      {"requeued", requeued},
                      {"requeued_failed", failed},
                      {"requeued_cancelled", cancelled}});
}

Response Engine::logs(const Caller& caller, const LogsRequest& req) {
  auto b = store_.build(req.id);
  if (!b) return no_build(req.id);
  // Compiler output quotes the sources; on disk it is readable by its owner only.
  if (auto refused = refuse_unless_owner(caller, *b, "read the logs of")) return *refused;
  if (const auto pruned = pruned_on(*b))
    return error_response(ErrorCode::not_found,
                          "build " + std::to_string(req.id) + "'s logs were pruned on " + *pruned);
  std::string path = build_dir(req.id) + "/build.log";
  bool finished = is_final(b->state);
  // A finished build has logged at least its end: with no directory left,
  // an empty answer would read as a build that printed nothing.
  std::error_code ec;
  if (finished && !fs::exists(build_dir(req.id), ec) && !ec)
    return error_response(ErrorCode::not_found, "build " + std::to_string(req.id) + "'s logs are gone: " +
                                                    build_dir(req.id) + " was deleted outside fad");
  if (req.unit) {
    const auto unit = store_.unit_named(req.id, *req.unit);
    if (!unit)
      return error_response(ErrorCode::not_found, "build " + std::to_string(req.id) + " has no unit '" + *req.unit +
                                                      "' (see 'fad status " + std::to_string(req.id) + "')");
    path = unit->log_path;
    finished = unit->state != UnitState::queued && unit->state != UnitState::running;
    // A unit that ran has a log: none there would read as a compiler that printed nothing.
    if (unit->started_at && !fs::exists(path, ec) && !ec)
      return error_response(ErrorCode::not_found,
                            "unit " + *req.unit + "'s log is gone: " + path +
                                " was deleted outside fad, or could not be created (fadd's log says why)");
  }
  std::uint64_t size = 0;
  auto slice = read_file_slice(path, req.offset, static_cast<std::size_t>(req.max_bytes), &size);
  std::string data = slice ? std::move(*slice) : std::string();
  data.resize(fits_escaped(data, kLogReplyBytes));
  // A character the slice cuts is left to the next read, which gets it whole:
  // one the file holds whole (a slice too small for it), or one still being
  // written (a compiler's output flushed in blocks). Only a slice too small
  // for one character, or a log that ends inside one, moves on with '?'s.
  const bool at_end = req.offset + data.size() >= size;
  if (const auto cut = utf8_cut_tail(data); cut > 0 && (cut < data.size() || (at_end && !finished)))
    data.resize(data.size() - cut);
  const std::uint64_t next = std::min<std::uint64_t>(size, req.offset + data.size());
  // JSON strings must be UTF-8: a byte that is not part of a UTF-8 character
  // (a compiler in a Latin-1 locale) goes as '?'; UTF-8 text as it is.
  return ok_response({{"data", utf8_or_question(data)}, {"offset", next}, {"done", finished && next >= size}});
}

Response Engine::history(const Caller&, const HistoryRequest& req) {
  json builds = json::array();
  std::size_t left_out = 0, used = 0;
  for (const auto& b : store_.finished_builds(req.limit)) {
    if (left_out) {
      ++left_out;  // newest first: the oldest are the ones left out
      continue;
    }
    auto j = owned_build_json(b);
    // Time waiting behind other builds and time compiling, apart: a 2 s
    // compile that queued for 5 minutes must not read as a 5-minute build.
    const auto started = store_.build_started_at(b.id);
    j["duration_s"] = seconds_between(b.created_at, b.finished_at);
    // A build that never started (cancelled while queued) only waited.
    j["queue_s"] = seconds_between(b.created_at, started ? started : b.finished_at);
    j["run_s"] = started ? seconds_between(started, b.finished_at) : json(0);
    left_out += !append_within(builds, std::move(j), used);
  }
  json result{{"builds", std::move(builds)}};
  if (left_out) result["builds_left_out"] = left_out;
  return ok_response(std::move(result));
}

}  // namespace fad
