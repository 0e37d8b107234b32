// Request dispatch: one branch per message type; see request_handler.h.
#include "daemon/request_handler.h"

#include <memory>

#include <spdlog/spdlog.h>

#include "daemon/responses.h"
#include "daemon/sqlite.h"

namespace fad {

RequestHandler::RequestHandler(Engine& engine, std::function<void()> on_shutdown)
    : engine_(engine), on_shutdown_(std::move(on_shutdown)) {}

namespace {
template <class Body, class F>
Response with_body(const Request& req, F&& f) {
  auto body = Body::from_json(req.body);
  if (!body) return error_response(ErrorCode::usage, req.type + ": " + body.error());
  return f(*body);
}

// Requests whose only effect is their answer.
bool read_only(const std::string& type) {
  return type == "status" || type == "logs" || type == "history" || type == "report" || type == "history_export";
}

// Requests that queue new work under a number only the answer tells (a fad
// run that timed out runs its command without fadd). A
// client that timed out waiting (fadd stopped or swamped) told its user the
// request failed; carried out later, the build would be one nobody knows of,
// and the user's second try a duplicate.
bool queues_work(const std::string& type) { return type == "submit" || type == "retry" || type == "open_build"; }

std::string encode(const Response& r) { return r.ok ? encode_ok(r.result) : encode_error(r.code, r.message); }
}  // namespace

void RequestHandler::dispatch(const Request& req, const Caller& c, Reply done) {
  const auto& t = req.type;
  if (t == "submit") {
    auto body = SubmitRequest::from_json(req.body);
    if (!body) return done(error_response(ErrorCode::usage, req.type + ": " + body.error()));
    return engine_.submit(c, *body, std::move(done));
  }
  if (t == "prune") {
    auto body = PruneRequest::from_json(req.body);
    if (!body) return done(error_response(ErrorCode::usage, req.type + ": " + body.error()));
    return engine_.prune(c, *body, std::move(done));
  }
  Response r;
  if (t == "status")
    r = with_body<StatusRequest>(req, [&](const auto& b) { return engine_.status(c, b); });
  else if (t == "logs")
    r = with_body<LogsRequest>(req, [&](const auto& b) { return engine_.logs(c, b); });
  else if (t == "history")
    r = with_body<HistoryRequest>(req, [&](const auto& b) { return engine_.history(c, b); });
  else if (t == "cancel")
    r = with_body<BuildRequest>(req, [&](const auto& b) { return engine_.cancel(c, b.id); });
  else if (t == "pause")
    r = with_body<BuildRequest>(req, [&](const auto& b) { return engine_.pause(c, b.id); });
  else if (t == "resume")
    r = with_body<BuildRequest>(req, [&](const auto& b) { return engine_.resume(c, b.id); });
  else if (t == "retry")
    r = with_body<BuildRequest>(req, [&](const auto& b) { return engine_.retry(c, b.id); });
  else if (t == "report")
    r = with_body<BuildRequest>(req, [&](const auto& b) { return engine_.report(c, b.id); });
  else if (t == "open_build")
    r = with_body<OpenBuildRequest>(req, [&](const auto& b) { return engine_.open_build(c, b); });
  else if (t == "close_build")
    r = with_body<CloseBuildRequest>(req, [&](const auto& b) { return engine_.close_build(c, b); });
  else if (t == "launch")
    r = with_body<LaunchRequest>(req, [&](const auto& b) { return engine_.launch(c, b); });
  else if (t == "launch_poll")
    r = with_body<UnitRequest>(req, [&](const auto& b) { return engine_.launch_poll(c, b); });
  else if (t == "launch_started")
    r = with_body<LaunchStartedRequest>(req, [&](const auto& b) { return engine_.launch_started(c, b); });
  else if (t == "launch_finished")
    r = with_body<LaunchFinishedRequest>(req, [&](const auto& b) { return engine_.launch_finished(c, b); });
  else if (t == "history_export")
    r = with_body<HistoryExportRequest>(req, [&](const auto& b) { return engine_.history_export(c, b); });
  else if (t == "history_import")
    r = with_body<HistoryImportRequest>(req, [&](const auto& b) { return engine_.history_import(c, b); });
  else if (t == "shutdown")
    r = engine_.shutdown(c);
  else
    r = error_response(ErrorCode::usage, "unknown request type '" + t + "'");
  done(std::move(r));
}

void RequestHandler::handle(std::string_view line, const Caller& caller, ReplyLine reply, bool unread) {
  // Exactly one answer per line, whatever happens: a request that throws (a
  // full disk under a write) still gets its line, and a late answer after an
  // exception is dropped rather than sent twice.
  auto answered = std::make_shared<bool>(false);
  auto once = [answered, reply](std::string line) {
    if (*answered) return;
    *answered = true;
    reply(std::move(line));
  };
  std::string type = "?";
  try {
    auto req = parse_request(line);
    if (!req) return once(encode_error(ErrorCode::usage, req.error()));
    type = req->type;
    if (unread && read_only(type)) {
      spdlog::info("uid {} hung up before its {} request was answered; not computed", caller.uid, type);
      return once(encode_error(ErrorCode::usage, "the client hung up; " + type + " not computed"));
    }
    if (unread && queues_work(type)) {
      spdlog::info("uid {} hung up before fadd read its {} request; not carried out", caller.uid, type);
      return once(encode_error(ErrorCode::usage, "the client hung up; " + type + " not carried out"));
    }
    const bool shutdown = type == "shutdown";
    dispatch(*req, caller, [this, once, shutdown](Response r) {
      // Before the answer: whoever reads it may start a fadd at once, and
      // must find this one stopping.
      if (shutdown && r.ok && on_shutdown_) on_shutdown_();
      once(encode(r));
    });
  } catch (const StoreError& e) {
    // The usual cause is a full disk, which the user can act on; a damaged
    // file does not mend itself, and waiting would not help.
    spdlog::error("request '{}' failed: {}", type, e.what());
    once(encode_error(ErrorCode::internal,
                      "the " + type + " failed: fadd cannot use its database (" + std::string(e.what()) + "); " +
                          (e.damaged() ? "the file is damaged: fadd's owner must stop it and recover or move away its "
                                         "fad.db (fadd's log says how)"
                                       : "try again once it can")));
  } catch (const std::exception& e) {
    spdlog::error("request '{}' failed: {}", type, e.what());
    once(encode_error(ErrorCode::internal, std::string("internal error: ") + e.what()));
  }
}

}  // namespace fad
