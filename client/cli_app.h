// The fad command line as CLI11 objects: one definition that the parser,
// `fad completions` and the man page generator all read, so help, completion
// and manual cannot drift apart.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace fad::client {

/// The flag values CLI11 writes into, before they are checked and turned into a Command.
struct RawArgs {
  std::string socket, config, state_dir, kernels = "*", nvcc, name, id, unit, color = "auto", output, trace, shell;
  std::string older_than, file, cache_dir;  ///< prune, history export/import, cache
  std::vector<std::string> archs;
  std::string budget;                    ///< run (listed only)
  std::vector<std::string> passthrough;  ///< run and launch (listed only)
  bool json = false, wait = false, watch = false, follow = false, dry_run = false;
  int limit = 20;
};

/// Every fad subcommand with its options, writing into `raw`. `run` and
/// `launch` are listed for help, completion and the manual; their command
/// lines are another program's and are parsed before CLI11 sees them
/// (entry_modes.h).
std::unique_ptr<CLI::App> make_cli_app(RawArgs& raw);

/// The subcommands handled before parsing: "run" and "launch".
bool is_entry_mode_command(const std::string& name);

}  // namespace fad::client
