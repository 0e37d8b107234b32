// The ways fad is entered that bypass the subcommand parser, because what
// follows is another program's command line: `fad launch`, `fad run`, and the
// binary called as `fad-nvcc` or `nvcc` (the shim).
#pragma once

#include <optional>

namespace fad::client {

/// Handles argv when it is one of these modes and returns the exit code;
/// nullopt when argv is an ordinary subcommand.
std::optional<int> run_entry_mode(int argc, const char* const* argv);

}  // namespace fad::client
