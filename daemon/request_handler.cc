// Request dispatch: one branch per message type; see request_handler.h.
#include "daemon/request_handler.h"

#include <spdlog/spdlog.h>

#include "daemon/responses.h"

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
}  // namespace

Response RequestHandler::dispatch(const Request& req) {
  const auto& t = req.type;
  if (t == "submit") return with_body<SubmitRequest>(req, [&](const auto& b) { return engine_.submit(b); });
  if (t == "status") return with_body<StatusRequest>(req, [&](const auto& b) { return engine_.status(b); });
  if (t == "logs") return with_body<LogsRequest>(req, [&](const auto& b) { return engine_.logs(b); });
  if (t == "history") return with_body<HistoryRequest>(req, [&](const auto& b) { return engine_.history(b); });
  if (t == "cancel") return with_body<BuildRequest>(req, [&](const auto& b) { return engine_.cancel(b.id); });
  if (t == "pause") return with_body<BuildRequest>(req, [&](const auto& b) { return engine_.pause(b.id); });
  if (t == "resume") return with_body<BuildRequest>(req, [&](const auto& b) { return engine_.resume(b.id); });
  if (t == "retry") return with_body<BuildRequest>(req, [&](const auto& b) { return engine_.retry(b.id); });
  if (t == "report") return with_body<BuildRequest>(req, [&](const auto& b) { return engine_.report(b.id); });
  if (t == "open_build") return with_body<OpenBuildRequest>(req, [&](const auto& b) { return engine_.open_build(b); });
  if (t == "close_build")
    return with_body<CloseBuildRequest>(req, [&](const auto& b) { return engine_.close_build(b); });
  if (t == "launch") return with_body<LaunchRequest>(req, [&](const auto& b) { return engine_.launch(b); });
  if (t == "launch_poll") return with_body<UnitRequest>(req, [&](const auto& b) { return engine_.launch_poll(b); });
  if (t == "launch_started")
    return with_body<LaunchStartedRequest>(req, [&](const auto& b) { return engine_.launch_started(b); });
  if (t == "launch_finished")
    return with_body<LaunchFinishedRequest>(req, [&](const auto& b) { return engine_.launch_finished(b); });
  if (t == "shutdown") return ok_response(json::object());
  return error_response(ErrorCode::usage, "unknown request type '" + t + "'");
}

std::string RequestHandler::handle(std::string_view line) {
  auto req = parse_request(line);
  if (!req) return encode_error(ErrorCode::usage, req.error());
  Response r;
  try {
    r = dispatch(*req);
  } catch (const std::exception& e) {
    spdlog::error("request '{}' failed: {}", req->type, e.what());
    return encode_error(ErrorCode::internal, std::string("internal error: ") + e.what());
  }
  if (r.ok && req->type == "shutdown" && on_shutdown_) on_shutdown_();
  return r.ok ? encode_ok(r.result) : encode_error(r.code, r.message);
}

}  // namespace fad
