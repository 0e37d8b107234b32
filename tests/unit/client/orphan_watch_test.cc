// Tests for client/orphan_watch: when a launcher continues a compile that fadd
// froze and then lost, and how it tells that fadd is gone.
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include <catch2/catch.hpp>

#include "client/orphan_watch.h"

using namespace fad::client;
using std::chrono::seconds;

namespace {
const OrphanWatch::Clock::time_point t0{};
const auto gone = [] { return false; };
const auto there = [] { return true; };

/// A Unix socket bound at `path`, listening when asked; closed by the caller.
int bound_socket(const std::string& path, bool listening) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strcpy(addr.sun_path, path.c_str());
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  if (listening) REQUIRE(::listen(fd, 4) == 0);
  return fd;
}
}  // namespace

TEST_CASE("a compile stopped with no fadd for the whole grace is continued, once", "[launcher][orphan]") {
  OrphanWatch w(seconds(30));
  CHECK_FALSE(w.orphaned(true, gone, t0));
  CHECK_FALSE(w.orphaned(true, gone, t0 + seconds(29)));
  CHECK(w.orphaned(true, gone, t0 + seconds(30)));
  // Continued: a later stop waits out a grace of its own.
  CHECK_FALSE(w.orphaned(true, gone, t0 + seconds(32)));
  CHECK(w.orphaned(true, gone, t0 + seconds(62)));
}

TEST_CASE("a fadd seen, or a compile seen running, starts the grace again", "[launcher][orphan]") {
  OrphanWatch w(seconds(30));
  CHECK_FALSE(w.orphaned(true, gone, t0));
  CHECK_FALSE(w.orphaned(true, there, t0 + seconds(20)));  // fadd restarted: it continues its compiles
  CHECK_FALSE(w.orphaned(true, gone, t0 + seconds(31)));
  CHECK_FALSE(w.orphaned(false, gone, t0 + seconds(50)));  // fadd let it run again
  CHECK_FALSE(w.orphaned(true, gone, t0 + seconds(55)));
  CHECK_FALSE(w.orphaned(true, gone, t0 + seconds(84)));
  CHECK(w.orphaned(true, gone, t0 + seconds(85)));
}

TEST_CASE("fadd is asked about only while the compile is stopped", "[launcher][orphan]") {
  OrphanWatch w;
  int asked = 0;
  const auto count = [&] {
    ++asked;
    return true;
  };
  w.orphaned(false, count, t0);
  CHECK(asked == 0);
  w.orphaned(true, count, t0);
  CHECK(asked == 1);
}

TEST_CASE("fadd counts as gone only where nothing listens at its socket", "[launcher][orphan]") {
  char tmpl[] = "/tmp/fad-orphan-XXXXXX";
  REQUIRE(::mkdtemp(tmpl) != nullptr);
  const std::string dir = tmpl;
  CHECK_FALSE(daemon_listening(dir + "/absent.sock"));
  CHECK_FALSE(daemon_listening(dir + "/no-dir/fad.sock"));
  const int listening = bound_socket(dir + "/live.sock", true);
  CHECK(daemon_listening(dir + "/live.sock"));
  const int stale = bound_socket(dir + "/stale.sock", false);  // what a killed fadd leaves
  CHECK_FALSE(daemon_listening(dir + "/stale.sock"));
  ::close(listening);
  ::close(stale);
  for (const char* name : {"/live.sock", "/stale.sock"}) ::unlink((dir + name).c_str());
  ::rmdir(tmpl);
}

TEST_CASE("fadd is there while the fadd that admitted the compile lives, or while one listens at the socket",
          "[launcher][orphan]") {
  char tmpl[] = "/tmp/fad-orphan-XXXXXX";
  REQUIRE(::mkdtemp(tmpl) != nullptr);
  const std::string dir = tmpl;
  const pid_t dead = ::fork();
  if (dead == 0) ::_exit(0);
  REQUIRE(::waitpid(dead, nullptr, 0) == dead);
  // Its socket deleted by a cleaner of old files: the admitting fadd still runs.
  CHECK(fadd_there(::getpid(), dir + "/deleted.sock"));
  CHECK_FALSE(fadd_there(dead, dir + "/deleted.sock"));
  CHECK_FALSE(fadd_there(0, dir + "/deleted.sock"));
  // Restarted: the admitting fadd is gone, a new one listens (and may freeze the compile again).
  const int listening = bound_socket(dir + "/live.sock", true);
  CHECK(fadd_there(dead, dir + "/live.sock"));
  CHECK(fadd_there(0, dir + "/live.sock"));
  ::close(listening);
  ::unlink((dir + "/live.sock").c_str());
  ::rmdir(tmpl);
}
