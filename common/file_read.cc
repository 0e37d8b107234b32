// Bounded reads of regular files; see file_read.h.
#include "common/file_read.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace fad {

namespace {

/// Closes the descriptor on every path out.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

const char* kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

/// Opens `path` for reading without blocking and checks it is a regular file.
/// `label` is "WHAT PATH" for messages.
Result<int> open_regular(const std::string& path, const std::string& label, Fd& holder, struct stat& st) {
  holder.fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (holder.fd < 0) return make_error("cannot read " + label + ": " + std::strerror(errno));
  if (::fstat(holder.fd, &st) != 0) return make_error("cannot read " + label + ": " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return make_error("cannot read " + label + ": it is " + kind_of(st.st_mode));
  return holder.fd;
}

std::string label_of(const std::string& path, std::string_view what) {
  return what.empty() ? path : std::string(what) + " " + path;
}

/// Reads up to `limit` bytes from the current position; fails on a read error.
Result<std::string> read_up_to(int fd, const std::string& label, std::size_t limit) {
  std::string out;
  char buf[16384];
  while (out.size() < limit) {
    const std::size_t want = std::min(sizeof buf, limit - out.size());
    const ssize_t n = ::read(fd, buf, want);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return make_error("cannot read " + label + ": " + std::strerror(errno));
    if (n == 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  return out;
}

}  // namespace

Result<std::string> read_regular_file(const std::string& path, std::size_t max_bytes, std::string_view what) {
  const std::string label = label_of(path, what);
  Fd fd;
  struct stat st {};
  if (auto opened = open_regular(path, label, fd, st); !opened) return Error{opened.error()};
  // /proc and cgroup files report size 0: the size is only a hint, the read is bounded anyway.
  if (static_cast<std::uint64_t>(st.st_size) > max_bytes)
    return make_error("cannot read " + label + ": it holds " + std::to_string(st.st_size) + " bytes, more than the " +
                      std::to_string(max_bytes) + " bytes fad reads");
  return read_descriptor(fd.fd, max_bytes, label);
}

Result<std::string> read_descriptor(int fd, std::size_t max_bytes, const std::string& label) {
  auto text = read_up_to(fd, label, max_bytes + 1);
  if (!text) return text;
  if (text->size() > max_bytes)
    return make_error("cannot read " + label + ": it holds more than the " + std::to_string(max_bytes) +
                      " bytes fad reads");
  return text;
}

Result<std::string> read_file_slice(const std::string& path, std::uint64_t offset, std::size_t max_bytes,
                                    std::uint64_t* size) {
  Fd fd;
  struct stat st {};
  if (auto opened = open_regular(path, path, fd, st); !opened) return Error{opened.error()};
  if (size) *size = static_cast<std::uint64_t>(st.st_size);
  if (offset >= static_cast<std::uint64_t>(st.st_size)) return std::string();
  if (::lseek(fd.fd, static_cast<off_t>(offset), SEEK_SET) < 0)
    return make_error("cannot read " + path + ": " + std::strerror(errno));
  // A file still growing (a live log) is read up to its size at fstat time.
  const auto left = static_cast<std::uint64_t>(st.st_size) - offset;
  return read_up_to(fd.fd, path, static_cast<std::size_t>(std::min<std::uint64_t>(left, max_bytes)));
}

std::string read_small_file(const std::string& path, std::size_t max_bytes) {
  auto text = read_regular_file(path, max_bytes);
  return text ? std::move(*text) : std::string();
}

std::optional<std::string> read_whole_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::string out;
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      ::close(fd);
      return std::nullopt;
    }
    if (n == 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return out;
}

int open_regular_unlinked(const std::string& path, int extra) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | extra, 0644);
  if (fd < 0) return -1;
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return -1;
  }
  return fd;
}

}  // namespace fad
