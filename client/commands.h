// One function per fad subcommand. Each talks to fadd only through a Sender,
// writes to the given streams, and returns the contract's exit code, so
// commands are testable with canned responses and a fake clock.
#pragma once

#include <chrono>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>

#include "client/cli.h"
#include "client/connection.h"
#include "client/locations.h"

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
};

/// How long a follow loop keeps trying to reach a fadd that went away.
inline constexpr std::chrono::seconds kReconnectWindow{60};

/// Sends one request; on failure prints "fad: ..." to ctx.err, stores the exit
/// code in `exit_code` and returns nullopt. On success returns the "result" object.
std::optional<json> request(Context& ctx, const std::string& type, const json& body, int& exit_code);

/// Sends a request of a loop that follows something over time (submit --wait,
/// status --watch, logs --follow). When fadd cannot be reached (it is
/// restarting), says so once on ctx.err, retries with backoff for up to
/// kReconnectWindow and says when it answers again. Returns the last failure
/// after that, or at once for a failure waiting cannot fix (permission).
CallResult send_following(Context& ctx, const Request& request);

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

/// Runs whichever subcommand `cmd` names (daemon start/stop/restart included).
int run_command(const Command& cmd, const Locations& locations, Context& ctx);

}  // namespace fad::client
