// The state-dir lock; see instance_lock.h.
#include "daemon/instance_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/file_read.h"

namespace fad {

Result<InstanceLock> InstanceLock::acquire(const std::string& state_dir) {
  const std::string path = state_dir + "/fadd.lock";
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return make_error("cannot open " + path + ": " + std::strerror(errno));
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    std::string holder = read_small_file(path);
    while (!holder.empty() && (holder.back() == '\n' || holder.back() == ' ')) holder.pop_back();
    ::close(fd);
    return make_error("another fadd is already running (pid " + (holder.empty() ? std::string("?") : holder) +
                      ") on the state dir " + state_dir + "; stop it with 'fad daemon stop'");
  }
  if (::ftruncate(fd, 0) == 0) {
    const std::string pid = std::to_string(::getpid()) + "\n";
    if (::pwrite(fd, pid.data(), pid.size(), 0) < 0) {
      // The pid is only informational; the lock is what counts.
    }
  }
  return InstanceLock(fd);
}

InstanceLock::~InstanceLock() {
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace fad
