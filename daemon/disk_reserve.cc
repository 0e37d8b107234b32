// The state disk's reserve file; see disk_reserve.h.
#include "daemon/disk_reserve.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace fad {

bool DiskReserve::fill() {
  struct stat st {};
  if (::lstat(path_.c_str(), &st) == 0 && S_ISREG(st.st_mode) && static_cast<std::uint64_t>(st.st_size) >= bytes_)
    return true;
  const int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return false;
  // Allocated, not sparse: a sparse file would free nothing when deleted.
  const bool ok = ::posix_fallocate(fd, 0, static_cast<off_t>(bytes_)) == 0;
  ::close(fd);
  if (!ok) ::unlink(path_.c_str());
  return ok;
}

bool DiskReserve::release() { return ::unlink(path_.c_str()) == 0; }

bool DiskReserve::held() const {
  struct stat st {};
  return ::lstat(path_.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

}  // namespace fad
