// Where this invocation finds fadd's socket, state dir and config, in the
// contract's order: flag, environment variable, config file, default.
#pragma once

#include <optional>
#include <string>

#include "client/cli.h"
#include "common/paths.h"
#include "common/result.h"

namespace fad::client {

struct Locations {
  std::string socket;
  std::string state_dir;
  std::optional<std::string> config;  ///< the config file in use, if any
  /// --state-dir, or FAD_STATE_DIR with another than the default, was given: the user means that fadd
  bool state_dir_named = false;
  /// --socket, or FAD_SOCKET with another than the default, was given: the user means the fadd there
  bool socket_named = false;
};

/// Resolves the locations for `cmd`. A config file named by --config or
/// FAD_CONFIG must exist and parse; the default one is used only if present.
/// Fails (a usage error, exit 2) with the config's own message.
Result<Locations> resolve_locations(const Command& cmd, const EnvLookup& env, unsigned uid);

}  // namespace fad::client
