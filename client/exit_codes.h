// The contract's exit codes and how daemon answers map onto them.
#pragma once

#include <string_view>

#include "common/protocol.h"

namespace fad::client {

inline constexpr int kExitOk = 0;           ///< success
inline constexpr int kExitFailed = 1;       ///< the build or operation failed
inline constexpr int kExitUsage = 2;        ///< bad flag, arch, size or config
inline constexpr int kExitUnreachable = 3;  ///< fadd did not answer

/// Exit code for an error response from fadd: usage -> 2, everything else -> 1.
int exit_code_for_error(const Response& response);

/// Exit code for a build that reached `state`: 0 for succeeded, 1 otherwise
/// (failed, cancelled, or anything unexpected).
int exit_code_for_build_state(std::string_view state);

/// Exit code of a follower stopped by signal `sig`: 128 + it, as a shell
/// reports a command that signal ended (130 for Ctrl-C).
constexpr int exit_code_for_signal(int sig) { return 128 + sig; }

/// True for the states a build does not leave on its own.
bool is_final_build_state(std::string_view state);

}  // namespace fad::client
