// The launcher's side of the compile cache: before asking fadd for admission
// it looks the call up, and on a hit restores the outputs and replays what the
// compiler printed, so nothing is scheduled; after a successful compile it
// stores the outputs. Keys and storage are common/cached_compile.h's, shared
// with fadd.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "client/compiler_process.h"
#include "common/cached_compile.h"
#include "common/compile_cache.h"

namespace fad::client {

class LaunchCache {
 public:
  /// The cache for `argv` (argv[0] the compiler as called) run in `cwd`;
  /// null when the cache is off or its directory unusable (said on stderr).
  static std::unique_ptr<LaunchCache> open(const CacheSettings& settings, const std::vector<std::string>& argv,
                                           const std::string& cwd);

  bool cacheable() const { return call_->cacheable(); }
  /// The compiler's version line, for fadd's records; "" when unknown.
  const std::string& compiler_version() const { return call_->compiler_version(); }

  /// On a hit, restores the object (and dependency file) and replays the
  /// compiler's output on this process's stdout and stderr; true when done.
  bool restore();
  /// Arguments that make the compile write a dependency file for the cache.
  std::vector<std::string> extra_args() const { return call_->extra_args(); }
  /// After the compile that started at `started` exited: stores its outputs
  /// when it succeeded and all of its output was captured.
  void store(std::chrono::system_clock::time_point started, const CompilerExit& exit);

 private:
  std::string dir_;
  std::unique_ptr<CompileCache> cache_;
  std::unique_ptr<CachedCompile> call_;
};

/// Whether something said at most once per `every` is due: true when the file
/// `mark` is missing or was last touched longer ago than that, and then
/// touches it (true as well when it cannot: better said twice than never).
bool due_again(const std::string& mark, std::chrono::seconds every);

/// The nvcc program a call runs, absolute: argv[0] searched on PATH, and the
/// real nvcc when that is fad's own shim. "" when not found.
std::string compiler_program(const std::string& argv0, const std::string& cwd);

}  // namespace fad::client
