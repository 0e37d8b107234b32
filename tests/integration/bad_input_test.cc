// Bad input gets one clear line and the documented exit code; a client sending
// garbage never takes the daemon down.
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "harness.h"

using namespace fad::test;

namespace {
/// Sends raw bytes on a fresh connection (optionally half-closing) and returns what comes back.
std::string raw_exchange(const std::string& socket_path, const std::string& bytes, bool shutdown_write) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", socket_path.c_str());
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  std::size_t sent = 0;
  while (sent < bytes.size()) {
    auto n = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;  // the daemon may close early on an oversized message
    sent += static_cast<std::size_t>(n);
  }
  if (shutdown_write) ::shutdown(fd, SHUT_WR);
  std::string out;
  char buf[4096];
  while (out.find('\n') == std::string::npos) {
    auto n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return out;
}

json error_of(const std::string& line) {
  auto j = json::parse(line);
  REQUIRE(j.at("ok") == false);
  return j.at("error");
}
}  // namespace

TEST_CASE("malformed, truncated and oversized socket messages get errors, fadd keeps serving", "[integration]") {
  Daemon d;
  d.write_kernels({{"fwd_x", ""}});
  d.start();
  const auto sock = d.socket();

  auto e = error_of(raw_exchange(sock, "this is not json\n", false));
  CHECK(e.at("code") == "usage");
  CHECK(e.at("message").get<std::string>().find("malformed JSON") != std::string::npos);

  e = error_of(raw_exchange(sock, "{\"v\":99,\"type\":\"status\"}\n", false));
  CHECK(e.at("message").get<std::string>().find("unsupported protocol version 99") != std::string::npos);

  e = error_of(raw_exchange(sock, "{\"v\":1,\"type\":\"launch_missiles\"}\n", false));
  CHECK(e.at("message").get<std::string>().find("unknown request type") != std::string::npos);

  e = error_of(raw_exchange(sock, "{\"v\":1,\"type\":\"cancel\",\"body\":{\"id\":\"seven\"}}\n", false));
  CHECK(e.at("message").get<std::string>().find("\"id\"") != std::string::npos);

  e = error_of(raw_exchange(sock, "{\"v\":1,\"type\":\"stat", true));  // truncated, then EOF
  CHECK(e.at("message").get<std::string>().find("truncated") != std::string::npos);

  e = error_of(raw_exchange(sock, std::string(3u << 20, 'x'), false));  // 3 MiB, no newline
  CHECK(e.at("message").get<std::string>().find("too long") != std::string::npos);

  // Connections that just vanish.
  for (int i = 0; i < 20; ++i) {
    int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", sock.c_str());
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) (void)::send(fd, "{\"v\":1,", 7, 0);
    ::close(fd);
  }

  // Still alive and still building.
  const auto id = d.submit({"--arch", "9.0"});
  CHECK(d.wait_final(id).at("state") == "succeeded");
}

TEST_CASE("client usage errors exit 2 with one line", "[integration]") {
  Daemon d;
  d.write_kernels({{"fwd_x", ""}});
  d.start();
  auto r = d.fad({"submit", "--frobnicate"});
  CHECK(r.exit_code == 2);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);

  r = d.fad({"submit", "--arch", "banana"});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("banana") != std::string::npos);

  // Syntactically fine but not buildable by this nvcc: rejected before anything is queued.
  r = d.fad({"submit", "--arch", "9.5"});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("can build: 7.5, 8.0") != std::string::npos);
  CHECK(d.status_all().at("builds").empty());

  r = d.fad({"submit", "--arch", "9.0", "--kernels", "nomatch*"});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("no kernel unit matches") != std::string::npos);

  // A budget written without its unit is bytes: refused, not a build run one compile at a time.
  r = d.fad({"run", "--budget", "12", "--", "true"});
  CHECK(r.exit_code == 2);
  CHECK(r.err ==
        "fad: --budget: 12 bytes is less than 1M, the smallest budget: give a unit, such as \"12G\" (see 'fad "
        "run --help')\n");

  r = d.fad({"status", "12345"});
  CHECK(r.exit_code == 1);
  r = d.fad({"cancel", "0"});
  CHECK(r.exit_code == 2);
}

TEST_CASE("fadd says at start that its kernels dir has no manifest, and builds it once it has", "[integration]") {
  Daemon d;  // no kernels written yet
  d.start();
  CHECK_THAT(d.daemon_log(), Catch::Contains("fad submit of the bundled kernels will fail: "));
  CHECK_THAT(d.daemon_log(), Catch::Contains(d.kernels_dir() + "/manifest.json"));
  auto r = d.fad({"submit", "--arch", "9.0"});
  CHECK(r.exit_code != 0);
  CHECK_THAT(r.err, Catch::Contains("kernels_dir in the config, or fadd --kernels-dir, names the directory"));
  // Read at each submit: no restart needed once it is there.
  d.write_kernels({{"fwd_x", ""}});
  r = d.fad({"submit", "--arch", "9.0"});
  CHECK(r.exit_code == 0);
}

TEST_CASE("fadd rejects bad flags, sizes and config with exit 2", "[integration]") {
  Daemon d;
  std::string log;
  CHECK(d.start_expect_exit({"--bogus"}, &log) == 2);
  CHECK(log.find("--bogus") != std::string::npos);

  CHECK(d.start_expect_exit({"--memory-budget", "4X"}, &log) == 2);
  CHECK(log.find("4X") != std::string::npos);
  CHECK(d.start_expect_exit({"--memory-budget", "512"}, &log) == 2);
  CHECK(log.find("512 bytes is less than 1M") != std::string::npos);

  CHECK(d.start_expect_exit({"--reserve", "150%"}, &log) == 2);
  // A reserve of more memory than any machine has: every build would wait forever.
  CHECK(d.start_expect_exit({"--reserve", "100T"}, &log) == 2);
  CHECK(log.find("fad could start nothing") != std::string::npos);

  const auto cfg = (d.dir() / "bad.json").string();
  std::ofstream(cfg) << "{\n  \"memory_budget\": \"8G\",\n  \"colour\": \"blue\"\n}\n";
  CHECK(d.start_expect_exit({"--config", cfg}, &log) == 2);
  CHECK(log.find(cfg + ":3") != std::string::npos);
  CHECK(log.find("colour") != std::string::npos);
}

TEST_CASE("the client says how to start fadd when it is not running", "[integration]") {
  TempDir tmp;
  auto r = run({FAD_FAD_BIN, "status", "--socket", (tmp.path() / "nope.sock").string()});
  CHECK(r.exit_code == 3);
  CHECK(r.err.find("fad daemon start") != std::string::npos);
}
