// See file_write.h.
#include "common/file_write.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>

namespace fad {
namespace {

/// Tries this many random names before giving up: a collision means another
/// writer (or an attacker) holds the name, and a fresh one avoids it.
constexpr int kNameTries = 16;

Status write_all(int fd, const std::string& bytes) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return make_error(n < 0 ? std::strerror(errno) : "short write");
    done += static_cast<std::size_t>(n);
  }
  return ok_status();
}

}  // namespace

Status write_file_atomically(const std::string& path, const std::string& bytes) {
  // The rename would replace whatever is there: a link (/dev/stdout), a
  // device (/dev/null), a FIFO. Only a regular file is the user's to replace.
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    return make_error(path + ": " +
                      (S_ISLNK(st.st_mode) ? "a symbolic link; fad writes only to a regular file or a new name"
                       : S_ISDIR(st.st_mode)
                           ? "a directory; name a file"
                           : "not a regular file (a device, FIFO or socket); fad will not replace it"));
  }
  std::random_device seed;
  std::mt19937_64 rng(seed());
  std::string tmp;
  int fd = -1;
  for (int i = 0; i < kNameTries && fd < 0; ++i) {
    tmp = path + ".fad-" + std::to_string(::getpid()) + "-" + std::to_string(rng() % 1000000000);
    // O_EXCL: never opens what is already there, a symlink included.
    fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd < 0 && errno != EEXIST) return make_error(path + ": " + std::strerror(errno));
  }
  if (fd < 0) return make_error(path + ": no free temporary name beside it");
  Status written = write_all(fd, bytes);
  const int close_errno = ::close(fd) == 0 ? 0 : errno;
  if (written && close_errno != 0) written = make_error(std::strerror(close_errno));
  if (written && ::rename(tmp.c_str(), path.c_str()) != 0) written = make_error(std::strerror(errno));
  if (!written) {
    ::unlink(tmp.c_str());
    return make_error(path + ": " + written.error());
  }
  return ok_status();
}

}  // namespace fad
