// The state-dir lock; see instance_lock.h.
#include "daemon/instance_lock.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <thread>

#include "common/lock_file.h"
#include "daemon/credentials.h"

namespace fad {

namespace {
// The recorded fadd is gone for sure (no such process); anything else, a live
// pid, one we may not signal or none recorded, counts as alive.
bool holder_is_dead(long pid) { return pid > 0 && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH; }

/// Why an open file cannot be fadd's lock file, or "". fadd writes its pid
/// into it: a hard link planted at its path would have a root fadd write
/// into another user's file, as a symbolic link would (never followed).
std::string not_lock_file(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return "is not a regular file";
  if (st.st_nlink != 1) return "has another name (a hard link)";
  if (st.st_uid != ::geteuid()) return "belongs to " + user_name(st.st_uid);
  return "";
}
}  // namespace

Result<InstanceLock> InstanceLock::acquire(const std::string& state_dir, double dead_holder_wait_s) {
  const std::string path = state_dir + "/" + std::string(kLockFileName);
  // Never through a link: fadd writes its pid into what it opens.
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  const bool made = fd >= 0;
  if (!made && errno == EEXIST) fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW);
  struct stat st {};
  if (fd < 0 && errno == ELOOP && ::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode))
    return make_error(path + " is a symbolic link, not fadd's lock file; remove it and start fadd again");
  if (fd < 0) return make_error("cannot open " + path + ": " + std::strerror(errno));
  if (const std::string why = not_lock_file(fd); !why.empty()) {
    ::close(fd);
    return make_error(path + " " + why + ", so not fadd's lock file; remove it and start fadd again");
  }

  const auto give_up = std::chrono::steady_clock::now() + std::chrono::duration<double>(dead_holder_wait_s);
  while (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const LockText holder = read_lock_text(path);
    if (holder_is_dead(holder.pid) && std::chrono::steady_clock::now() < give_up) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      continue;
    }
    ::close(fd);
    const std::string pid = holder.pid > 0 ? std::to_string(holder.pid) : "?";
    if (holder_is_dead(holder.pid))
      return make_error("the state dir " + state_dir + " is still locked by a child of fadd " + pid +
                        ", which is gone; find it with 'fuser " + path + "' and stop it");
    if (holder.stopping)
      return make_error("another fadd (pid " + pid + ") is stopping on the state dir " + state_dir +
                        "; start again once it has exited ('fad daemon start' waits for it)");
    return make_error("another fadd is already running (pid " + pid + ") on the state dir " + state_dir +
                      "; stop it with 'fad daemon stop'");
  }
  // The file's lock is gone with the file when something deletes it (a
  // cleaner of old files): the directory's stays with the fadd holding it.
  // A file system that cannot lock a directory (NFS locks need a file open
  // for writing) keeps the file's lock alone.
  int dir_fd = ::open(state_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  while (dir_fd >= 0 && ::flock(dir_fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK) {
      ::close(dir_fd);
      dir_fd = -1;
      break;
    }
    if (std::chrono::steady_clock::now() < give_up) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      continue;
    }
    ::close(dir_fd);
    // Made by this start (the running fadd's was deleted) and locked by it
    // alone: not left empty for `fad daemon start` to read no pid in.
    if (made) ::unlink(path.c_str());
    ::close(fd);
    return make_error("another fadd is already running on the state dir " + state_dir + " (its " + path +
                      " was deleted; 'fuser " + state_dir + "' names it); stop it with 'fad daemon stop'");
  }
  InstanceLock lock(path, fd, dir_fd);
  lock.write_text();
  return lock;
}

void InstanceLock::write_text() const {
  // Only informational: the lock is what counts. Without the stopping mark,
  // a start beside this stop refuses at once, as before the mark existed.
  const std::string text = std::to_string(::getpid()) + "\n" + (stopping_ ? std::string(kStoppingMark) + "\n" : "") +
                           (socket_.empty() ? "" : std::string(kSocketMark) + socket_ + "\n");
  // Written over, then cut: a start reading meanwhile never finds it empty.
  if (fd_ < 0 || ::pwrite(fd_, text.data(), text.size(), 0) != static_cast<ssize_t>(text.size())) return;
  const int cut = ::ftruncate(fd_, static_cast<off_t>(text.size()));
  (void)cut;
}

void InstanceLock::note_stopping() {
  stopping_ = true;
  (void)keep_file();  // said at the next look, or never: the fadd is on its way out
  write_text();
}

void InstanceLock::note_listening(const std::string& socket) {
  if (socket.find('\n') != std::string::npos) return;
  std::error_code ec;
  const auto absolute = std::filesystem::absolute(socket, ec);
  socket_ = ec ? socket : absolute.string();
  write_text();
}

Result<bool> InstanceLock::keep_file() {
  struct stat mine {};
  struct stat there {};
  if (fd_ < 0 || ::fstat(fd_, &mine) != 0) return false;
  if (::lstat(path_.c_str(), &there) == 0 && there.st_dev == mine.st_dev && there.st_ino == mine.st_ino) return false;
  // O_NONBLOCK: a FIFO put there must not hang the daemon's loop.
  const int fd = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0600);
  if (fd < 0)
    return make_error("cannot make " + path_ + " again, fadd's lock file, which was deleted or replaced: " +
                      std::strerror(errno) + "; 'fad daemon start' and 'stop' read fadd's pid in it");
  if (const std::string why = not_lock_file(fd); !why.empty()) {
    ::close(fd);
    return make_error(path_ + ", fadd's lock file, was replaced by something that " + why +
                      ": fadd leaves it alone; remove it, and fadd makes the file again");
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    ::close(fd);
    return make_error(path_ + ", fadd's lock file, was replaced by a file another process holds locked ('fuser " +
                      path_ + "' names it): fadd leaves it alone; remove it, and fadd makes the file again");
  }
  ::close(fd_);
  fd_ = fd;
  write_text();
  return true;
}

InstanceLock::~InstanceLock() {
  if (fd_ >= 0) ::close(fd_);
  if (dir_fd_ >= 0) ::close(dir_fd_);
}

}  // namespace fad
