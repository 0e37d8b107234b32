// The read-mostly subcommands (status, logs, history) and build control,
// plus the dispatcher. submit lives in submit_command.cc, daemon start/stop
// in daemon_control.cc.
#include "client/commands.h"

#include <ostream>

#include "client/completions.h"
#include "client/daemon_control.h"
#include "client/doctor.h"
#include "client/exit_codes.h"
#include "client/render.h"

namespace fad::client {

namespace {
constexpr auto kFollowInterval = std::chrono::milliseconds(500);
constexpr auto kWatchInterval = std::chrono::seconds(1);
constexpr double kPipedWatchIntervalS = 5;
}  // namespace

json with_schema(json doc) {
  if (doc.is_object()) doc["schema_version"] = kJsonSchemaVersion;
  return doc;
}

std::optional<json> request(Context& ctx, const std::string& type, const json& body, int& exit_code) {
  CallResult reply = ctx.send(Request{type, body});
  if (auto* failure = std::get_if<CallFailure>(&reply)) {
    ctx.err << "fad: " << failure->message << "\n";
    exit_code = failure->exit_code;
    return std::nullopt;
  }
  auto& response = std::get<Response>(reply);
  if (!response.ok) {
    ctx.err << "fad: " << response.message << "\n";
    exit_code = exit_code_for_error(response);
    return std::nullopt;
  }
  return std::move(response.result);
}

int run_status(const Command& cmd, Context& ctx) {
  StatusRequest req;
  req.id = cmd.id;
  std::string last;
  double last_at = 0;
  while (true) {
    int rc = kExitOk;
    auto result = request(ctx, "status", req.to_json(), rc);
    if (!result) return rc;
    const std::string view = cmd.json ? with_schema(*result).dump(2) + "\n"
                             : cmd.id ? render_build_status(*result, ctx.color)
                                      : render_status(*result, ctx.color);
    if (!cmd.watch) {
      ctx.out << view;
      return kExitOk;
    }
    if (ctx.out_is_tty) {
      ctx.out << "\033[H\033[2J" << view;  // redraw in place, on a terminal only
    } else if (view != last && (last.empty() || ctx.now() - last_at >= kPipedWatchIntervalS)) {
      // A pipe gets each changed view, blank-line separated, at most every few seconds.
      ctx.out << (last.empty() ? "" : "\n") << view;
      last = view;
      last_at = ctx.now();
    }
    ctx.out.flush();
    if (ctx.interrupted()) return kExitOk;
    ctx.sleep(kWatchInterval);
  }
}

int run_logs(const Command& cmd, Context& ctx) {
  LogsRequest req;
  req.id = cmd.id.value_or(0);
  req.unit = cmd.unit;
  while (true) {
    int rc = kExitOk;
    auto result = request(ctx, "logs", req.to_json(), rc);
    if (!result) return rc;
    std::string data = result->value("data", "");
    ctx.out << data;
    ctx.out.flush();
    req.offset = result->value("offset", req.offset + data.size());
    if (result->value("done", true)) return kExitOk;
    // Without --follow, drain what is there now (it may exceed one slice), then stop.
    if (data.empty()) {
      if (!cmd.follow) return kExitOk;
      ctx.sleep(kFollowInterval);
    }
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
  std::string line = "build " + std::to_string(req.id) + ": " + result->value("state", std::string("ok"));
  if (cmd.kind == CommandKind::retry) {
    const int failed = result->value("requeued_failed", -1), cancelled = result->value("requeued_cancelled", -1);
    if (failed >= 0 && cancelled >= 0)
      line +=
          ", requeued " + std::to_string(failed) + " failed and " + std::to_string(cancelled) + " cancelled unit(s)";
    else
      line += ", " + std::to_string(result->value("requeued", 0)) + " unit(s) requeued";
  }
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
    case CommandKind::watch: return run_watch(cmd, ctx);
    case CommandKind::report: return run_report(cmd, ctx);
    case CommandKind::completions: return run_completions(cmd, ctx);
    case CommandKind::daemon_start: return run_daemon_start(cmd, locations, ctx);
    case CommandKind::daemon_stop: return run_daemon_stop(ctx);
    case CommandKind::doctor: return run_doctor(cmd, locations, ctx);
  }
  return kExitUsage;
}

}  // namespace fad::client
