// `fad completions bash|zsh|fish`: completion scripts generated from the same
// CLI11 definition the parser uses (cli_app.h), so a new command or option
// completes the day it exists.
#pragma once

#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "client/commands.h"

namespace fad::client {

/// The completion script for `shell` ("bash", "zsh" or "fish") of the command
/// line `app` defines; nullopt for another shell. Subcommands (and daemon's
/// start and stop), each one's options, and the fixed values of --color and
/// `completions` complete.
std::optional<std::string> completion_script(const CLI::App& app, const std::string& shell);

/// Prints the script for cmd.shell; exit 2 for an unknown shell.
int run_completions(const Command& cmd, Context& ctx);

}  // namespace fad::client
