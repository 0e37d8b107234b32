// The server's per-user shares of fadd's time, over a real socket with a real
// engine behind it: a user deep in debt still has a compile launcher's request
// read and answered at once (a launcher has deadlines), and any other held;
// launcher requests have a share of their own, so a flood of them is held.
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <thread>

#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>

#include "daemon/request_handler.h"
#include "daemon/server.h"
#include "fakes.h"

using namespace fad;
using namespace fad::test;

namespace {

/// In a child running as `who`: connects to `socket`, sends `line`, and
/// exits 0 when an answer arrives within `within_ms`, 1 when none does, 5
/// when the answer is that the message was too long.
int answered_as(const passwd& who, const std::string& socket, const std::string& line, int within_ms) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (::setgroups(0, nullptr) != 0 || ::setgid(who.pw_gid) != 0 || ::setuid(who.pw_uid) != 0) ::_exit(2);
    const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, socket.c_str(), sizeof addr.sun_path - 1);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) ::_exit(3);
    if (::write(fd, line.data(), line.size()) != static_cast<ssize_t>(line.size())) ::_exit(4);
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, within_ms) != 1) ::_exit(1);
    char answer[4096] = {};
    [[maybe_unused]] auto n = ::read(fd, answer, sizeof answer - 1);
    ::_exit(std::strstr(answer, "too long") ? 5 : 0);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/// A real server over a real engine, serving on its own thread once started.
struct ServedEngine {
  EngineFixture f;
  boost::asio::io_context io;
  std::unique_ptr<RequestHandler> handler;
  std::unique_ptr<Server> server;
  std::string socket;
  std::thread loop;

  ServedEngine() {
    f.make_engine().recover();
    handler = std::make_unique<RequestHandler>(*f.engine, [] {});
    ServerOptions options;
    options.socket_mode = 0666;
    server = std::make_unique<Server>(io, *handler, options);
    fs::permissions(f.tmp.path(), fs::perms::owner_all | fs::perms::others_exec, fs::perm_options::replace);
    socket = f.tmp / "run/fad.sock";
    REQUIRE(server->listen(socket));
  }
  void serve() {
    loop = std::thread([this] { io.run(); });
  }
  ~ServedEngine() {
    io.stop();
    if (loop.joinable()) loop.join();
  }
};

const passwd* nobody_or_skip() {
  const passwd* nobody = ::getpwnam("nobody");
  if (::geteuid() != 0 || !nobody) {
    WARN("SKIP: needs root and a 'nobody' user to connect as another user; the share test did not run");
    return nullptr;
  }
  return nobody;
}

}  // namespace

TEST_CASE("a user deep in debt has a launcher's request answered at once, and any other held", "[server]") {
  const passwd* who = nobody_or_skip();
  if (!who) return;
  ServedEngine s;
  // 100 s of fadd's time: at a quarter share, 400 s before their turn.
  s.server->charge(who->pw_uid, std::chrono::seconds(100));
  s.serve();
  CHECK(answered_as(*who, s.socket,
                    R"({"v":1,"type":"launch_poll","body":{"unit_id":999999}})"
                    "\n",
                    5000) == 0);  // answered at once
  CHECK(answered_as(*who, s.socket,
                    R"({"v":1,"type":"status","body":{}})"
                    "\n",
                    1500) == 1);  // held for the user's turn
}

TEST_CASE("a request longer than a launcher's from a user in debt is read whole in its turn", "[server]") {
  const passwd* who = nobody_or_skip();
  if (!who) return;
  ServedEngine s;
  s.server->charge(who->pw_uid, std::chrono::milliseconds(1500));  // their turn in 2 s
  s.serve();
  const std::string padded = R"({"v":1,"type":"status","body":{},"pad":")" + std::string(100 * 1024, 'x') + "\"}\n";
  CHECK(answered_as(*who, s.socket, padded, 20000) == 0);  // answered, and not as "too long"
}

TEST_CASE("a user's flood of launcher requests is held to a share of its own, and their other requests are not",
          "[server]") {
  const passwd* who = nobody_or_skip();
  if (!who) return;
  ServedEngine s;
  s.server->charge(who->pw_uid, std::chrono::seconds(100), Server::Share::launcher);
  s.serve();
  CHECK(answered_as(*who, s.socket,
                    R"({"v":1,"type":"launch_poll","body":{"unit_id":999999}})"
                    "\n",
                    1500) == 1);  // held for the launchers' turn
  CHECK(answered_as(*who, s.socket,
                    R"({"v":1,"type":"status","body":{}})"
                    "\n",
                    5000) == 0);  // answered at once
}
