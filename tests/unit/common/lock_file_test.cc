// Reading fadd's lock file as the client does beside a start or stop: what
// it says of its holder, and everything a user who may write the state dir
// could put there (a FIFO, a link, garbage, a huge file) read without
// blocking or trusting it.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "common/lock_file.h"

namespace fs = std::filesystem;

namespace {
struct Dir {
  fs::path path = fs::temp_directory_path() / ("fad-lock-test-" + std::to_string(::getpid()));
  Dir() { fs::create_directories(path); }
  ~Dir() { fs::remove_all(path); }
  std::string operator/(const char* name) const { return (path / name).string(); }
};
}  // namespace

TEST_CASE("read_lock_text: the holder's pid, and whether it is stopping", "[lock_file]") {
  Dir d;
  const std::string lock = d / "fadd.lock";
  CHECK(fad::read_lock_text(lock).pid == 0);  // none yet
  std::ofstream(lock) << "4242\n";
  CHECK(fad::read_lock_text(lock).pid == 4242);
  CHECK_FALSE(fad::read_lock_text(lock).stopping);
  std::ofstream(lock) << "4242\nstopping\n";
  CHECK(fad::read_lock_text(lock).pid == 4242);
  CHECK(fad::read_lock_text(lock).stopping);
  CHECK(fad::read_lock_text(lock).socket.empty());
  // The socket it listens at, after the stopping mark or without one; a line
  // cut off (being written) is not read.
  std::ofstream(lock) << "4242\nstopping\nsocket /run/fad/fad.sock\n";
  CHECK(fad::read_lock_text(lock).stopping);
  CHECK(fad::read_lock_text(lock).socket == "/run/fad/fad.sock");
  std::ofstream(lock) << "4242\nsocket /tmp/s p a c e.sock\n";
  CHECK_FALSE(fad::read_lock_text(lock).stopping);
  CHECK(fad::read_lock_text(lock).socket == "/tmp/s p a c e.sock");
  std::ofstream(lock) << "4242\nsocket /run/fad/fa";
  CHECK(fad::read_lock_text(lock).socket.empty());
  // Garbage, or a pid too long to be one, names no holder.
  for (const char* text : {"", "garbage\nstopping\n", "12ab\n", "12345678901\n", "-5\n", " 42\n"}) {
    INFO(text);
    std::ofstream(lock) << text;
    CHECK(fad::read_lock_text(lock).pid == 0);
  }
  // A huge file is not read whole: its first bytes are a number too long.
  std::ofstream(lock) << std::string(1 << 20, '7');
  CHECK(fad::read_lock_text(lock).pid == 0);
}

TEST_CASE("read_lock_text and lock_held: a FIFO or a link in the lock's place neither blocks nor counts",
          "[lock_file]") {
  Dir d;
  const std::string fifo = d / "fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  // Opening a FIFO with no writer for reading blocks: both would hang here.
  CHECK(fad::read_lock_text(fifo).pid == 0);
  CHECK_FALSE(fad::lock_held(fifo));
  const std::string to_fifo = d / "to-fifo";
  fs::create_symlink(fifo, to_fifo);
  CHECK_FALSE(fad::lock_held(to_fifo));
  // A link to a real, held lock file is not fadd's lock file either.
  const std::string real = d / "real.lock";
  std::ofstream(real) << "4242\nstopping\n";
  const int fd = ::open(real.c_str(), O_RDWR | O_CLOEXEC);
  REQUIRE(fd >= 0);
  REQUIRE(::flock(fd, LOCK_EX | LOCK_NB) == 0);
  CHECK(fad::lock_held(real));
  const std::string link = d / "fadd.lock";
  fs::create_symlink(real, link);
  CHECK_FALSE(fad::lock_held(link));
  CHECK(fad::read_lock_text(link).pid == 0);
  ::close(fd);
  CHECK_FALSE(fad::lock_held(real));
}

TEST_CASE("lock_held: a state dir's own lock is seen, through a link to it too", "[lock_file]") {
  Dir d;
  const std::string state = d / "state";
  fs::create_directories(state);
  const std::string link = d / "state-link";
  fs::create_symlink(state, link);
  CHECK_FALSE(fad::lock_held(state));
  const int fd = ::open(state.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  REQUIRE(fd >= 0);
  REQUIRE(::flock(fd, LOCK_EX | LOCK_NB) == 0);
  CHECK(fad::lock_held(state));
  CHECK(fad::lock_held(link));
  ::close(fd);
  CHECK_FALSE(fad::lock_held(link));
}
