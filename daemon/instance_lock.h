// One fadd per state directory: an exclusive flock on STATE/fadd.lock, held for
// the daemon's life and released by the kernel even on kill -9, and one on the
// directory itself, which a cleaner deleting the lock file cannot take away.
//
// A child fadd forked an instant before it died holds a copy of the lock until
// it execs (the fd is close-on-exec) or notices fadd is gone and exits; that
// takes milliseconds. So when the pid recorded in the file is no longer alive,
// acquire waits a little for those copies to close instead of refusing a
// restart that is in fact alone.
#pragma once

#include <string>
#include <utility>

#include "common/result.h"

namespace fad {

class InstanceLock {
 public:
  /// Takes the lock or fails naming the pid that holds it. Fails at once when
  /// that pid lives; waits up to `dead_holder_wait_s` when it does not.
  static Result<InstanceLock> acquire(const std::string& state_dir, double dead_holder_wait_s = 5.0);
  InstanceLock(InstanceLock&& other) noexcept
      : path_(std::move(other.path_)),
        fd_(other.fd_),
        dir_fd_(other.dir_fd_),
        stopping_(other.stopping_),
        socket_(std::move(other.socket_)) {
    other.fd_ = other.dir_fd_ = -1;
  }
  InstanceLock& operator=(InstanceLock&&) = delete;
  ~InstanceLock();
  /// Says in the lock file ("PID\nstopping\n") that this fadd has begun to
  /// stop: its socket is closed while its compilers end (seconds, or the
  /// kill grace), and a `fad daemon start` meanwhile waits for it to exit
  /// instead of taking a silent lock holder for one that is stuck, or, where
  /// the file was deleted, for a fadd already running. So the file is made
  /// again first (keep_file).
  void note_stopping();
  /// Names in the lock file the socket this fadd listens at (absolute): a
  /// `fad daemon stop` that reaches nothing at the socket it was given, while
  /// this fadd holds the state dir it was given, says at once which socket
  /// to name rather than waiting for an exit nobody asked for. Not written
  /// for a path with a newline (the file is read line by line).
  void note_listening(const std::string& socket);
  /// Makes the lock file again where it was deleted or replaced (a cleaner
  /// of old files, a user tidying the state dir): the directory's lock still
  /// keeps a second fadd out, but `fad daemon start` and `stop` read the pid
  /// and the stopping mark in the file. Whatever is at the path is taken
  /// only when this fadd can lock it, which no other fadd can then hold.
  /// True when made again, false when the file is still this fadd's; an
  /// error says why it could not be (something there that is not a file).
  Result<bool> keep_file();
  const std::string& path() const { return path_; }

 private:
  InstanceLock(std::string path, int fd, int dir_fd) : path_(std::move(path)), fd_(fd), dir_fd_(dir_fd) {}
  void write_text() const;
  std::string path_;
  int fd_ = -1;
  int dir_fd_ = -1;
  bool stopping_ = false;
  std::string socket_;
};

}  // namespace fad
