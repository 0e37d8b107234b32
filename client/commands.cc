// The read-mostly subcommands (status, logs, history) and build control,
// plus the dispatcher. submit lives in submit_command.cc, daemon start/stop
// in daemon_control.cc.
#include "client/commands.h"

#include <ostream>

#include "client/cache_command.h"
#include "client/completions.h"
#include "client/daemon_control.h"
#include "client/doctor.h"
#include "client/exit_codes.h"
#include "client/render.h"
#include "common/text.h"

namespace fad::client {

namespace {
constexpr auto kFollowInterval = std::chrono::milliseconds(500);
constexpr auto kWatchInterval = std::chrono::seconds(1);
constexpr auto kFirstRetry = std::chrono::milliseconds(250);
constexpr auto kLongestRetry = std::chrono::seconds(5);
constexpr std::chrono::milliseconds kRetrySlice{250};

constexpr double kPipedWatchIntervalS = 5;
}  // namespace

CallResult send_following(Context& ctx, const Request& request, const std::function<void()>& before_saying) {
  CallResult reply = ctx.send(request);
  const auto* failure = std::get_if<CallFailure>(&reply);
  if (!failure || !failure->retryable) return reply;
  if (before_saying) before_saying();
  ctx.err << "fad: lost contact with fadd: " << (failure->cause.empty() ? failure->message : failure->cause)
          << "; retrying for up to " << kReconnectWindow.count() << " s\n";
  ctx.err.flush();
  const auto deadline = ctx.now() + kReconnectWindow;
  auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(kFirstRetry);
  while (ctx.now() < deadline) {
    // In slices: a kill or Ctrl-C ends the wait within one, not a backoff's 5 s.
    for (auto left = wait; left.count() > 0 && !ctx.interrupted(); left -= kRetrySlice)
      ctx.sleep(std::min(left, kRetrySlice));
    if (ctx.interrupted()) return reply;  // asked to stop: its caller says so
    wait = std::min(wait * 2, std::chrono::duration_cast<std::chrono::milliseconds>(kLongestRetry));
    reply = ctx.send(request);
    failure = std::get_if<CallFailure>(&reply);
    if (!failure) {
      ctx.err << "fad: fadd answers again\n";
      return reply;
    }
    if (!failure->retryable) return reply;
  }
  auto& last = std::get<CallFailure>(reply);
  last.message =
      "fadd did not come back within " + std::to_string(kReconnectWindow.count()) + " s (" + last.message + ")";
  return reply;
}

json with_schema(json doc) {
  if (doc.is_object()) doc["schema_version"] = kJsonSchemaVersion;
  return doc;
}

int report(Context& ctx, const CallResult& reply) {
  if (const auto* failure = std::get_if<CallFailure>(&reply)) {
    ctx.err << "fad: " << failure->message << "\n";
    return failure->exit_code;
  }
  const auto& response = std::get<Response>(reply);
  ctx.err << "fad: " << response.message << "\n";
  return exit_code_for_error(response);
}

std::optional<json> request(Context& ctx, const std::string& type, const json& body, int& exit_code) {
  CallResult reply = ctx.send(Request{type, body});
  auto* response = std::get_if<Response>(&reply);
  if (!response || !response->ok) {
    exit_code = report(ctx, reply);
    return std::nullopt;
  }
  return std::move(response->result);
}

int run_status(const Command& cmd, Context& ctx) {
  StatusRequest req;
  req.id = cmd.id;
  std::string last;
  double last_at = 0;
  for (bool first = true;; first = false) {
    // The first request fails fast; a watch already running rides out a restart.
    CallResult reply =
        first ? ctx.send(Request{"status", req.to_json()}) : send_following(ctx, {"status", req.to_json()});
    const auto* response = std::get_if<Response>(&reply);
    if (!response || !response->ok) {
      if (const int sig = ctx.interrupted()) {
        if (first) report(ctx, reply);
        return exit_code_for_signal(sig);
      }
      return report(ctx, reply);
    }
    const json* result = &response->result;
    // Watched in a pipe, each JSON document is one line (JSON Lines), so a
    // reader takes one per line instead of parsing a stream of objects.
    const bool json_lines = cmd.json && cmd.watch && !ctx.out_is_tty;
    const std::string view = json_lines ? with_schema(*result).dump() + "\n"
                             : cmd.json ? with_schema(*result).dump(2) + "\n"
                             : cmd.id   ? render_build_status(*result, ctx.color)
                                        : render_status(*result, ctx.color);
    if (!cmd.watch) {
      ctx.out << view;
      return kExitOk;
    }
    if (ctx.out_is_tty) {
      ctx.out << "\033[H\033[2J" << view;  // redraw in place, on a terminal only
    } else if (view != last && (last.empty() || ctx.wall() - last_at >= kPipedWatchIntervalS)) {
      // A pipe gets each changed view, blank-line separated, at most every few seconds.
      ctx.out << (last.empty() || json_lines ? "" : "\n") << view;
      last = view;
      last_at = ctx.wall();
    }
    ctx.out.flush();
    if (const int sig = ctx.interrupted()) return exit_code_for_signal(sig);
    ctx.sleep(kWatchInterval);
  }
}

int run_logs(const Command& cmd, Context& ctx) {
  LogsRequest req;
  req.id = cmd.id.value_or(0);
  req.unit = cmd.unit;
  for (bool first = true;; first = false) {
    CallResult reply =
        first || !cmd.follow ? ctx.send(Request{"logs", req.to_json()}) : send_following(ctx, {"logs", req.to_json()});
    const auto* response = std::get_if<Response>(&reply);
    if (!response || !response->ok) {
      // Ctrl-C cut a follower's request short: it stops as `tail -f` does.
      if (const int sig = cmd.follow && !first ? ctx.interrupted() : 0) return exit_code_for_signal(sig);
      return report(ctx, reply);
    }
    const json* result = &response->result;
    std::string data = result->value("data", "");
    // On a terminal, escape sequences in a log would act; piped, it goes as written.
    ctx.out << (ctx.out_is_tty ? printable_log(data) : data);
    ctx.out.flush();
    req.offset = result->value("offset", req.offset + data.size());
    if (result->value("done", true)) return kExitOk;
    // Without --follow, drain what is there now (it may exceed one slice), then stop.
    if (data.empty()) {
      if (!cmd.follow) return kExitOk;
      ctx.sleep(kFollowInterval);
    }
    if (const int sig = cmd.follow ? ctx.interrupted() : 0) return exit_code_for_signal(sig);
  }
}

int run_control(const Command& cmd, Context& ctx) {
  BuildRequest req;
  req.id = cmd.id.value_or(0);
  int rc = kExitOk;
  const char* type = cmd.kind == CommandKind::cancel   ? "cancel"
                     : cmd.kind == CommandKind::pause  ? "pause"
                     : cmd.kind == CommandKind::resume ? "resume"
                                                       : "retry";
  auto result = request(ctx, type, req.to_json(), rc);
  if (!result) return rc;
  if (cmd.json) {
    // "recorded" is always there for a script to read, not only when false.
    json doc = *result;
    doc["recorded"] = result->value("recorded", true);
    ctx.out << with_schema(std::move(doc)).dump(2) << "\n";
    return kExitOk;
  }
  std::string line = "build " + std::to_string(req.id) + ": " + result->value("state", std::string("ok"));
  if (cmd.kind == CommandKind::retry) {
    const int failed = result->value("requeued_failed", -1), cancelled = result->value("requeued_cancelled", -1);
    if (failed >= 0 && cancelled >= 0)
      line +=
          ", requeued " + std::to_string(failed) + " failed and " + std::to_string(cancelled) + " cancelled unit(s)";
    else
      line += ", " + std::to_string(result->value("requeued", 0)) + " unit(s) requeued";
  }
  if (result->value("recorded", true) == false)
    line += std::string(" (its compilers ") +
            (cmd.kind == CommandKind::pause    ? "are frozen"
             : cmd.kind == CommandKind::resume ? "go on"
                                               : "are stopped") +
            "; fadd records it once it can write its database again)";
  ctx.out << line << "\n";
  return kExitOk;
}

int run_history(const Command& cmd, Context& ctx) {
  HistoryRequest req;
  req.limit = cmd.limit;
  int rc = kExitOk;
  auto result = request(ctx, "history", req.to_json(), rc);
  if (!result) return rc;
  ctx.out << (cmd.json ? with_schema(*result).dump(2) + "\n" : render_history(*result, ctx.color));
  return kExitOk;
}

int run_prune(const Command& cmd, Context& ctx) {
  PruneRequest req;
  req.older_than_s = cmd.older_than_s;
  req.dry_run = cmd.dry_run;
  int rc = kExitOk;
  auto result = request(ctx, "prune", req.to_json(), rc);
  if (!result) return rc;
  ctx.out << (cmd.json ? with_schema(*result).dump(2) + "\n" : render_prune(*result));
  return kExitOk;
}

int run_command(const Command& cmd, const Locations& locations, Context& ctx) {
  switch (cmd.kind) {
    case CommandKind::submit: return run_submit(cmd, ctx);
    case CommandKind::status: return run_status(cmd, ctx);
    case CommandKind::logs: return run_logs(cmd, ctx);
    case CommandKind::cancel:
    case CommandKind::pause:
    case CommandKind::resume:
    case CommandKind::retry: return run_control(cmd, ctx);
    case CommandKind::history: return run_history(cmd, ctx);
    case CommandKind::history_export: return run_history_export(cmd, ctx);
    case CommandKind::history_import: return run_history_import(cmd, ctx);
    case CommandKind::watch: return run_watch(cmd, ctx);
    case CommandKind::report: return run_report(cmd, ctx);
    case CommandKind::completions: return run_completions(cmd, ctx);
    case CommandKind::daemon_start: return run_daemon_start(cmd, locations, ctx);
    case CommandKind::daemon_stop: return run_daemon_stop(locations, ctx);
    case CommandKind::daemon_restart: return run_daemon_restart(cmd, locations, ctx);
    case CommandKind::prune: return run_prune(cmd, ctx);
    case CommandKind::doctor: return run_doctor(cmd, locations, ctx);
    case CommandKind::cache_stats:
    case CommandKind::cache_clear: return run_cache(cmd, locations, ctx);
  }
  return kExitUsage;
}

}  // namespace fad::client
