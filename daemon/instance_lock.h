// One fadd per state directory: an exclusive flock on STATE/fadd.lock, held for
// the daemon's life and released by the kernel even on kill -9.
#pragma once

#include <string>

#include "common/result.h"

namespace fad {

class InstanceLock {
 public:
  /// Takes the lock or fails naming the pid that holds it.
  static Result<InstanceLock> acquire(const std::string& state_dir);
  InstanceLock(InstanceLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  InstanceLock& operator=(InstanceLock&&) = delete;
  ~InstanceLock();

 private:
  explicit InstanceLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

}  // namespace fad
