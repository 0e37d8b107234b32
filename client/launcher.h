// `fad launch [--] COMPILER ARGS...` and the `fad-nvcc` / `nvcc` shim: run one
// compiler call under fadd's memory scheduling. A compile found in the compile
// cache is restored at once (launch_cache.h); otherwise the call waits for
// admission, gets the nvcc --threads fadd grants, runs with its output passed
// through to the caller's terminal, and exits with the compiler's exit code.
// Without fadd it says so once and waits for memory on its own
// (memory_claim.h): a build never fails because fad is absent, and never
// overruns memory because of it.
#pragma once

#include <string>
#include <vector>

namespace fad::client {

/// Runs `compiler args...` through fadd at `socket`. Returns the exit code to
/// exit with (the compiler's, or 128 + signal).
int run_launch(const std::string& compiler, const std::vector<std::string>& args, const std::string& socket);

/// The nvcc a shim stands for: $FAD_REAL_NVCC, else the first nvcc on PATH that
/// is not this shim, else /usr/local/cuda/bin/nvcc. Empty when none exists.
std::string real_nvcc(const std::string& self_dir);

/// The fad binary's own absolute path (/proc/self/exe).
std::string self_exe();

/// Replaces this process with `argv` (searching PATH); only returns on failure,
/// with the exit code to use (127).
int exec_direct(const std::vector<std::string>& argv);

}  // namespace fad::client
