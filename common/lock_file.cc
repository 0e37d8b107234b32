// Reading fadd's lock without trusting it; see lock_file.h.
#include "common/lock_file.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "common/file_read.h"

namespace fad {

namespace {

/// A pid is a few digits; anything else (garbage, a tampered file) is none.
long parse_pid(std::string_view line) {
  if (line.empty() || line.size() > 9 || line.find_first_not_of("0123456789") != std::string_view::npos) return 0;
  long pid = 0;
  for (char c : line) pid = pid * 10 + (c - '0');
  return pid;
}

}  // namespace

LockText read_lock_text(const std::string& path) {
  LockText out;
  const int fd = open_regular_unlinked(path);
  if (fd < 0) return out;
  char buf[4096];
  const ssize_t n = ::pread(fd, buf, sizeof buf, 0);
  ::close(fd);
  if (n <= 0) return out;
  const std::string_view text(buf, static_cast<std::size_t>(n));
  const auto end = text.find('\n');
  out.pid = parse_pid(text.substr(0, end));
  // The lines after it; one cut off by the end of what was read counts as
  // not written yet.
  for (std::size_t at = end; at != std::string_view::npos && at + 1 < text.size();) {
    const std::size_t next = text.find('\n', at + 1);
    if (next == std::string_view::npos) break;
    const std::string_view line = text.substr(at + 1, next - at - 1);
    if (line == kStoppingMark) out.stopping = true;
    if (line.substr(0, kSocketMark.size()) == kSocketMark) out.socket = std::string(line.substr(kSocketMark.size()));
    at = next;
  }
  return out;
}

bool lock_held(const std::string& path) {
  // O_DIRECTORY fails before anything is opened unless it is a directory.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_DIRECTORY);
  if (fd < 0 && errno == ENOTDIR) fd = open_regular_unlinked(path);
  if (fd < 0) return false;  // nothing there: no daemon on this state dir
  // fadd holds LOCK_EX; a shared lock is refused while it does.
  const bool held = ::flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  ::close(fd);  // releases the probe's own lock, if it got one
  return held;
}

}  // namespace fad
