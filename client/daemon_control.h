// `fad daemon start` / `fad daemon stop`: run fadd in the background without
// systemd, and stop it, confirming each through the socket.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "client/cli.h"
#include "client/commands.h"
#include "client/locations.h"

namespace fad::client {

/// The argv for fadd: the resolved socket and state dir (so fad and fadd agree
/// on them), the config if one is in use, then the user's args after "--".
std::vector<std::string> fadd_argv(const std::string& fadd_path, const Locations& locations,
                                   const std::vector<std::string>& extra);

/// The last `n` lines of `text` (all of it if shorter), each newline-terminated.
std::string last_lines(std::string_view text, std::size_t n);

/// fadd next to `self_exe` (the running fad) if executable there, else the first
/// `fadd` on `path_env` (a PATH value); nullopt if neither.
std::optional<std::string> find_fadd(const std::string& self_exe, const std::string& path_env);

/// Starts fadd detached (own session, stdin /dev/null, output appended to
/// STATE/fadd.log) and waits up to 15 s for it to answer. Exit 0 when it does
/// or when a daemon already answered; 1 when fadd cannot be found, exits early
/// (the log's last lines are shown) or does not answer in time.
int run_daemon_start(const Command& cmd, const Locations& locations, Context& ctx);

/// Asks fadd to shut down and waits up to 30 s until the socket stops answering.
/// Exit 0 when stopped or not running; 1 if it still answers after the wait.
int run_daemon_stop(Context& ctx);

}  // namespace fad::client
