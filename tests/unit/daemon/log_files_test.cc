// fadd's log files are its own to read.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "daemon/log_files.h"

namespace fs = std::filesystem;

namespace {
unsigned mode_of(const fs::path& p) {
  struct stat st {};
  REQUIRE(::lstat(p.c_str(), &st) == 0);
  return st.st_mode & 07777;
}
}  // namespace

TEST_CASE("log file names are the rotating sink's", "[log_files]") {
  CHECK(fad::log_file_names("/st/fadd.log", 2) ==
        std::vector<std::string>{"/st/fadd.log", "/st/fadd.1.log", "/st/fadd.2.log"});
}

TEST_CASE("a log and its rotations left readable by others are made 0600, but no link nor a private one",
          "[log_files]") {
  const fs::path dir = fs::temp_directory_path() / ("fad-log-files-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path log = dir / "fadd.log";
  for (const auto* name : {"fadd.log", "fadd.1.log", "fadd.2.log", "other.txt"}) std::ofstream(dir / name) << "x\n";
  ::chmod(log.c_str(), 0644);
  ::chmod((dir / "fadd.1.log").c_str(), 0600);
  ::chmod((dir / "fadd.2.log").c_str(), 0660);
  ::chmod((dir / "other.txt").c_str(), 0644);
  fs::create_symlink(dir / "other.txt", dir / "fadd.3.log");  // a link is never followed

  const auto changed = fad::close_log_files(log.string(), 3, ::geteuid());
  CHECK(changed ==
        std::vector<std::pair<std::string, unsigned>>{{log.string(), 0644u}, {(dir / "fadd.2.log").string(), 0660u}});
  CHECK(mode_of(log) == 0600);
  CHECK(mode_of(dir / "fadd.1.log") == 0600);
  CHECK(mode_of(dir / "fadd.2.log") == 0600);
  CHECK(mode_of(dir / "other.txt") == 0644);
  // Another owner's file is not fadd's to change.
  ::chmod(log.c_str(), 0644);
  CHECK(fad::close_log_files(log.string(), 0, ::geteuid() + 1).empty());
  CHECK(mode_of(log) == 0644);
  fs::remove_all(dir);
}
