// What a compile-cache key is made of, for one nvcc compile call: everything
// that decides its outputs. The call's own file names (-o, -MF) and --threads
// do not change what is compiled and are left out; absolute paths under the
// call's project root (the deepest directory holding both its working
// directory and its source) are written relative to that root, so the same
// project unpacked elsewhere (pip builds in a fresh temporary directory each
// time) hits. Headers are not in the call key: they come from the dependency
// file of the first compile (ccache's "direct mode") and are checked by
// content on each lookup. Pure, apart from the `exists` callback.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/paths.h"

namespace fad {

/// Environment variables nvcc or its host compiler read that change what a
/// compile produces; their values are part of every key.
extern const std::vector<std::string_view> kCompilerEnvironment;

/// How the cache treats one nvcc call.
struct CachePlan {
  bool cacheable = false;
  std::string reason;        ///< why not cacheable ("" when it is), for stats and messages
  std::string source;        ///< as written
  std::string output;        ///< as written; nvcc's default (SOURCE_STEM.o) when no -o
  std::string user_depfile;  ///< the dependency file the call asks for, as written; "" when none
  std::string root;          ///< the project root relabelled in the key; "" when none
  /// The call with its own file names, --threads and the root removed: the
  /// part of the key that comes from the command line.
  std::vector<std::string> key_args;
  /// Anything else the key must hold literally (cwd, root or output path when
  /// the outputs depend on them: debug info, unusual characters).
  std::vector<std::string> key_literals;
  std::string host_compiler;  ///< -ccbin / --compiler-bindir value; "" when not given
};

/// Plans `argv` (argv[0] the compiler, as given) run in `cwd` (absolute).
/// `exists` tells whether a path (relative to cwd) names a file, so option
/// values are not taken for the source.
CachePlan plan_cache(const std::vector<std::string>& argv, const std::string& cwd,
                     bool (*exists)(const std::string& path, const std::string& cwd));

/// Everything else a key holds, computed by the caller.
struct KeyInputs {
  std::string compiler_identity;         ///< nvcc's --version output (and nvcc.profile)
  std::string host_compiler_identity;    ///< the host compiler's path and --version output
  std::string source_hash;               ///< SHA-256 of the source's content
  std::vector<std::string> environment;  ///< "NAME=value" of kCompilerEnvironment, in that order ("NAME" when unset)
};

/// The call key (64 hex digits): the manifest's name.
std::string call_key(const CachePlan& plan, const KeyInputs& inputs);

/// The environment part of KeyInputs.
std::vector<std::string> compiler_environment(const EnvLookup& env);

/// The variables nvcc.profile adds to its tools' command lines, which nvcc
/// runs through a shell.
extern const std::vector<std::string_view> kToolEnvironment;

/// Why the environment makes every compile uncacheable ("" when it does
/// not): an `@FILE` or a shell expansion in one of kToolEnvironment.
std::string environment_uncacheable_reason(const EnvLookup& env);

/// `path` (as written, relative to `cwd` or absolute), made absolute; ".."
/// is left as written (a symlinked directory before it decides where it goes).
std::string absolute_in(const std::string& path, const std::string& cwd);

/// `argv` as nvcc runs it: NVCC_PREPEND_FLAGS's words before its arguments,
/// NVCC_APPEND_FLAGS's after, so that plan_cache judges them too (a -g there
/// is a debug compile, a --keep one it cannot capture).
std::vector<std::string> with_environment_flags(const std::vector<std::string>& argv, const EnvLookup& env);

/// Whether `text` uses __DATE__, __TIME__ or __TIMESTAMP__: a compile's
/// object then holds the time it ran, and is not kept.
bool uses_time_macros(std::string_view text);

}  // namespace fad
