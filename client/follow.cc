// Following a build to its end (`fad submit --wait`, `fad watch`): the thin
// loop around the pure progress rendering of progress.h. One status request
// per poll; a terminal gets one line redrawn in place (carriage return and
// erase-line, never a clear-screen), a pipe a plain line at most every few
// seconds and only when something changed.
#include <unistd.h>

#include <ostream>

#include "client/commands.h"
#include "client/daemon_control.h"
#include "client/exit_codes.h"
#include "client/json_access.h"
#include "client/progress.h"
#include "client/render.h"
#include "common/text.h"

namespace fad::client {

namespace {

constexpr auto kPollInterval = std::chrono::milliseconds(500);
constexpr double kPipeIntervalS = 5;  // a log file wants a heartbeat, not a flood
constexpr std::size_t kFailureLines = 20;
constexpr std::uint64_t kTailBytes = 16 * 1024;

// The last lines of a unit's log: one request for its size (an offset past
// the end answers with it), one for its tail. Empty when fadd cannot say.
std::string unit_log_tail(Context& ctx, std::int64_t id, const std::string& unit) {
  LogsRequest req;
  req.id = id;
  req.unit = unit;
  req.offset = std::uint64_t{1} << 62;
  auto size_reply = ctx.send(Request{"logs", req.to_json()});
  auto* sized = std::get_if<Response>(&size_reply);
  if (!sized || !sized->ok) return "";
  const auto size = static_cast<std::uint64_t>(number(sized->result, "offset"));
  req.offset = size > kTailBytes ? size - kTailBytes : 0;
  req.max_bytes = kTailBytes;
  auto tail_reply = ctx.send(Request{"logs", req.to_json()});
  auto* tail = std::get_if<Response>(&tail_reply);
  if (!tail || !tail->ok) return "";
  return printable_log(last_lines(last_attempt(str(tail->result, "data")), kFailureLines));
}

}  // namespace

int follow_build(Context& ctx, std::int64_t id, bool json_output, bool in_contact) {
  StatusRequest req;
  req.id = id;
  const bool redraw = ctx.out_is_tty && !json_output;
  bool drawn = false;
  std::string last_key;
  double last_line_at = 0;
  bool printed = false;
  auto clear_line = [&] {
    if (drawn) ctx.out << "\r\033[K";
    drawn = false;
  };
  while (true) {
    if (const int sig = ctx.interrupted()) {
      clear_line();
      ctx.out.flush();
      ctx.err << "fad: stopped following; build " << id << " goes on in fadd ('fad watch " << id
              << "' follows it again, 'fad cancel " << id << "' cancels it)\n";
      return exit_code_for_signal(sig);
    }
    // fadd may restart while a build runs (an upgrade, a crash): the build
    // survives it, so following does too. A fadd never reached is no
    // restart: that fails at once, as `fad status` does.
    const bool first = !in_contact;
    CallResult reply =
        first ? ctx.send(Request{"status", req.to_json()}) : send_following(ctx, Request{"status", req.to_json()}, [&] {
          clear_line();
          ctx.out.flush();
        });
    in_contact = true;
    if (auto* failure = std::get_if<CallFailure>(&reply)) {
      if (first) return report(ctx, reply);
      if (ctx.interrupted()) continue;  // Ctrl-C cut the request short: say so above
      clear_line();
      ctx.err << "fad: stopped waiting for build " << id << ": " << failure->message << "\n";
      return failure->exit_code;
    }
    auto& response = std::get<Response>(reply);
    if (!response.ok) {
      clear_line();
      ctx.err << "fad: " << response.message << "\n";
      return exit_code_for_error(response);
    }
    const json& builds = array_of(response.result, "builds");
    if (builds.empty() || !builds.front().is_object()) {
      clear_line();
      ctx.err << "fad: fadd no longer knows build " << id << "\n";
      return kExitFailed;
    }
    const json& build = builds.front();
    const std::string state = str(build, "state");
    if (is_final_build_state(state)) {
      clear_line();
      if (json_output)
        ctx.out << with_schema(response.result).dump(2) << "\n";
      else if (state == "failed") {
        const std::string unit = str(first_failed_unit(build), "name");
        ctx.out << render_failure(build, unit.empty() ? "" : unit_log_tail(ctx, id, unit));
      } else
        ctx.out << render_outcome(build, ctx.color);
      ctx.out.flush();
      return exit_code_for_build_state(state);
    }
    if (redraw) {
      ctx.out << "\r" << render_progress_line(response.result, ctx.width(), ctx.wall()) << "\033[K";
      ctx.out.flush();
      drawn = true;
    } else if (!json_output) {
      const double now = ctx.wall();
      const std::string key = progress_line_key(response.result);
      if (key != last_key && (!printed || now - last_line_at >= kPipeIntervalS)) {
        ctx.out << render_progress_line(response.result, 0, now) << "\n";
        ctx.out.flush();
        last_key = key;
        last_line_at = now;
        printed = true;
      }
    }
    ctx.sleep(kPollInterval);
  }
}

int run_watch(const Command& cmd, Context& ctx) {
  if (cmd.id) return follow_build(ctx, *cmd.id, false, false);
  // No id: your newest build still queued, running or paused (on a shared
  // fadd the newest of all is likely someone else's). An older fadd names
  // no owner: every build counts as yours.
  int rc = kExitOk;
  auto result = request(ctx, "status", StatusRequest{}.to_json(), rc);
  if (!result) return rc;
  const auto me = static_cast<std::int64_t>(::geteuid());
  std::optional<std::int64_t> newest;
  for (const auto& b : array_of(*result, "builds"))
    if (!is_final_build_state(str(b, "state")) && field(b, "id") && (!field(b, "uid") || count(b, "uid") == me))
      newest = count(b, "id");
  if (!newest) {
    ctx.err << "fad: no build of yours is queued or running ('fad status' lists everyone's; finished ones: 'fad "
               "history')\n";
    return kExitFailed;
  }
  return follow_build(ctx, *newest, false, true);
}

}  // namespace fad::client
