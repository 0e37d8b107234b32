// call_daemon over a real Unix socket served by a thread: framing, and which
// failures count as "unreachable" (exit 3) versus a garbled answer (exit 1).
#include <catch2/catch.hpp>

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <thread>

#include "client/connection.h"
#include "client/exit_codes.h"

using namespace fad::client;

namespace {

// Serves one connection: reads the request line into `seen`, then writes `reply`.
class OneShotServer {
 public:
  OneShotServer(std::string path, std::string reply) : path_(std::move(path)) {
    std::filesystem::remove(path_);
    fd_ = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path_.c_str(), sizeof addr.sun_path - 1);
    REQUIRE(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    REQUIRE(::listen(fd_, 1) == 0);
    thread_ = std::thread([this, reply = std::move(reply)] {
      int c = ::accept(fd_, nullptr, nullptr);
      char buf[4096];
      while (seen_.find('\n') == std::string::npos) {
        ssize_t n = ::read(c, buf, sizeof buf);
        if (n <= 0) break;
        seen_.append(buf, static_cast<std::size_t>(n));
      }
      if (!reply.empty()) [[maybe_unused]]
        auto n = ::write(c, reply.data(), reply.size());
      ::close(c);
    });
  }
  ~OneShotServer() {
    if (thread_.joinable()) thread_.join();
    ::close(fd_);
    std::filesystem::remove(path_);
  }
  /// The request line as received; waits for the connection to be served.
  const std::string& seen() {
    if (thread_.joinable()) thread_.join();
    return seen_;
  }

 private:
  std::string path_;
  int fd_ = -1;
  std::string seen_;
  std::thread thread_;
};

// In a directory of the test's own: fad refuses sockets in a directory others can write.
std::string socket_path() {
  const auto dir = std::filesystem::temp_directory_path() / ("fad-conn-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::filesystem::permissions(dir, std::filesystem::perms::owner_all);
  return (dir / "fad.sock").string();
}

}  // namespace

TEST_CASE("nothing listening: exit 3 with how to start fadd") {
  auto reply = call_daemon("/nonexistent/dir/fad.sock", fad::Request{"status", {}});
  auto* failure = std::get_if<CallFailure>(&reply);
  REQUIRE(failure);
  CHECK(failure->exit_code == kExitUnreachable);
  CHECK(failure->message ==
        "cannot reach fadd at /nonexistent/dir/fad.sock: No such file or directory. Start it with 'fad daemon "
        "start' (or 'systemctl --user start fadd').");
  auto too_long = call_daemon("/" + std::string(200, 'x'), fad::Request{"status", {}});
  CHECK(std::get<CallFailure>(too_long).exit_code == kExitUnreachable);
}

TEST_CASE("one request line out, one response line back") {
  OneShotServer server(socket_path(), "{\"v\":1,\"ok\":true,\"result\":{\"id\":7}}\n");
  auto reply = call_daemon(socket_path(), fad::Request{"submit", {{"archs", {"9.0"}}}});
  auto* response = std::get_if<fad::Response>(&reply);
  REQUIRE(response);
  CHECK(response->ok);
  CHECK(response->result["id"] == 7);
  auto request = fad::parse_request(server.seen().substr(0, server.seen().size() - 1));
  REQUIRE(request.ok());
  CHECK(request->type == "submit");
}

TEST_CASE("a daemon that hangs up without answering is unreachable, garbage is a failure") {
  {
    OneShotServer server(socket_path(), "");
    auto reply = call_daemon(socket_path(), fad::Request{"status", {}});
    CHECK(std::get<CallFailure>(reply).exit_code == kExitUnreachable);
  }
  {
    OneShotServer server(socket_path(), "not json\n");
    auto reply = call_daemon(socket_path(), fad::Request{"status", {}});
    CHECK(std::get<CallFailure>(reply).exit_code == kExitFailed);
  }
}

TEST_CASE("call_daemon refuses a socket in a directory others can write, without connecting", "[connection]") {
  const auto dir = std::filesystem::temp_directory_path() / ("fad-conn-open-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::filesystem::permissions(dir, std::filesystem::perms::all);  // 0777, like a squatted /tmp
  const auto path = (dir / "fad.sock").string();
  {
    OneShotServer server(path, "{\"v\":1,\"ok\":true,\"result\":{}}\n");
    auto reply = call_daemon(path, fad::Request{"status", {}}, std::chrono::milliseconds(500));
    auto* failure = std::get_if<CallFailure>(&reply);
    REQUIRE(failure);
    CHECK(failure->exit_code == kExitUnreachable);
    CHECK(failure->message.find("writable by others") != std::string::npos);
    // Unblock the server's accept: it must not have been talked to.
    std::filesystem::permissions(dir, std::filesystem::perms::owner_all);
    auto served = call_daemon(path, fad::Request{"status", {}});
    CHECK(std::holds_alternative<fad::Response>(served));
  }
  std::filesystem::remove_all(dir);
}
