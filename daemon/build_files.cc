// A build's files and who owns them; see build_files.h.
#include "daemon/build_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace fad {

namespace fs = std::filesystem;

std::string make_daemon_dir(const std::string& dir, const std::optional<FileOwner>& owner) {
  if (dir.empty()) return "";
  struct stat st {};
  if (::stat(dir.c_str(), &st) == 0) return "";
  const fs::path parent = fs::path(dir).parent_path();
  if (!parent.empty() && parent != fs::path(dir))
    if (auto why = make_daemon_dir(parent.string(), owner); !why.empty()) return why;
  if (::mkdir(dir.c_str(), 0700) == 0) {
    if (owner) ::chmod(dir.c_str(), 0711);
    return "";
  }
  if (errno == EEXIST) return "";
  return "cannot create " + dir + ": " + std::strerror(errno);
}

void make_owned_dir(const std::string& dir, const std::optional<FileOwner>& owner) {
  if (dir.empty()) return;
  make_daemon_dir(fs::path(dir).parent_path().string(), owner);
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) return;
  // Made by fadd inside a directory only fadd can write: the path cannot have
  // been swapped for a link in between, so chown by path is safe.
  if (owner) ::lchown(dir.c_str(), owner->uid, owner->gid);
}

bool write_owned_file(const std::string& path, std::string_view text, const std::optional<FileOwner>& owner,
                      bool truncate) {
  const int flags =
      O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | (truncate ? O_TRUNC : 0);
  const int fd = ::open(path.c_str(), flags, 0600);
  if (fd < 0) return false;
  struct stat st {};
  bool ok = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  if (ok && owner && (st.st_uid != owner->uid || st.st_gid != owner->gid))
    ok = ::fchown(fd, owner->uid, owner->gid) == 0;
  while (ok && !text.empty()) {
    const ssize_t n = ::write(fd, text.data(), text.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ok = false;
      break;
    }
    text.remove_prefix(static_cast<std::size_t>(n));
  }
  ::close(fd);
  return ok;
}

}  // namespace fad
