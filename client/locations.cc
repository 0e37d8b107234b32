// Location resolution for the client; the rules themselves live in common/paths.
#include "client/locations.h"

#include "common/config.h"

namespace fad::client {

Result<Locations> resolve_locations(const Command& cmd, const EnvLookup& env, unsigned uid) {
  Locations loc;
  loc.config = cmd.config;
  if (!loc.config) loc.config = env("FAD_CONFIG");
  if (!loc.config) loc.config = default_config_path(env);

  std::optional<std::string> config_socket, config_state_dir;
  if (loc.config) {
    auto config = load_config(*loc.config);
    if (!config) return make_error(config.error());
    config_socket = config->socket;
    config_state_dir = config->state_dir;
  }
  const std::string default_socket = default_socket_path(env, uid);
  loc.socket = resolve_path(cmd.socket, env, "FAD_SOCKET", config_socket, default_socket);
  if (auto problem = socket_path_problem(loc.socket); !problem.empty()) return make_error(problem);
  const std::string default_state = default_state_dir(env);
  loc.state_dir = resolve_path(cmd.state_dir, env, "FAD_STATE_DIR", config_state_dir, default_state);
  // The environment names another fadd than the default one as a flag does
  // (FAD_SOCKET=... fad daemon stop in one shell, another fadd in the next);
  // a variable exported with the default path, a config file or a default
  // only say where one would be.
  loc.state_dir_named = cmd.state_dir || (env("FAD_STATE_DIR") && loc.state_dir != default_state);
  loc.socket_named = cmd.socket || (env("FAD_SOCKET") && loc.socket != default_socket);
  return loc;
}

}  // namespace fad::client
