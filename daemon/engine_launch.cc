// Compiles run by `fad launch` and builds opened by `fad run`. fadd admits the
// compile (same estimator and scheduler as its own units), the launcher runs
// it and reports its process group and its end; fadd measures, suspends or
// stops it like any unit. A launcher that vanishes never wedges the queue:
// unpolled or orphaned units are dropped after a timeout.
#include <cmath>
#include <filesystem>

#include <spdlog/spdlog.h>

#include "common/duration.h"
#include "common/exit_status.h"
#include "common/size.h"
#include "common/text.h"
#include "daemon/build_files.h"
#include "daemon/credentials.h"
#include "daemon/engine.h"
#include "daemon/launch_key.h"
#include "daemon/responses.h"
#include "daemon/planner.h"

namespace fad {

namespace fs = std::filesystem;

namespace {
// A fad run command kept as the build's label and log line, at most.
constexpr std::size_t kMaxCommandBytes = 4096;
// Compiles of one user's launchers waiting for admission at once, at most.
constexpr int kMaxWaitingLaunchesPerUser = 512;
// A launcher polls every 200 ms: one quiet this long is looked at (alive or not).
constexpr double kQuietPollS = 2;
// A launcher fadd cannot see (another pid namespace) quiet this long is gone.
constexpr double kPollTimeoutS = 30;
// A tick this much later than the one before means fadd was not running.
constexpr double kStalledS = 5;
// An admitted launcher reports its compiler's pid at once; this long without,
// it is stopped, gone where fadd cannot see, or only pretends: its admission
// goes back, so a client that polls and never starts holds a core from
// everyone's compiles this long at a time (then it waits its turn again, and
// a user whose launchers do so again is held: lapsed_admissions.h).
constexpr double kStartTimeoutS = LapsedAdmissions::kStartTimeoutS;
// A compiler's group may vanish just before its launcher reports the exit.
constexpr double kGoneGraceS = 10;
// ... or well before, when fadd is busy: a launcher still alive gets longer
// than it keeps asking a busy fadd (30 s) plus one request's timeout (60 s).
constexpr double kLiveLauncherReportS = 150;
// A launched compile's arguments as recorded (its row and its log), at most.
constexpr std::size_t kMaxRecordedArgvBytes = 16 * 1024;
// Launches outside `fad run` are grouped per session into one build, closed after this quiet spell.
constexpr double kSessionIdleS = 30;
// A fad run whose process fadd cannot see (another pid namespace: SO_PEERCRED
// gave no pid) cannot be watched: its build closes after this long with no
// compile, or it would stay open, counted against its user, for ever.
constexpr double kUnseenOpenerIdleS = 3600;
// A unit fadd stopped whose process group is gone: this long without its
// launcher reporting the end means the launcher is gone too.
constexpr double kStoppedGoneGraceS = 2;
// A launcher gone while its compiler runs (killed with SIGKILL, which it
// cannot forward): after this long without its report, nobody waits for the
// compile, and it is ended, as Slurm ends a step whose srun is gone.
constexpr double kOrphanedCompileS = 2;

// The launcher runs the arguments it has; fadd keeps them only for whoever
// reads the log or the row, and a real nvcc line is a few KiB. Past the
// bound, what is left out is counted, so that a user's launches of 128 KiB
// each do not cost the state disk 128 KiB each.
std::vector<std::string> recorded_argv(const std::vector<std::string>& argv) {
  std::vector<std::string> out;
  std::size_t used = 0, i = 0;
  for (; i < argv.size() && used + argv[i].size() + 1 <= kMaxRecordedArgvBytes; ++i) {
    used += argv[i].size() + 1;
    out.push_back(argv[i]);
  }
  if (i == argv.size()) return out;
  if (out.empty()) out.push_back(utf8_prefix(argv[i++], kMaxRecordedArgvBytes / 2) + "...");
  std::uint64_t left = 0;
  for (std::size_t j = i; j < argv.size(); ++j) left += argv[j].size() + 1;
  out.push_back("...(" + std::to_string(argv.size() - i) + " more argument(s), " + format_size(left) +
                ", not recorded)");
  return out;
}

}  // namespace

Response Engine::open_build(const Caller& caller, const OpenBuildRequest& req) {
  if (shutting_down_) return error_response(ErrorCode::failed, "fadd is shutting down");
  if (auto refused = refuse_compiles_for(caller)) return *refused;
  if (auto refused = refuse_over_build_limit(caller.uid)) return *refused;
  BuildRecord b = build_owned_by(caller);
  // The command is a label and a log line that other users (root) read:
  // bounded, and without the control characters a name may not hold.
  const std::string command = printable(utf8_prefix(req.command, kMaxCommandBytes));
  b.name = req.name.empty() ? utf8_prefix(command, 80) : req.name;
  b.kind = "external";
  b.command = command;
  b.budget_bytes = req.budget_bytes;
  b.created_at = clock_.wall();
  b.kernels_glob = "";
  // Whoever opens it closes it; if that process dies first (kill -9), the
  // build must not stay open forever (check_external).
  // One already gone when asked is recorded as gone (start time 0).
  if (caller.pid > 0) {
    const auto opener = launcher_.process_info(caller.pid);
    b.opener = ProcessStamp{caller.pid, opener ? opener->start_ticks : 0};
  }
  const auto id = store_.create_build(std::move(b), {});
  build_allowance_.take(caller.uid, clock_.now());
  // Its command runs from now on: running, not queued, whether or not it
  // compiles yet; and started now, or `fad history` shows a command that
  // compiled nothing (make with nothing to do) as queued its whole time.
  store_.set_build_state(id, BuildState::running, std::nullopt);
  store_.mark_build_started(id, clock_.wall());
  last_activity_[id] = clock_.now();
  append_build_log(id, "fad run: " + command + "\n");
  return ok_response({{"id", id}});
}

void Engine::finalize_external(const BuildRecord& b, const std::string& why, bool cancelled) {
  const double now = clock_.now();
  for (auto& [uid, r] : running_) {
    if (r.unit.build_id != b.id) continue;
    // Still compiling when its build closes (its command exited, or was
    // killed with its launchers): ended, and the log says so beside the
    // build's own line.
    if (r.stop == StopReason::none)
      append_build_log(b.id, "ended " + r.unit.name +
                                 (r.pgid == 0 ? ": its build closed before its compiler started (cancelled)\n"
                                              : ": its build closed while it compiled (cancelled)\n"));
    stop_unit(r, StopReason::cancel, now);
  }
  store_.set_pending_units(b.id, UnitState::cancelled, false);
  const auto summary = store_.unit_summary(b.id);
  const int failed = summary.by_state[static_cast<int>(UnitState::failed)];
  const int dropped = summary.by_state[static_cast<int>(UnitState::cancelled)];
  // A session has no command whose exit says how it went: one whose every
  // compile was dropped (its launchers gone before any finished) did not
  // succeed, whatever else, and said "succeeded, 0 of 1 done".
  const bool none_done =
      b.session && failed == 0 && dropped > 0 && summary.by_state[static_cast<int>(UnitState::succeeded)] == 0;
  if (none_done) cancelled = true;
  const bool success = why.empty() && failed == 0 && !none_done;
  std::string error = why;
  if (error.empty() && failed) error = std::to_string(failed) + " compile(s) failed";
  if (error.empty() && none_done)
    error = "none of its " + std::to_string(dropped) + " compile(s) finished: their launchers left first";
  const BuildState state = success ? BuildState::succeeded : cancelled ? BuildState::cancelled : BuildState::failed;
  store_.set_build_state(b.id, state, clock_.wall(), error);
  append_build_log(b.id, "build " + std::string(to_string(state)) + (success ? "" : ": " + error) + "\n");
  last_activity_.erase(b.id);
}

Response Engine::close_build(const Caller& caller, const CloseBuildRequest& req) {
  auto b = store_.build(req.id);
  if (!b) return no_build(req.id);
  if (auto refused = refuse_unless_owner(caller, *b, "close")) return *refused;
  if (b->kind != "external")
    return error_response(ErrorCode::usage, "build " + std::to_string(req.id) + " was not opened by fad run");
  // Interrupted as Slurm's srun is by Ctrl-C: the user stopped it, so it was
  // cancelled, not failed (a command that finished all the same succeeded).
  const bool interrupted = req.interrupt_signal != 0 && req.exit_code != 0;
  std::string why;
  if (interrupted)
    why = "fad run got " + signal_name(req.interrupt_signal) + " (exit code " + std::to_string(req.exit_code) + ")";
  else if (req.exit_code != 0)
    why = "command exited with code " + std::to_string(req.exit_code);
  if (!is_final(b->state)) finalize_external(*b, why, interrupted);
  return ok_response({{"id", req.id}, {"state", to_string(store_.build(req.id)->state)}});
}

Response Engine::launch(const Caller& caller, const LaunchRequest& req) {
  if (shutting_down_) return error_response(ErrorCode::failed, "fadd is shutting down");
  if (!storage_problem_.empty()) return error_response(ErrorCode::failed, storage_problem_);
  if (auto refused = refuse_compiles_for(caller)) return *refused;
  // Each waiting compile costs every tick until its launcher stops polling;
  // a client sending launches without end must not slow fadd for everyone.
  // A launcher refused here compiles with the machine-wide fallback.
  if (!req.cached) {
    const int waiting = store_.waiting_launches_of(caller.uid);
    if (waiting >= kMaxWaitingLaunchesPerUser)
      return error_response(ErrorCode::failed, user_name(caller.uid) + " has " + std::to_string(waiting) +
                                                   " compiles waiting for admission, the most one user may have");
  }
  // Checked before a session build is opened for it: a refused launch leaves nothing behind.
  if (auto refused = refuse_past_allowance(
          launch_allowance_, caller.uid, "'s launchers have recorded the most compiles",
          "max_launches_per_user_per_hour", "this one runs without fadd, the next may be recorded in"))
    return *refused;
  std::optional<BuildRecord> build;
  if (req.build_id) {
    build = store_.build(*req.build_id);
    if (!build || build->kind != "external" || is_final(build->state))
      return error_response(ErrorCode::not_found,
                            "build " + std::to_string(*req.build_id) + " is not an open fad run build");
    if (auto refused = refuse_unless_owner(caller, *build, "add compiles to")) return *refused;
  } else {
    build = store_.session_build(req.session, caller.uid);
    if (!build) {
      if (auto refused = refuse_over_build_limit(caller.uid)) return *refused;
      BuildRecord b = build_owned_by(caller);
      b.name = "launches of session " + std::to_string(req.session);
      b.kind = "external";
      b.session = req.session;
      b.created_at = clock_.wall();
      b.kernels_glob = "";
      const auto id = store_.create_build(std::move(b), {});
      build_allowance_.take(caller.uid, clock_.now());
      build = store_.build(id);
    }
  }
  if (const int cap = options_.max_units_per_launch_build; cap > 0 && store_.unit_count(build->id, cap) >= cap)
    return error_response(ErrorCode::failed, "build " + std::to_string(build->id) + " has recorded " +
                                                 std::to_string(cap) +
                                                 " compiles, the most one build may; this one runs without fadd");
  UnitRecord u;
  u.kind = UnitKind::external;
  // The caller's file name, in fadd's log and every user's listing: no
  // escape of it may reach a terminal that shows them.
  u.name = printable(fs::path(req.output.empty() ? req.source : req.output).filename().string());
  // Learnt where its project sits left out: the same kernel from another
  // checkout or pip directory is the same unit (the recorded argv keeps the
  // real paths).
  LaunchKey key = launch_key(req.argv, req.cwd, req.source, !req.content_hash.value_or("").empty());
  u.source = std::move(key.source);
  u.family = std::move(key.family);
  u.archs = req.archs;
  u.argv = recorded_argv(req.argv);
  u.output_path = req.output;
  // fadd never opens the client's source nor runs its compiler: the launcher,
  // with the user's own rights, sends the content hash and the version line.
  // An older launcher sends neither: the unit is then known by its arguments.
  u.content_hash = req.content_hash.value_or("");
  u.source_bytes = req.source_bytes.value_or(0);
  u.flags = std::move(key.flags);
  u.compiler = req.compiler_version.value_or(req.argv.front());
  // Every field above is the caller's word (any source, hash or version it
  // likes, run by any program): what fadd measures of it teaches only the
  // caller's own units, or everyone's when root or fadd's own user sent it.
  u.scope = learning_scope(caller);
  u.key = unit_key(u).exact();
  if (!caller.is_root()) launch_allowance_.take(caller.uid, clock_.now());
  const auto unit_id = store_.add_unit(build->id, u, build_dir(build->id) + "/logs");
  if (req.cached) return record_cached_launch(*build, u, unit_id, req);
  log_launch_call(*build, u, req, "(output goes to the launcher's terminal)");
  const double now = clock_.now();
  record_event(unit_id, "queued");
  waiting_launches_[unit_id] = WaitingLaunch{now, stamp_of(caller.pid)};
  last_activity_[build->id] = now;
  update_build(build->id);
  if (wake_) wake_();
  return ok_response({{"unit_id", unit_id}, {"build_id", build->id}});
}

Response Engine::record_cached_launch(const BuildRecord& build, const UnitRecord& u, std::int64_t unit_id,
                                      const LaunchRequest& req) {
  // A hit: the launcher restored the outputs; nothing to admit or measure.
  store_.mark_unit_cached(unit_id, clock_.wall());
  log_launch_call(build, u, req, "(restored from the compile cache by the launcher)");
  last_activity_[build.id] = clock_.now();
  append_build_log(build.id, "cached " + u.name + " (restored from the compile cache)\n");
  update_build(build.id);
  return ok_response({{"unit_id", unit_id}, {"build_id", build.id}, {"state", "succeeded"}});
}

void Engine::log_launch_call(const BuildRecord& build, const UnitRecord& u, const LaunchRequest& req,
                             const std::string& note) {
  // The unit's log is its owner's to read, as for bundled units.
  const auto owner = run_as(build);
  const std::optional<FileOwner> files =
      owner ? std::optional<FileOwner>(FileOwner{owner->uid, owner->gid}) : std::nullopt;
  make_daemon_dir(fs::path(u.log_path).parent_path().string(), files);
  std::string text = "$ (cd " + printable(req.cwd) + " &&";
  for (const auto& a : u.argv) text += " " + printable(a);
  text += ")\n" + note + "\n";
  write_owned_file(u.log_path, text, files, true);
}

void Engine::admit_external(const UnitRecord& unit, const Decision& d, double now, const std::string& node) {
  const std::string source = estimate_source_id(d.source, d.imported);
  store_.start_unit(unit.id, d.threads, d.estimate_bytes, clock_.wall(), source);
  store_.mark_build_started(unit.build_id, clock_.wall());
  Running r;
  if (!node.empty()) {
    // On a cluster the launcher runs its compiler as a step on this node.
    store_.set_unit_node(unit.id, node);
    r.node = node;
    r.step =
        launcher_.step_command(LaunchSpec{unit.id, {}, unit.log_path, std::nullopt, node, d.threads, d.estimate_bytes});
  }
  r.unit = unit;
  r.unit.estimate_source = source;
  for (const auto& b : queue_mirror_.builds())  // the one it was admitted from
    if (b.id == unit.build_id) r.owner = owner_of(b);
  r.started_at = now;
  r.threads = d.threads;
  r.predicted = d.predicted;
  r.guess = d.guess;
  r.duration_guessed = d.duration_guessed;
  r.external = true;
  r.started_epoch = epoch_now();
  r.attempt = unit.attempts + 1;
  r.estimate_bytes = d.estimate_bytes;
  // The launcher that asked: one that exits before it is told (Ctrl-C in the
  // build while its compiles wait) frees the admission within seconds.
  if (const auto w = waiting_launches_.find(unit.id); w != waiting_launches_.end()) r.launcher = w->second.launcher;
  last_started_[unit.build_id] = now;
  running_.emplace(unit.id, std::move(r));
  spdlog::info("admitted {} of build {} with {} thread(s), estimate {} ({})", unit.name, unit.build_id, d.threads,
               format_size(d.estimate_bytes), d.reason);
  update_build(unit.build_id);
}

std::optional<Response> Engine::refuse_unless_unit_owner(const Caller& caller, std::int64_t unit_id, const char* verb) {
  if (caller.is_root()) return std::nullopt;
  auto unit = store_.unit(unit_id);
  if (!unit) return std::nullopt;  // the method's own "no such unit" answer follows
  auto build = store_.build(unit->build_id);
  if (!build) return std::nullopt;
  return refuse_unless_owner(caller, *build, verb);
}

Response Engine::launch_poll(const Caller& caller, const UnitRequest& req) {
  if (auto refused = refuse_unless_unit_owner(caller, req.unit_id, "poll a compile of")) return *refused;
  const double now = clock_.now();
  if (auto it = running_.find(req.unit_id); it != running_.end() && it->second.external) {
    if (it->second.stop != StopReason::none)
      return ok_response({{"state", "queued"}, {"wait_reason", "being requeued"}});
    if (it->second.pgid == 0 && !it->second.launcher) it->second.launcher = stamp_of(caller.pid);
    json admitted{
        {"state", "admitted"}, {"threads", it->second.threads}, {"estimate_bytes", it->second.predicted.peak()}};
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
    WaitingLaunch& w = waiting_launches_[req.unit_id];
    w.last_poll = now;
    // Waiting again after a run fadd stopped (pressure, OOM): the same
    // launcher, known again from this poll.
    if (!w.launcher) w.launcher = stamp_of(caller.pid);
    return ok_response({{"state", "queued"}, {"wait_reason", wait_reason_now(*unit)}});
  }
  if (auto dropped = dropped_unasked_.find(req.unit_id);
      unit->state == UnitState::cancelled && dropped != dropped_unasked_.end()) {
    return ok_response({{"state", "cancelled"}, {"relaunch", true}, {"why", dropped->second}});
  }
  return ok_response({{"state", to_string(unit->state)}});
}

Response Engine::launch_started(const Caller& caller, const LaunchStartedRequest& req) {
  if (auto refused = refuse_unless_unit_owner(caller, req.unit_id, "start a compile of")) return *refused;
  auto it = running_.find(req.unit_id);
  if (it == running_.end() || !it->second.external || it->second.pgid != 0 || it->second.stop != StopReason::none)
    return error_response(ErrorCode::failed,
                          "unit " + std::to_string(req.unit_id) + " is not admitted now; poll again");
  // fadd will suspend, stop and kill this process group: only a group the
  // caller itself just started qualifies, never someone else's process.
  const auto proc = launcher_.process_info(req.pid);
  const std::string pid = std::to_string(req.pid);
  if (!proc) return error_response(ErrorCode::failed, "launch_started: there is no process " + pid);
  if (proc->uid != caller.uid)
    return error_response(ErrorCode::failed, "launch_started: process " + pid + " belongs to " + user_name(proc->uid) +
                                                 ", not to " + user_name(caller.uid));
  if (caller.pid <= 0 || proc->ppid != caller.pid)
    return error_response(ErrorCode::failed,
                          "launch_started: process " + pid + " is not a child of the calling process");
  if (proc->pgid != req.pid)
    return error_response(ErrorCode::failed, "launch_started: process " + pid + " does not lead its process group");
  // Recorded first: a database that cannot take it leaves the unit admitted
  // and waiting for its compiler, which its launcher then starts again.
  store_.set_unit_pgid(req.unit_id, req.pid, proc->start_ticks);
  it->second.pgid = req.pid;
  it->second.leader_start = proc->start_ticks;
  it->second.gone_since = 0;  // from now on: when its compiler's group was first seen gone
  // Its profile starts now, not at admission: the launcher's poll and the
  // compiler's start lag behind, and staggered spikes must stay staggered.
  it->second.started_at = clock_.now();
  it->second.started_epoch = epoch_now();
  launcher_.adopt_unit(req.pid, req.unit_id);
  waiting_launches_.erase(req.unit_id);
  return ok_response(json::object());
}

Response Engine::launch_finished(const Caller& caller, const LaunchFinishedRequest& req) {
  if (auto refused = refuse_unless_unit_owner(caller, req.unit_id, "finish a compile of")) return *refused;
  auto it = running_.find(req.unit_id);
  if (it == running_.end() || !it->second.external) {
    auto unit = store_.unit(req.unit_id);
    if (unit && unit->state == UnitState::queued) return ok_response({{"requeue", true}});
    return error_response(ErrorCode::not_found, "unit " + std::to_string(req.unit_id) + " is not running");
  }
  // Admitted and ended without a compiler: a lapse, as if it had let the
  // admission run out (or it could take one 15 s at a time uncounted).
  if (it->second.pgid == 0 && it->second.stop == StopReason::none) note_lapse(it->second.owner, clock_.now());
  const auto account = launcher_.release(it->second.pgid, ProcessLauncher::Leftovers::kill);
  // A compiler the OOM killer ended may show as a plain exit code through a
  // step wrapper; its cgroup knows better.
  ExitInfo info;
  info.exit_code = req.exit_code;
  info.signaled = req.signaled || account.oom_killed;
  info.peak_bytes = account.peak_bytes;
  info.oom_killed = account.oom_killed;
  info.lost = account.lost;
  info.peak_source = account.peak_source;
  info.interrupt_signal = req.interrupt_signal;
  on_exit(req.unit_id, info);
  // Stopped by fad, or killed by the OOM killer and requeued: the launcher
  // waits for admission again and reruns the compile.
  auto unit = store_.unit(req.unit_id);
  return ok_response({{"requeue", unit && unit->state == UnitState::queued}});
}

bool Engine::launcher_quiet(std::int64_t unit_id, double now) const {
  const auto w = waiting_launches_.find(unit_id);
  return w != waiting_launches_.end() && now - w->second.last_poll > kQuietPollS;
}

void Engine::note_lapse(uid_t user, double now) {
  const auto hold = lapses_.note(user, now);
  if (!hold) return;
  spdlog::warn("launchers of {} let {} admissions lapse within the hour; holding their compiles {}", user_name(user),
               hold->count, format_age(static_cast<std::int64_t>(hold->seconds)));
}

std::string Engine::lapse_hold(uid_t user, double now, bool pending) const {
  // Words that stay the same for the whole hold: a reason that changed every
  // tick would be written to the database every tick.
  if (const auto hold = lapses_.hold(user, now))
    return "launchers of " + user_name(user) + " did not start their compiler when admitted (" +
           std::to_string(hold->count) + " times within the hour); the next is admitted after " +
           format_age(static_cast<std::int64_t>(hold->seconds));
  if (!pending) return "";
  return "launchers of " + user_name(user) +
         " let admissions lapse this hour: one compile of theirs is admitted at a time, once the last one started";
}

void Engine::check_external(double now) {
  // fadd was stopped or starved for `gap`: nobody could ask it meanwhile, so
  // that time counts against no launcher's silence.
  if (const double gap = now - last_external_check_; last_external_check_ > 0 && gap > kStalledS) {
    spdlog::warn("fadd did not run for {:.0f} s (stopped, or starved of CPU); launchers get that time back", gap);
    for (auto& [id, w] : waiting_launches_) w.last_poll += gap;
    for (auto& [id, r] : running_)
      if (r.external && r.pgid == 0) r.started_at += gap;
  }
  last_external_check_ = now;
  std::vector<std::int64_t> lost, orphaned;
  for (auto& [id, r] : running_) {
    if (!r.external) continue;
    if (r.stop != StopReason::none) {
      // Stopped by fadd (cancel, requeue, shutdown): once its group is gone it
      // ends, reported by its launcher or not. Kept, it would be signalled
      // forever and hold up a shutdown.
      if (r.pgid > 0 && !(launcher_.group_alive(r.pgid) && group_is_ours(r))) {
        if (r.gone_since == 0) r.gone_since = now;
        // A launcher known gone will not report: no grace to wait out.
        if (r.launcher_gone_since > 0 || now - r.gone_since > kStoppedGoneGraceS) lost.push_back(id);
      }
      continue;
    }
    if (r.pgid == 0) {
      // Admitted, and the launcher told so has exited (or its pid is another
      // process now): it will never start the compiler.
      const bool launcher_gone = r.launcher && !process_alive(*r.launcher);
      if (launcher_gone && r.gone_since == 0) r.gone_since = now;
      if (now - r.started_at > kStartTimeoutS || (launcher_gone && now - r.gone_since > kStoppedGoneGraceS))
        lost.push_back(id);
    } else if (!(launcher_.group_alive(r.pgid) && group_is_ours(r))) {
      if (r.gone_since == 0) r.gone_since = now;
      const bool launcher_alive = r.launcher && process_alive(*r.launcher);
      if (now - r.gone_since > (launcher_alive ? kLiveLauncherReportS : kGoneGraceS)) lost.push_back(id);
    } else if (r.launcher && !process_alive(*r.launcher)) {
      if (r.launcher_gone_since == 0) r.launcher_gone_since = now;
      if (now - r.launcher_gone_since >= kOrphanedCompileS) orphaned.push_back(id);
    }
  }
  for (auto id : orphaned) {
    Running& r = running_.at(id);
    spdlog::warn(
        "launcher of unit {} of build {} exited while its compiler ran (killed?); ending the compiler: "
        "nothing waits for it",
        r.unit.name, r.unit.build_id);
    append_build_log(r.unit.build_id, "ended " + r.unit.name +
                                          ": its launcher exited while it compiled (killed?), so nothing waited for "
                                          "it (cancelled)\n");
    stop_unit(r, StopReason::cancel, now);
  }
  for (auto id : lost) {
    Running& r = running_.at(id);
    if (r.stop == StopReason::none && r.pgid == 0 && r.gone_since > 0) {
      // Its compiler never ran: nothing failed, the compile is not wanted.
      spdlog::warn("launcher of unit {} exited before starting its compiler; cancelling it", r.unit.name);
      r.stop = StopReason::cancel;
    } else if (r.stop == StopReason::none && r.pgid == 0) {
      // Told, and silent since: stopped (Ctrl-Z) right after it asked, or
      // gone where fadd cannot see. Its compile waits again, admitted only
      // once its launcher asks again.
      spdlog::warn("launcher of unit {} did not start its compiler within {:.0f} s; it waits again", r.unit.name,
                   kStartTimeoutS);
      r.stop = StopReason::requeue;
      note_lapse(r.owner, now);
    } else if (r.stop == StopReason::none && r.taken_back && r.gone_since - r.taken_back_at <= kGoneGraceS) {
      // Gone by the first looks after the start: its launcher may have
      // reported the end while this fadd was starting and not yet listening.
      // What became of it is its build tool's to say, as for the compiles a
      // restart did not take back. (Later, a vanished launcher is one.)
      spdlog::warn("launched compile {} ended without a report to this fadd; recording it cancelled", r.unit.name);
      append_build_log(r.unit.build_id, "fadd restarted: " + r.unit.name +
                                            " ended without a report to this fadd (its launcher may have reported "
                                            "it while fadd was starting); recorded as cancelled\n");
      r.stop = StopReason::cancel;
    } else if (r.stop == StopReason::none) {
      spdlog::warn("launcher of unit {} vanished; marking it failed", r.unit.name);
    }
    ExitInfo info{-1, true, launcher_.release(r.pgid, ProcessLauncher::Leftovers::kill).peak_bytes};
    info.unreported = true;
    on_exit(id, info);
  }
  for (auto it = waiting_launches_.begin(); it != waiting_launches_.end();) {
    const WaitingLaunch& w = it->second;
    if (running_.count(it->first)) {  // admitted: the checks above are its own
      ++it;
      continue;
    }
    // A launcher polls every 200 ms. One quiet for longer is asked after
    // directly where fadd can see it: alive, it is only stopped (Ctrl-Z in
    // its build, or fadd itself was) and its compile waits, holding nothing;
    // gone, its compile is dropped at once. One fadd cannot see gets
    // kPollTimeoutS.
    const bool gone =
        w.launcher ? now - w.last_poll > kQuietPollS && !process_alive(*w.launcher) : now - w.last_poll > kPollTimeoutS;
    if (!gone) {
      ++it;
      continue;
    }
    if (auto unit = store_.unit(it->first); unit && unit->state == UnitState::queued) {
      spdlog::warn("launcher of queued unit {} {}; dropping it", unit->name, w.launcher ? "exited" : "stopped asking");
      store_.finish_unit(unit->id, UnitState::cancelled, std::nullopt, 0, 0, clock_.wall(), std::nullopt);
      // One fadd cannot see may only be slow to get through (fadd busy).
      if (!w.launcher)
        note_dropped_unasked(unit->id, "its launcher did not ask for " + std::to_string(int(kPollTimeoutS)) + " s");
      // Its build's quiet spell starts now: the compile was the build's
      // until its launcher left, not since it was queued.
      update_build(unit->build_id);
    }
    it = waiting_launches_.erase(it);
  }
  // The mirror, not a fresh read: this runs every tick, and hundreds of
  // queued builds made that read a steady cost. A copy, since closing a
  // build below may lead to the mirror being refreshed.
  queue_mirror_.refresh(store_, now);
  std::vector<BuildRecord> external;
  for (const auto& b : queue_mirror_.builds())
    if (b.kind == "external") external.push_back(b);
  for (const auto& b : external) {
    // Launches outside fad run end with a quiet spell; a fad run build with
    // its opener, or with a quiet spell once the opener is gone (its command
    // may live on and still compile). The quiet spell is checked first: it
    // costs nothing, the opener is read from /proc.
    auto [activity, inserted] = last_activity_.emplace(b.id, now);
    if (inserted || now - activity->second < kSessionIdleS) continue;
    std::string why;
    if (!b.session && !b.opener) {
      if (now - activity->second < kUnseenOpenerIdleS) continue;
      why = "nothing compiled for " + format_age(static_cast<std::int64_t>(kUnseenOpenerIdleS)) +
            " and fadd cannot see whether its fad run still lives (another pid namespace)";
    } else if (!b.session) {
      if (process_alive(*b.opener)) continue;
      why = "fad run (pid " + std::to_string(b.opener->pid) + ") ended without reporting its command's exit";
    }
    // A count, not the unit rows: a session build may hold thousands of them.
    if (store_.has_unfinished_units(b.id)) continue;
    if (!why.empty()) spdlog::warn("build {}: {}; closing it", b.id, why);
    finalize_external(b, why);
  }
}

void Engine::note_dropped_unasked(std::int64_t unit_id, std::string why) {
  constexpr std::size_t kMaxDroppedUnasked = 4096;
  dropped_unasked_[unit_id] = std::move(why);
  while (dropped_unasked_.size() > kMaxDroppedUnasked) dropped_unasked_.erase(dropped_unasked_.begin());
}

bool Engine::process_alive(const ProcessStamp& process) {
  auto p = launcher_.process_info(process.pid);
  return p && !p->zombie && p->start_ticks == process.start_ticks;
}

std::optional<ProcessStamp> Engine::stamp_of(int pid) {
  if (pid <= 0) return std::nullopt;
  const auto p = launcher_.process_info(pid);
  if (!p) return std::nullopt;
  return ProcessStamp{pid, p->start_ticks};
}

}  // namespace fad
