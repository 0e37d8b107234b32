// sd_notify against a real datagram socket, bound the way systemd binds its
// notify socket: at a path, and in the abstract namespace.
#include <catch2/catch.hpp>

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstddef>
#include <cstring>
#include <random>

#include "daemon/systemd_notify.h"
#include "fakes.h"

namespace fad {
namespace {

/// A bound AF_UNIX datagram socket, as systemd's; reads one datagram.
class Listener {
 public:
  /// `name` starting with '@' binds in the abstract namespace.
  explicit Listener(const std::string& name) {
    fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    REQUIRE(fd_ >= 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    socklen_t len = 0;
    if (name[0] == '@') {
      std::memcpy(addr.sun_path + 1, name.data() + 1, name.size() - 1);
      len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + name.size());
    } else {
      std::strncpy(addr.sun_path, name.c_str(), sizeof addr.sun_path - 1);
      len = sizeof addr;
    }
    REQUIRE(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), len) == 0);
  }
  ~Listener() { ::close(fd_); }
  /// The next datagram, or "(none)" after a second.
  std::string receive() {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, 1000) != 1) return "(none)";
    char buf[4096];
    const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    return n < 0 ? "(error)" : std::string(buf, static_cast<std::size_t>(n));
  }

 private:
  int fd_ = -1;
};

std::string unique_name() {
  std::random_device rd;
  return "fad-notify-test-" + std::to_string(::getpid()) + "-" + std::to_string(rd());
}

}  // namespace

TEST_CASE("sd_notify: READY=1 reaches a socket bound at a path", "[notify]") {
  test::TempDir tmp("fad-notify");
  const std::string path = tmp / "notify";
  Listener systemd(path);
  auto notifier = SystemdNotifier::from_env([&](std::string_view name) -> std::optional<std::string> {
    if (name == "NOTIFY_SOCKET") return path;
    return std::nullopt;
  });
  REQUIRE(notifier.active());
  REQUIRE(notifier.notify("READY=1\nSTATUS=listening").ok());
  CHECK(systemd.receive() == "READY=1\nSTATUS=listening");
  REQUIRE(notifier.notify("STOPPING=1").ok());
  CHECK(systemd.receive() == "STOPPING=1");
}

TEST_CASE("sd_notify: an abstract-namespace address ('@name')", "[notify]") {
  const std::string name = "@" + unique_name();
  Listener systemd(name);
  SystemdNotifier notifier(name);
  REQUIRE(notifier.notify("READY=1").ok());
  CHECK(systemd.receive() == "READY=1");
  // The name is exact: a longer or shorter one is another socket.
  Listener other(name + "x");
  REQUIRE(SystemdNotifier(name + "x").notify("READY=2").ok());
  CHECK(other.receive() == "READY=2");
  CHECK(systemd.receive() == "(none)");
}

TEST_CASE("sd_notify: outside systemd it does nothing, and bad addresses are errors, not crashes", "[notify]") {
  auto none = SystemdNotifier::from_env([](std::string_view) -> std::optional<std::string> { return std::nullopt; });
  CHECK_FALSE(none.active());
  CHECK(none.notify("READY=1").ok());

  auto relative = SystemdNotifier("run/notify").notify("READY=1");
  REQUIRE_FALSE(relative.ok());
  CHECK(relative.error().find("NOTIFY_SOCKET=run/notify") != std::string::npos);
  CHECK_FALSE(SystemdNotifier("/" + std::string(200, 'x')).notify("READY=1").ok());
  test::TempDir tmp("fad-notify");
  auto nobody = SystemdNotifier(tmp / "nobody-listens").notify("READY=1");
  REQUIRE_FALSE(nobody.ok());
  CHECK(nobody.error().find("nobody-listens") != std::string::npos);
}

}  // namespace fad
