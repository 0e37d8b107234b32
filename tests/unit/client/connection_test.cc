// call_daemon over a real Unix socket served by a thread: framing, and which
// failures count as "unreachable" (exit 3) versus a garbled answer (exit 1).
#include <catch2/catch.hpp>

#include <grp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/un.h>
#include <unistd.h>

#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>

#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "client/connection.h"
#include "client/locations.h"
#include "client/exit_codes.h"
#include "tests/temp_dir.h"

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

// In a directory of the test's own (fad refuses sockets in a directory others
// can write), made once per test process and removed when it exits.
std::string socket_path() {
  static const fad::test::TempDir dir{"fad-conn-test"};
  return dir / "fad.sock";
}

}  // namespace

TEST_CASE("nothing listening: exit 3 with how to start fadd") {
  auto reply = call_daemon("/nonexistent/dir/fad.sock", fad::Request{"status", {}});
  auto* failure = std::get_if<CallFailure>(&reply);
  REQUIRE(failure);
  CHECK(failure->exit_code == kExitUnreachable);
  // Not the socket a plain start uses: the advice names it.
  CHECK(failure->message ==
        "cannot reach fadd at /nonexistent/dir/fad.sock: No such file or directory. Start it with 'fad daemon "
        "start --socket /nonexistent/dir/fad.sock'.");
  const auto plain = fad::client::resolve_locations(fad::client::Command{}, fad::process_env(), ::getuid());
  REQUIRE(plain);
  CHECK(unreachable_message(plain->socket, "Connection refused") ==
        "cannot reach fadd at " + plain->socket +
            ": Connection refused. Start it with 'fad daemon start' (or 'systemctl --user start fadd').");
  CHECK(failure->cause == "cannot reach fadd at /nonexistent/dir/fad.sock: No such file or directory");
  // With $FAD_SOCKET naming another socket, the user service (which does not
  // see it) is no way to start that fadd; naming the service's own, it is.
  const char* before = std::getenv("FAD_SOCKET");
  const std::optional<std::string> saved = before ? std::optional<std::string>(before) : std::nullopt;
  const std::string mine = "/nonexistent/mine/fad.sock";
  ::setenv("FAD_SOCKET", mine.c_str(), 1);
  CHECK(unreachable_message(mine, "Connection refused") ==
        "cannot reach fadd at " + mine + ": Connection refused. Start it with 'fad daemon start'.");
  ::setenv("FAD_SOCKET", plain->socket.c_str(), 1);
  CHECK(unreachable_message(plain->socket, "Connection refused").find("systemctl --user start fadd") !=
        std::string::npos);
  if (saved)
    ::setenv("FAD_SOCKET", saved->c_str(), 1);
  else
    ::unsetenv("FAD_SOCKET");
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

TEST_CASE("an error message is one printable line, whatever it quotes") {
  // fadd quotes what clients sent (a --nvcc path): a line break or an escape
  // sequence in it must not split the message or act on the terminal.
  OneShotServer server(socket_path(),
                       "{\"v\":1,\"ok\":false,\"error\":{\"code\":\"usage\",\"message\":"
                       "\"compiler '/tmp/x\\ny\\u001b[31m' is not an executable file\"}}\n");
  auto reply = call_daemon(socket_path(), fad::Request{"submit", {{"archs", {"9.0"}}}});
  auto* response = std::get_if<fad::Response>(&reply);
  REQUIRE(response);
  CHECK_FALSE(response->ok);
  CHECK(response->message == "compiler '/tmp/x?y?[31m' is not an executable file");
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

volatile std::sig_atomic_t g_signalled = 0;
void on_usr1(int) { g_signalled = 1; }

/// Whether thread `tid` of this process is blocked in poll() now.
bool in_poll(pid_t tid) {
  std::ifstream in("/proc/self/task/" + std::to_string(tid) + "/syscall");
  long nr = -1;
  in >> nr;
  return nr == SYS_poll || nr == SYS_ppoll;
}

TEST_CASE("a signal while fadd keeps silent ends the wait only when the caller says stop, never past the timeout") {
  // A socket whose server takes the connection and keeps silent (a stopped
  // fadd) for 4 s, then hangs up.
  const std::string path = socket_path();
  std::filesystem::remove(path);
  int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  REQUIRE(::listen(fd, 4) == 0);
  std::thread server([fd] {
    const int c = ::accept(fd, nullptr, nullptr);
    std::this_thread::sleep_for(std::chrono::seconds(4));
    ::close(c);
  });
  struct sigaction sa {};
  sa.sa_handler = on_usr1;  // no SA_RESTART: poll() sees EINTR
  REQUIRE(::sigaction(SIGUSR1, &sa, nullptr) == 0);
  g_signalled = 0;
  // One signal, once the call waits in poll() for the answer.
  const pthread_t caller = ::pthread_self();
  const pid_t tid = ::gettid();
  std::thread signaller([&] {
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!in_poll(tid) && std::chrono::steady_clock::now() < give_up)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    ::pthread_kill(caller, SIGUSR1);
  });
  const auto started = std::chrono::steady_clock::now();
  CallResult reply;
  SECTION("a follower told to stop returns at once") {
    reply = call_daemon(path, fad::Request{"status", {}}, std::chrono::seconds(30), nullptr,
                        [] { return g_signalled != 0; });
    REQUIRE(std::holds_alternative<CallFailure>(reply));
    CHECK_THAT(std::get<CallFailure>(reply).message, Catch::Contains("interrupted"));
    CHECK_FALSE(std::get<CallFailure>(reply).retryable);
    CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(3));
  }
  SECTION("otherwise it waits on, for the timeout and no longer") {
    reply = call_daemon(path, fad::Request{"status", {}}, std::chrono::seconds(1));
    REQUIRE(std::holds_alternative<CallFailure>(reply));
    CHECK_THAT(std::get<CallFailure>(reply).message, Catch::Contains("did not answer within 1 s"));
    CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(3));
  }
  signaller.join();
  server.join();
  CHECK(g_signalled == 1);
  ::signal(SIGUSR1, SIG_DFL);
  ::close(fd);
  std::filesystem::remove(path);
}

