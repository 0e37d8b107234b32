// process_exists, group_exists; see process_exists.h.
#include "common/process_exists.h"

#include <signal.h>

#include <cerrno>

namespace fad {

bool process_exists(pid_t pid) { return pid > 0 && (::kill(pid, 0) == 0 || errno == EPERM); }

bool group_exists(pid_t pgid) { return pgid > 1 && (::kill(-pgid, 0) == 0 || errno == EPERM); }

}  // namespace fad
