// Runs a program (argv, no shell) and captures what it prints: for compiler
// --version probes on both sides of the protocol, `fad doctor`'s checks and
// `fad daemon restart`'s `fadd --check`. Standard library and POSIX only, so
// the client needs no process library.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "common/result.h"

namespace fad {

/// How a program run ended, and what it printed.
struct ProgramRun {
  bool started = false;    ///< false: it could not be run at all
  bool timed_out = false;  ///< it ran past the time limit and was killed
  int exit_code = -1;      ///< 128 + the signal when killed by one, as a shell says; -1 when not started
  int signal = 0;          ///< the signal that killed it; 0 when it exited
  std::string output;      ///< stdout (and stderr, unless left out), up to max_output bytes
  std::string error;       ///< why it could not be run, when not started
};

struct ProgramRunOptions {
  bool with_stderr = true;                        ///< else its stderr goes to /dev/null
  bool search_path = false;                       ///< a bare argv[0] is looked up on PATH (else it is a path)
  std::size_t max_output = std::size_t{1} << 20;  ///< output past this is read and dropped
};

/// Runs `argv` to its end, stdin from /dev/null, in its own process group: at
/// `timeout_s` the whole group is killed (nvcc's cicc and ptxas, gcc), not
/// only the program.
ProgramRun run_program(const std::vector<std::string>& argv, int timeout_s, const ProgramRunOptions& options = {});

/// stdout and stderr of `argv` together. Fails, naming the program, when it
/// cannot start, exits non-zero or runs longer than `timeout_s` (then killed).
Result<std::string> program_output(const std::vector<std::string>& argv, int timeout_s);

}  // namespace fad
