// Which compilers a compile ran with, for compile-cache keys: nvcc's and the
// host compiler's --version output (and nvcc.profile, which sets nvcc's
// include and library paths). Probing runs the program, so each identity is
// remembered in the cache directory under the binary's device, inode, size and
// modification time: a reinstalled or upgraded compiler is probed again.
#pragma once

#include <functional>
#include <string>

#include "common/compile_cache.h"
#include "common/paths.h"
#include "common/result.h"

namespace fad {

/// Whether a found executable will do; a search goes on past one that will not.
using ProgramFilter = std::function<bool(const std::string& path)>;

/// `name` searched on `path_env` (a name without '/'), or made absolute
/// against `cwd`; "" when no such executable exists (or none `accept` takes).
std::string find_program(const std::string& name, const std::string& path_env, const std::string& cwd,
                         const ProgramFilter& accept = {});

/// `path_env` without its empty entries: they name the working directory,
/// and a daemon's (or one fadd chose for it) means nothing to the user.
std::string without_empty_entries(const std::string& path_env);

/// The nvcc fadd runs for `name`: with a '/', that file (against `cwd`);
/// else the first on `path_env`'s non-empty entries, then in
/// /usr/local/cuda/bin, where the toolkit installs without adding itself to
/// PATH. "" when there is none. `fad doctor` resolves it the same way.
/// `accept` narrows a search by name (fadd looking for the copy another user
/// may run); a path with '/' is taken as named.
std::string find_nvcc(const std::string& name, const std::string& path_env, const std::string& cwd,
                      const ProgramFilter& accept = {});

/// find_nvcc() with this process's PATH and working directory ("/" when that
/// is gone).
std::string find_nvcc_here(const std::string& name, const ProgramFilter& accept = {});

/// The host compiler nvcc runs: the -ccbin value (a directory means its gcc),
/// else $NVCC_CCBIN, else gcc on PATH; "" when none is found.
std::string host_compiler_program(const std::string& ccbin, const EnvLookup& env, const std::string& cwd);

/// The identity of the compiler at `program` (absolute). Fails when it cannot
/// be run; `cache` may be null (nothing remembered).
Result<std::string> compiler_identity(const std::string& program, CompileCache* cache);

/// The last non-empty line of an identity's --version output ("Build
/// cuda_13.0.r13.0/compiler.36424714_0"): the compiler version fadd records.
std::string version_line(const std::string& identity);

}  // namespace fad
