// Raising one's own OOM score; see oom_victim.h.
#include "common/oom_victim.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstring>

namespace fad {

void become_oom_victim() noexcept {
  // Only open and write: this runs in a forked child of a multi-threaded parent.
  const int fd = ::open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
  if (fd < 0) return;
  [[maybe_unused]] const ssize_t w = ::write(fd, kOomVictimScore, std::strlen(kOomVictimScore));
  ::close(fd);
}

}  // namespace fad
