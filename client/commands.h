// One function per fad subcommand. Each talks to fadd only through a Sender,
// writes to the given streams, and returns the contract's exit code, so
// commands are testable with canned responses and a fake clock.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>

#include "client/cli.h"
#include "client/connection.h"
#include "client/locations.h"
#include "common/result.h"

namespace fad::client {

/// What a command needs from the outside world.
struct Context {
  Sender send;
  std::string socket;  ///< for messages
  std::ostream& out;
  std::ostream& err;
  std::function<void(std::chrono::milliseconds)> sleep;
  std::function<Result<std::vector<Arch>>()> detect_archs;  ///< the local GPUs' archs
  /// Monotonic time, for deadlines (tests advance it with their fake sleep).
  std::function<std::chrono::steady_clock::time_point()> now = [] { return std::chrono::steady_clock::now(); };
  /// Whether `out` is a terminal: progress redraws in place and --watch
  /// clears the screen only there; a pipe gets plain lines.
  bool out_is_tty = false;
  /// The terminal's width in columns (progress lines are cut to it).
  std::function<std::size_t()> width = [] { return std::size_t{80}; };
  /// Wall-clock epoch seconds (elapsed times, how often a pipe gets a line).
  std::function<double()> wall = [] { return 0.0; };
  /// The signal that asked a follower to stop (SIGINT for Ctrl-C, SIGTERM,
  /// SIGHUP), 0 while none; the follower then exits 128 + it, as a shell reports.
  std::function<int()> interrupted = [] { return 0; };
  bool color = false;  ///< colour states (see style.h)
  /// Standard input, read to its end, at most the given bytes (`history
  /// import -`); tests hand their own text.
  std::function<Result<std::string>(std::size_t)> read_stdin = [](std::size_t) -> Result<std::string> {
    return make_error("no standard input to read");
  };
};

/// The version of every JSON document fad prints (its top-level
/// "schema_version"); raised only when a field changes meaning or goes away.
inline constexpr int kJsonSchemaVersion = 1;

/// `doc` with its top-level "schema_version" set.
json with_schema(json doc);

/// How long a follow loop keeps trying to reach a fadd that went away.
inline constexpr std::chrono::seconds kReconnectWindow{60};

/// Sends one request; on failure prints "fad: ..." to ctx.err, stores the exit
/// code in `exit_code` and returns nullopt. On success returns the "result" object.
std::optional<json> request(Context& ctx, const std::string& type, const json& body, int& exit_code);

/// Prints a failed reply (a failure, or an answer that is not ok) as request()
/// does, "fad: ..." to ctx.err, and returns its exit code.
int report(Context& ctx, const CallResult& reply);

/// Sends a request of a loop that follows something over time (submit --wait,
/// status --watch, logs --follow). When fadd cannot be reached (it is
/// restarting), says so once on ctx.err, retries with backoff for up to
/// kReconnectWindow and says when it answers again. Returns the last failure
/// after that, or at once for a failure waiting cannot fix (permission).
/// `before_saying` runs before its first line (a follower erases its
/// progress line there, or the message would land on it).
CallResult send_following(Context& ctx, const Request& request, const std::function<void()>& before_saying = {});

int run_submit(const Command& cmd, Context& ctx);   ///< submit, and follow it with --wait
int run_status(const Command& cmd, Context& ctx);   ///< status [ID] [--json] [--watch]
int run_logs(const Command& cmd, Context& ctx);     ///< logs ID [UNIT] [--follow]
int run_control(const Command& cmd, Context& ctx);  ///< cancel, pause, resume, retry
int run_history(const Command& cmd, Context& ctx);  ///< history [--limit N] [--json]
int run_prune(const Command& cmd, Context& ctx);    ///< prune [--older-than AGE] [--dry-run] [--json]
/// history export FILE: every learnt unit profile, as a versioned JSON file.
int run_history_export(const Command& cmd, Context& ctx);
/// history import FILE: profiles from such a file; a bad file is a usage error (2).
int run_history_import(const Command& cmd, Context& ctx);
int run_watch(const Command& cmd, Context& ctx);   ///< watch [ID]
int run_report(const Command& cmd, Context& ctx);  ///< report ID [-o FILE] [--trace FILE] [--json]

/// Follows build `id` until it finishes, as `submit --wait` and `watch` do:
/// a progress line redrawn in place on a terminal, plain lines at most every
/// few seconds in a pipe, nothing but the final document with `json`; then
/// the outcome (a failure with its unit's last lines). Returns the build's
/// exit code, 3 when fadd goes away, 130 after Ctrl-C (the build goes on).
/// `in_contact`: fadd has answered this client already (a submit); else a
/// first request that finds no fadd fails at once instead of waiting for one.
int follow_build(Context& ctx, std::int64_t id, bool json, bool in_contact);

/// Runs whichever subcommand `cmd` names (daemon start/stop/restart included).
int run_command(const Command& cmd, const Locations& locations, Context& ctx);

}  // namespace fad::client
