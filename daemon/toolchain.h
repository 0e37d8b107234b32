// What a compiler (nvcc or an nvcc-compatible program) is: its resolved path,
// version line and the archs it can build. Probed once per path and cached.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/arch.h"
#include "common/result.h"

namespace fad {

struct Toolchain {
  std::string path;     ///< absolute
  std::string version;  ///< last line of `--version` ("Build cuda_13.0.r13.0/...")
  std::vector<Arch> archs;
};

/// Finds `name` on PATH (or /usr/local/cuda/bin) when it has no slash.
Result<std::string> resolve_executable(const std::string& name);

/// Runs `nvcc --version` and `nvcc --list-gpu-arch` (as argv, no shell, 30 s limit).
Result<Toolchain> probe_toolchain(const std::string& nvcc);

/// Runs a program and returns its stdout+stderr; fails on spawn error, timeout or non-zero exit.
Result<std::string> run_capture(const std::vector<std::string>& argv, int timeout_s);

/// Caches probes by requested name: probing nvcc takes ~100 ms.
class ToolchainCache {
 public:
  Result<Toolchain> get(const std::string& nvcc);

 private:
  std::map<std::string, Toolchain> cache_;
};

}  // namespace fad
