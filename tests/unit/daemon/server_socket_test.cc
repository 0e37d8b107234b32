// The socket file under a long-running fadd: deleted (a cleaner of old files
// in /tmp), fadd listens there again; replaced by something else, fadd leaves
// it alone, also when it stops.
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <fstream>

#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>

#include "daemon/request_handler.h"
#include "daemon/server.h"
#include "fakes.h"

using namespace fad;
using namespace fad::test;

namespace {

/// Whether a client's connect() reaches a listening socket at `path` (the
/// kernel completes it from the backlog, with no accept needed).
bool connects(const std::string& path) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
  const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  ::close(fd);
  return ok;
}

struct Listening {
  EngineFixture f;
  boost::asio::io_context io;
  RequestHandler handler{f.make_engine(), [] {}};
  Server server{io, handler};
  std::string socket = f.tmp / "run/fad.sock";
  Listening() { REQUIRE(server.listen(socket)); }
};

}  // namespace

TEST_CASE("server: a socket file deleted while fadd runs is made again, and reached", "[server]") {
  Listening l;
  REQUIRE(connects(l.socket));
  l.server.keep_socket();  // still there: nothing to do
  REQUIRE(connects(l.socket));
  fs::remove(l.socket);
  CHECK_FALSE(connects(l.socket));
  l.server.keep_socket();
  CHECK(connects(l.socket));
  // Its directory too.
  fs::remove_all(fs::path(l.socket).parent_path());
  l.server.keep_socket();
  CHECK(connects(l.socket));
  l.server.close();
  CHECK_FALSE(fs::exists(l.socket));
  l.server.keep_socket();  // stopping: not made again
  CHECK_FALSE(fs::exists(l.socket));
}

TEST_CASE("server: a socket that cannot be made again is tried every time and said once, then made", "[server]") {
  Listening l;
  LogCapture log;
  const fs::path dir = fs::path(l.socket).parent_path();
  fs::remove_all(dir);
  std::ofstream(dir.string()) << "a file where the socket's directory was\n";
  for (int i = 0; i < 3; ++i) l.server.keep_socket();
  CHECK(log.count("was deleted while fadd ran") == 1);
  CHECK(log.count("cannot listen again on " + l.socket) == 1);
  CHECK_FALSE(connects(l.socket));
  fs::remove(dir);
  l.server.keep_socket();
  CHECK(connects(l.socket));
  CHECK(log.count("listening on " + l.socket + " again") == 1);
}

TEST_CASE("server: something put in the socket's place is left alone, also at the stop", "[server]") {
  Listening l;
  fs::remove(l.socket);
  std::ofstream(l.socket) << "someone's file\n";
  l.server.keep_socket();
  l.server.keep_socket();
  REQUIRE(fs::is_regular_file(l.socket));
  l.server.close();
  REQUIRE(fs::exists(l.socket));
  std::string text;
  std::getline(std::ifstream(l.socket), text);
  CHECK(text == "someone's file");
}
