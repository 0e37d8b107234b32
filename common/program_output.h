// Runs a program (argv, no shell) and captures what it prints: for compiler
// --version probes on both sides of the protocol. Standard library and POSIX
// only, so the client needs no process library.
#pragma once

#include <string>
#include <vector>

#include "common/result.h"

namespace fad {

/// How a program run ended, and what it printed to stdout and stderr together.
struct ProgramRun {
  int exit_code = 0;  ///< 128 + the signal when killed by one, as a shell says
  int signal = 0;     ///< the signal that killed it; 0 when it exited
  std::string output;
};

/// Runs `argv` to its end. Fails, naming the program, only when it cannot
/// start or runs longer than `timeout_s` (then killed): the caller reads the
/// exit code, as `fad daemon restart` tells fadd's usage error (2) apart.
Result<ProgramRun> run_program(const std::vector<std::string>& argv, int timeout_s);

/// stdout and stderr of `argv` together. Fails, naming the program, when it
/// cannot start, exits non-zero or runs longer than `timeout_s` (then killed).
Result<std::string> program_output(const std::vector<std::string>& argv, int timeout_s);

}  // namespace fad
