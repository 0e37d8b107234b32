// sd_notify over a datagram socket; see systemd_notify.h.
#include "daemon/systemd_notify.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>

namespace fad {

SystemdNotifier SystemdNotifier::from_env(const EnvLookup& env) {
  return SystemdNotifier(env("NOTIFY_SOCKET").value_or(""));
}

Status SystemdNotifier::notify(std::string_view state) const {
  if (!active()) return ok_status();
  auto fail = [&](const std::string& why) {
    return make_error("cannot notify systemd at NOTIFY_SOCKET=" + address_ + ": " + why);
  };
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  socklen_t length = 0;
  if (address_[0] == '/') {
    // A path: NUL-terminated inside sun_path.
    if (address_.size() >= sizeof addr.sun_path) return fail("path too long");
    std::memcpy(addr.sun_path, address_.data(), address_.size());
    length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + address_.size() + 1);
  } else if (address_[0] == '@') {
    // Abstract namespace: a leading NUL, then the name; the length counts exactly
    // the name's bytes (no terminator), as systemd binds it.
    if (address_.size() > sizeof addr.sun_path) return fail("name too long");
    std::memcpy(addr.sun_path + 1, address_.data() + 1, address_.size() - 1);
    length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + address_.size());
  } else {
    return fail("not a socket path or an abstract name (expected '/...' or '@...')");
  }
  const int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return fail(std::strerror(errno));
  const ssize_t sent =
      ::sendto(fd, state.data(), state.size(), MSG_NOSIGNAL, reinterpret_cast<sockaddr*>(&addr), length);
  const int err = errno;
  ::close(fd);
  if (sent < 0) return fail(std::strerror(err));
  if (static_cast<std::size_t>(sent) != state.size()) return fail("short send");
  return ok_status();
}

}  // namespace fad
