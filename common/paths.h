// Where the socket, state and config live. Resolution order is the contract's:
// flag, environment variable, config file, default.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace fad {

/// Looks an environment variable up; nullopt when unset or empty.
/// A function so tests can pass a fake environment.
using EnvLookup = std::function<std::optional<std::string>(std::string_view name)>;

/// The real process environment.
EnvLookup process_env();

/// `$XDG_RUNTIME_DIR/fad/fad.sock`, else `/tmp/fad-$UID/fad.sock`.
std::string default_socket_path(const EnvLookup& env, unsigned uid);

/// `$XDG_STATE_HOME/fad`, else `$HOME/.local/state/fad`.
std::string default_state_dir(const EnvLookup& env);

/// The machine-wide config file the install creates: SYSCONFDIR/fad/fad.json
/// (/etc/fad/fad.json for a /usr install, /usr/local/etc/fad/fad.json for /usr/local).
std::string system_config_path();

/// `$XDG_CONFIG_HOME/fad/fad.json` (or `~/.config/fad/fad.json`) when the file
/// exists, else `system_config` when that exists; nullopt otherwise (running
/// without a config file is normal: every key has a default).
std::optional<std::string> default_config_path(const EnvLookup& env,
                                               const std::string& system_config = system_config_path());

/// Why `path` cannot be a Unix socket's path (longer than sun_path holds,
/// which connect() reports only as "File name too long"); "" when it can.
std::string socket_path_problem(const std::string& path);

/// Why `program` cannot name the nvcc fadd runs; "" when it can. fadd's
/// working directory is not the writer's: a path must be absolute, a bare
/// name is looked up on PATH. A NUL byte would cut the path where the
/// listing shows more.
std::string program_path_problem(const std::string& program);

/// First present of flag, env var `env_name`, config value, else `fallback`.
std::string resolve_path(const std::optional<std::string>& flag, const EnvLookup& env, std::string_view env_name,
                         const std::optional<std::string>& config_value, const std::string& fallback);

}  // namespace fad
