// `fad run [--budget SIZE] [--name NAME] [--socket PATH] -- CMD ARGS...`: runs
// any build command with every nvcc call routed through fad (PYTORCH_NVCC,
// CMAKE_CUDA_COMPILER_LAUNCHER, an nvcc shim first on PATH), MAX_JOBS raised so
// ninja offers fad enough candidates, NVCC_THREADS left to fad. The command
// shows up in `fad status` as a build whose units are its compile calls.
#pragma once

#include <set>
#include <string>
#include <vector>

namespace fad::client {

/// The options every subcommand takes, as an entry mode (fad run, fad
/// launch) reads them ahead of its command, where CLI11 does not parse.
struct EntryOptions {
  std::string socket;
  std::string config;
  /// The options read so far: each is given once (which of two was meant is
  /// the user's to say, as fad's other commands have it).
  std::set<std::string> given;
};

/// When args[i] is --socket, --config or --color (with its value, or as
/// --opt=VALUE), takes it into *out, moves i past it and returns true; a
/// missing or bad value sets *error ("see 'fad `mode` --help'").
bool take_entry_option(const std::vector<std::string>& args, std::size_t& i, EntryOptions* out, std::string* error,
                       const std::string& mode);

/// "unknown option OPT[; did you mean '--x'?] (see 'fad `mode` --help')":
/// for an option an entry mode does not take, among the entry options and
/// `own` (the mode's own, e.g. --budget).
std::string unknown_entry_option(const std::string& option, const std::vector<std::string>& own,
                                 const std::string& mode);

struct RunOptions {
  EntryOptions entry;  ///< socket: the resolved one once parsed and looked up
  std::string name;
  std::string budget;  ///< size text; empty = no per-build cap
  std::vector<std::string> command;
};

/// Parses the arguments after "run". Returns an error message for usage errors,
/// "help" for --help, empty on success.
std::string parse_run_args(const std::vector<std::string>& args, RunOptions* out);

/// libfad-intercept.so: $FAD_INTERCEPT_LIB, else beside this binary, else in
/// its installed library directory; "" when none is found.
std::string intercept_library();

/// Runs it; returns the command's exit code (the build's result).
int run_build_command(const RunOptions& options);

extern const char* const kRunHelp;

}  // namespace fad::client
