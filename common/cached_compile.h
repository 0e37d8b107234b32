// One nvcc compile call's use of the compile cache, the same for the launcher
// (fad launch, fad-nvcc, fad run) and fadd (bundled units): key the call, look
// it up, restore a hit's files exactly where this call would have written
// them, and store a successful compile's outputs.
//
// A lookup checks each header set recorded for the call key (the manifest) by
// hashing the files again, and looking again where their __has_include probes
// looked (include_probes.h); the first set that matches names the result.
// Storing needs the files the compile read, from its dependency file: when the
// call asks for none, extra_args() makes nvcc write one to a private path.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "common/cache_entry.h"
#include "common/cache_key.h"
#include "common/compile_cache.h"
#include "common/paths.h"

namespace fad {

class CachedCompile {
 public:
  /// Plans and keys `argv` (argv[0] the compiler as given) run in `cwd`.
  /// `compiler` is the nvcc program to identify (absolute). `own_depfile`,
  /// when given, is where extra_args() sends the dependency file (else a
  /// private temporary). `known_identity`, when given, is the compiler's
  /// identity as the caller already established it: nothing is run (fadd
  /// must not run a client's compiler on its event loop, nor as itself).
  /// Never fails: an uncacheable call says why.
  CachedCompile(CompileCache& cache, const std::vector<std::string>& argv, const std::string& cwd, const EnvLookup& env,
                const std::string& compiler, std::string own_depfile = {},
                std::optional<std::string> known_identity = std::nullopt);
  ~CachedCompile();
  CachedCompile(const CachedCompile&) = delete;
  CachedCompile& operator=(const CachedCompile&) = delete;

  bool cacheable() const { return plan_.cacheable; }
  /// Why the call is not cached ("" when it is).
  const std::string& reason() const { return plan_.reason; }
  const CachePlan& plan() const { return plan_; }
  /// The compiler's version line (for fadd's records); "" when unknown.
  const std::string& compiler_version() const { return compiler_version_; }
  /// SHA-256 of the source (empty when it could not be read).
  const std::string& source_hash() const { return source_hash_; }

  /// Looks the call up; on a hit writes its object (and dependency file, when
  /// the call asks for one) atomically and returns what the compiler printed,
  /// to be replayed. Counts a hit, a miss or an uncacheable call.
  std::optional<CompileResult> restore();

  /// Arguments that make the compile write a dependency file the cache can
  /// read, when the call asks for none; empty otherwise.
  std::vector<std::string> extra_args() const;

  /// Stores the outputs of a successful compile that started at `started`.
  /// Not stored (ok, nothing written) when a file it read changed after it
  /// started or uses __DATE__/__TIME__. Fails with the reason otherwise.
  Status store(std::chrono::system_clock::time_point started, const std::string& stdout_text,
               const std::string& stderr_text);

 private:
  std::string depfile_to_read() const;

  CompileCache& cache_;
  CachePlan plan_;
  std::string cwd_;
  std::string call_key_;
  std::string source_hash_;
  std::string compiler_version_;
  std::string own_depfile_;
  bool own_depfile_temporary_ = false;
  std::vector<std::string> search_dirs_;  ///< where the compiler's #include looks (include_probes.h)
};

}  // namespace fad
