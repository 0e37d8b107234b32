// Runs a program (argv, no shell) and captures what it prints: for compiler
// --version probes on both sides of the protocol. Standard library and POSIX
// only, so the client needs no process library.
#pragma once

#include <string>
#include <vector>

#include "common/result.h"

namespace fad {

/// stdout and stderr of `argv` together. Fails, naming the program, when it
/// cannot start, exits non-zero or runs longer than `timeout_s` (then killed).
Result<std::string> program_output(const std::vector<std::string>& argv, int timeout_s);

}  // namespace fad
