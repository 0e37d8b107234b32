// write_file_atomically: replaces the named file whole, never writes through
// something planted beside it or at it, never replaces what is not a regular
// file, and says why it could not.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/file_write.h"

namespace fs = std::filesystem;
using Catch::Contains;

namespace {
struct Dir {
  fs::path path = fs::temp_directory_path() / ("fad-write-test-" + std::to_string(::getpid()));
  Dir() { fs::create_directories(path); }
  ~Dir() { fs::remove_all(path); }
  std::string operator/(const std::string& name) const { return (path / name).string(); }
};

std::string content(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}
}  // namespace

TEST_CASE("write_file_atomically replaces the file and leaves nothing beside it", "[file_write]") {
  Dir d;
  std::ofstream(d / "out.json") << "old, and longer than the new content";
  REQUIRE(fad::write_file_atomically(d / "out.json", "new"));
  CHECK(content(d / "out.json") == "new");
  CHECK(std::distance(fs::directory_iterator(d.path), fs::directory_iterator()) == 1);

  const mode_t old_mask = ::umask(022);
  REQUIRE(fad::write_file_atomically(d / "fresh", "x"));
  ::umask(old_mask);
  CHECK((fs::status(d / "fresh").permissions() & fs::perms::all) ==
        (fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read | fs::perms::others_read));
}

TEST_CASE("write_file_atomically never writes through a symlink", "[file_write]") {
  Dir d;
  std::ofstream(d / "precious") << "keep";
  // A link at the target is neither followed nor replaced (/dev/stdout is one).
  fs::create_symlink(d / "precious", d / "out.json");
  auto linked = fad::write_file_atomically(d / "out.json", "data");
  REQUIRE_FALSE(linked);
  CHECK_THAT(linked.error(), Contains("a symbolic link"));
  CHECK(content(d / "precious") == "keep");
  CHECK(fs::is_symlink(d / "out.json"));
  // Links planted at the names a fixed-suffix writer would use are never opened.
  for (const char* planted : {"h.json.tmp", "h.json.fad-tmp"}) fs::create_symlink(d / "precious", d / planted);
  REQUIRE(fad::write_file_atomically(d / "h.json", "data"));
  CHECK(content(d / "precious") == "keep");
}

TEST_CASE("write_file_atomically says which file it could not write and why", "[file_write]") {
  Dir d;
  auto missing = fad::write_file_atomically(d / "no/such/dir/out.json", "x");
  REQUIRE_FALSE(missing);
  CHECK_THAT(missing.error(), Contains(d / "no/such/dir/out.json"));
  CHECK_THAT(missing.error(), Contains("No such file or directory"));
  // A directory in the way: the rename fails and the temporary file is removed.
  fs::create_directories(d / "taken/inside");
  auto taken = fad::write_file_atomically(d / "taken", "x");
  REQUIRE_FALSE(taken);
  CHECK_THAT(taken.error(), Contains(d / "taken"));
  CHECK(std::distance(fs::directory_iterator(d.path), fs::directory_iterator()) == 1);
  // A device is never replaced, however privileged the writer.
  auto device = fad::write_file_atomically("/dev/null", "x");
  REQUIRE_FALSE(device);
  CHECK_THAT(device.error(), Contains("/dev/null: not a regular file"));
  CHECK(fs::is_character_file("/dev/null"));
  ::mkfifo((d / "fifo").c_str(), 0600);
  CHECK_THAT(fad::write_file_atomically(d / "fifo", "x").error(), Contains("not a regular file"));
}
