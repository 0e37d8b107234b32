// Whether a process or a process group exists, asked of the kernel with
// signal 0. One answer everywhere: EPERM means it exists and is another
// user's (fadd as a user looking at root's processes, or the other way round).
#pragma once

#include <sys/types.h>

namespace fad {

/// A live (or zombie) process `pid`; false for pid <= 0.
bool process_exists(pid_t pid);
/// Any process in group `pgid`; false for pgid <= 1 (0 and 1 are never ours).
bool group_exists(pid_t pgid);

}  // namespace fad
