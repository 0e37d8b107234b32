// Whether a directory's filesystem is out of room: a compile that fails there
// failed for want of space, not on its merits.
#pragma once

#include <string>

namespace fad {

/// True when the filesystem holding `dir` has less than 1% of its size (at
/// least 1 MiB, at most 256 MiB) free to unprivileged writers. False when it
/// cannot be asked.
bool disk_nearly_full(const std::string& dir);

}  // namespace fad
