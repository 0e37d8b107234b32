// What `fad launch` tells fadd about a compile so that fadd never has to open
// the client's source or run the client's compiler itself: the compiler's
// version line, computed here with the user's own rights (the source's hash:
// source_digest.h). The version costs a `--version` run (~100 ms for nvcc),
// so it is cached per compiler path, mtime and size in the user's runtime dir.
#pragma once

#include <optional>
#include <string>

namespace fad::client {

/// The last line of `compiler --version` (found on PATH when it has no
/// slash), at most kMaxCompilerVersionBytes of printable text; nullopt when
/// it cannot be run or says nothing within a few seconds. Cached in
/// `cache_dir` (skipped when empty).
std::optional<std::string> compiler_version_line(const std::string& compiler, const std::string& cache_dir);

/// The user's private runtime dir for fad's small files: $XDG_RUNTIME_DIR/fad,
/// else /tmp/fad-$UID; created 0700 if missing. Empty when it exists but is
/// not the user's own, private directory (someone else made it).
std::string private_runtime_dir();

}  // namespace fad::client
