// The fad command line: CLI11 setup turned into a plain Command value.
// Pure (no I/O beyond building help text) so every subcommand's parsing is
// tested without a daemon; main() only prints what parse_command returns.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "common/arch.h"
#include "common/suggest.h"

namespace fad::client {

enum class CommandKind {
  submit,
  status,
  logs,
  cancel,
  pause,
  resume,
  retry,
  history,
  history_export,
  history_import,
  daemon_start,
  daemon_stop,
  daemon_restart,
  doctor,
  prune,
  cache_stats,
  cache_clear,
  watch,
  report,
  completions
};

/// One parsed invocation. Only the fields of `kind` are meaningful.
struct Command {
  CommandKind kind = CommandKind::status;
  std::string path;  ///< "submit", "daemon start": names the command in messages

  // Locations (flag values only; resolution against env and config is elsewhere).
  std::optional<std::string> socket;
  std::optional<std::string> config;
  std::optional<std::string> state_dir;  ///< daemon start and doctor
  std::optional<std::string> cache_dir;  ///< cache stats/clear

  bool json = false;
  bool wait = false;    ///< submit
  bool watch = false;   ///< status
  bool follow = false;  ///< logs

  // submit (archs and nvcc also doctor)
  std::vector<Arch> archs;  ///< empty: pick from the local GPUs
  std::string kernels = "*";
  std::optional<std::string> nvcc;
  std::string name;

  std::optional<std::int64_t> id;   ///< status (optional), logs and build control (required)
  std::optional<std::string> unit;  ///< logs
  int limit = 20;                   ///< history
  std::string file;                 ///< history export / import

  std::optional<std::int64_t> older_than_s;  ///< prune --older-than (nullopt: the daemon's retention)
  bool dry_run = false;                      ///< prune

  std::vector<std::string> fadd_args;  ///< daemon start/restart: everything after "--"

  std::string color = "auto";         ///< --color: auto, always or never
  std::optional<std::string> output;  ///< report -o
  std::optional<std::string> trace;   ///< report --trace
  std::string shell;                  ///< completions: bash, zsh or fish
};

/// Parsing ended without a command to run: help, version or a usage error.
struct EarlyExit {
  int exit_code = 0;
  std::string text;        ///< printed as is (already newline-terminated)
  bool to_stderr = false;  ///< usage errors go to stderr
};

using ParseOutcome = std::variant<Command, EarlyExit>;

/// Parses argv. Help and --version come back as EarlyExit with code 0 and text
/// for stdout; every usage problem (unknown option or command, bad arch syntax,
/// a non-positive id) as EarlyExit with code 2 and one "fad: ..." line for
/// stderr; a mistyped command or option gets "did you mean '...'?".
ParseOutcome parse_command(int argc, const char* const* argv);

/// Parses a build id: a positive decimal integer. The error quotes the text.
Result<std::int64_t> parse_build_id(const std::string& text);

}  // namespace fad::client