TEST_CASE("a connection fadd refuses as busy is unreachable for now: exit 3, worth retrying, fadd's reason kept") {
  const std::string why = "fadd refuses the connection: too many connections from your user (256 open, limit 256)";
  OneShotServer server(socket_path(), fad::encode_error(fad::ErrorCode::busy, why));
  auto reply = call_daemon(socket_path(), fad::Request{"status", {}});
  auto* failure = std::get_if<CallFailure>(&reply);
  REQUIRE(failure);
  CHECK(failure->exit_code == kExitUnreachable);
  CHECK(failure->retryable);
  CHECK(failure->message == why);
}

TEST_CASE("call_daemon refuses a socket in a directory others can write, without connecting", "[connection]") {
  const fad::test::TempDir tmp{"fad-conn-open"};
  const auto& dir = tmp.path();
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
}

namespace {
// The failure another user sees connecting to `path`: as root, from a child
// that dropped to nobody; otherwise as ourselves (a socket without write
// permission refuses its own owner too).
CallFailure failure_as_other_user(const std::string& path) {
  if (::geteuid() != 0) return std::get<CallFailure>(call_daemon(path, fad::Request{"status", {}}));
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    if (::setgroups(0, nullptr) != 0 || ::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(2);
    auto reply = call_daemon(path, fad::Request{"status", {}});
    const auto* failure = std::get_if<CallFailure>(&reply);
    const std::string text = failure ? std::to_string(failure->retryable) + failure->message : "answered";
    [[maybe_unused]] auto n = ::write(fds[1], text.data(), text.size());
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string text;
  char buf[1024];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) text.append(buf, static_cast<std::size_t>(n));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  REQUIRE(text.size() > 1);
  return CallFailure{kExitUnreachable, text.substr(1), text[0] == '1'};
}
}  // namespace

TEST_CASE("permission denied on the socket is reported as such, never as 'start it', and is not retried") {
  if (::geteuid() == 0) {
    if (const auto closed = fad::test::closed_to_others(std::filesystem::temp_directory_path()); !closed.empty()) {
      WARN("SKIP: other users cannot enter " << closed
                                             << " (on the way to TMPDIR), so nobody could not reach the "
                                                "test's socket; not run");
      return;
    }
  }
  const fad::test::TempDir tmp{"fad-perm-test"};  // others may enter it, as they may a user's runtime dir
  const auto& dir = tmp.path();
  const std::string path = (dir / "fad.sock").string();
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  REQUIRE(::listen(fd, 1) == 0);

  // Group-accessible: the way in is the group.
  ::chmod(path.c_str(), ::geteuid() == 0 ? 0660 : 0060);
  CallFailure by_group = failure_as_other_user(path);
  CHECK_FALSE(by_group.retryable);
  CHECK(by_group.message.rfind("permission denied on " + path, 0) == 0);
  const struct group* gr = ::getgrgid(::getegid());
  REQUIRE(gr);
  CHECK(by_group.message.find("ask the admin to add you to group " + std::string(gr->gr_name)) != std::string::npos);
  CHECK(by_group.message.find("Start it with") == std::string::npos);

  // Private to its owner: say whose it is and what to ask for.
  ::chmod(path.c_str(), ::geteuid() == 0 ? 0600 : 0000);
  CallFailure owner = failure_as_other_user(path);
  CHECK_FALSE(owner.retryable);
  CHECK(owner.message.find("this fadd serves") != std::string::npos);
  CHECK(owner.message.find("socket_group") != std::string::npos);
  ::close(fd);
}

TEST_CASE("FAD_TIMEOUT: seconds, checked") {
  CHECK(*request_timeout(std::nullopt) == std::chrono::seconds(60));
  CHECK(*request_timeout(std::string("5")) == std::chrono::seconds(5));
  for (const char* bad : {"0", "-1", "1.5", "5s", "", "99999999"}) {
    INFO(bad);
    auto r = request_timeout(std::string(bad));
    REQUIRE_FALSE(r.ok());
    CHECK(r.error() == "FAD_TIMEOUT must be a whole number of seconds from 1 to 86400, got '" + std::string(bad) + "'");
  }
}
