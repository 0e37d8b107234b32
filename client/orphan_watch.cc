// The launcher's watch over a compile fadd froze and then lost; see orphan_watch.h.
#include "client/orphan_watch.h"

#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "common/process_exists.h"

namespace fad::client {

bool OrphanWatch::orphaned(bool stopped, const std::function<bool()>& fadd_there, Clock::time_point now) {
  if (!stopped || fadd_there()) {
    alone_since_.reset();
    return false;
  }
  if (!alone_since_) alone_since_ = now;
  if (now - *alone_since_ < grace_) return false;
  alone_since_.reset();  // continued now: a later stop is counted afresh
  return true;
}

bool daemon_listening(const std::string& socket_path) {
  sockaddr_un addr{};
  if (socket_path.size() >= sizeof addr.sun_path) return true;  // cannot tell: leave it to fadd
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return true;
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, socket_path.c_str(), socket_path.size() + 1);
  const bool refused = ::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0 &&
                       (errno == ECONNREFUSED || errno == ENOENT || errno == ENOTDIR);
  ::close(fd);
  return !refused;
}

bool fadd_there(pid_t fadd_pid, const std::string& socket_path) {
  if (process_exists(fadd_pid)) return true;
  return daemon_listening(socket_path);
}

}  // namespace fad::client
