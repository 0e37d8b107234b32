// read_regular_file and read_file_slice: what they read, and everything they
// refuse without blocking or exhausting memory (FIFOs, devices, directories,
// files over the cap).
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "common/file_read.h"

namespace fs = std::filesystem;
using Catch::Contains;

namespace {
struct Dir {
  fs::path path = fs::temp_directory_path() / ("fad-read-test-" + std::to_string(::getpid()));
  Dir() { fs::create_directories(path); }
  ~Dir() { fs::remove_all(path); }
  std::string operator/(const char* name) const { return (path / name).string(); }
};
}  // namespace

TEST_CASE("read_regular_file reads a regular file and a /proc file", "[file_read]") {
  Dir d;
  std::ofstream(d / "a.txt") << "hello\n";
  auto text = fad::read_regular_file(d / "a.txt");
  REQUIRE(text);
  CHECK(*text == "hello\n");
  // /proc files report size 0 and are still read to their end.
  auto meminfo = fad::read_regular_file("/proc/self/status");
  REQUIRE(meminfo);
  CHECK_THAT(*meminfo, Contains("Pid:"));
  CHECK(fad::read_small_file(d / "missing") == "");
}

TEST_CASE("read_regular_file refuses a FIFO at once instead of blocking", "[file_read]") {
  Dir d;
  REQUIRE(::mkfifo((d / "fifo").c_str(), 0600) == 0);
  const auto start = std::chrono::steady_clock::now();
  auto text = fad::read_regular_file(d / "fifo", fad::kSmallFileCap, "kernel source");
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(1));
  REQUIRE_FALSE(text);
  CHECK(text.error() == "cannot read kernel source " + (d / "fifo") + ": it is a FIFO");
  CHECK_FALSE(fad::read_file_slice(d / "fifo", 0, 100));
}

TEST_CASE("read_regular_file refuses devices and directories, never reading them", "[file_read]") {
  auto zero = fad::read_regular_file("/dev/zero");
  REQUIRE_FALSE(zero);
  CHECK_THAT(zero.error(), Contains("a character device"));
  auto dir = fad::read_regular_file("/");
  REQUIRE_FALSE(dir);
  CHECK_THAT(dir.error(), Contains("a directory"));
}

TEST_CASE("read_regular_file refuses a file over its cap, and a slice reads part of it", "[file_read]") {
  Dir d;
  std::ofstream(d / "big") << std::string(5000, 'x') << "END";
  auto big = fad::read_regular_file(d / "big", 4096);
  REQUIRE_FALSE(big);
  CHECK_THAT(big.error(), Contains("more than the 4096 bytes"));
  std::uint64_t size = 0;
  auto tail = fad::read_file_slice(d / "big", 5000, 100, &size);
  REQUIRE(tail);
  CHECK(*tail == "END");
  CHECK(size == 5003);
  auto head = fad::read_file_slice(d / "big", 0, 10);
  REQUIRE(head);
  CHECK(*head == std::string(10, 'x'));
  auto past = fad::read_file_slice(d / "big", 9000, 10);
  REQUIRE(past);
  CHECK(past->empty());
}

TEST_CASE("read_descriptor reads a pipe to its end, and refuses one past its cap", "[file_read]") {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  REQUIRE(::write(fds[1], "12345", 5) == 5);
  ::close(fds[1]);
  auto text = fad::read_descriptor(fds[0], 5, "standard input");
  ::close(fds[0]);
  REQUIRE(text);
  CHECK(*text == "12345");

  REQUIRE(::pipe(fds) == 0);
  REQUIRE(::write(fds[1], "123456", 6) == 6);
  ::close(fds[1]);
  auto over = fad::read_descriptor(fds[0], 5, "standard input");
  ::close(fds[0]);
  REQUIRE_FALSE(over);
  CHECK(over.error() == "cannot read standard input: it holds more than the 5 bytes fad reads");
}
