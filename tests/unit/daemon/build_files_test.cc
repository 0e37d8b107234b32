// fadd's directories under a build: made with their parents, and when one
// cannot be made, the reason (a unit's log cannot carry it).
#include "daemon/build_files.h"

#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

namespace fs = std::filesystem;

TEST_CASE("make_daemon_dir makes the missing parents, or says which one it could not make", "[build_files]") {
  const fs::path root = fs::temp_directory_path() / ("fad-build-files-" + std::to_string(::getpid()));
  fs::remove_all(root);
  fs::create_directories(root);
  CHECK(fad::make_daemon_dir((root / "builds/1/logs").string(), std::nullopt).empty());
  CHECK(fs::is_directory(root / "builds/1/logs"));
  CHECK(fad::make_daemon_dir((root / "builds/1/logs").string(), std::nullopt).empty());  // there already
  // A file where a directory should be: as an unwritable or immutable
  // builds/ would, it stops the chain at that point, and says so.
  std::ofstream(root / "blocked").close();
  CHECK(fad::make_daemon_dir((root / "blocked/2/logs").string(), std::nullopt) ==
        "cannot create " + (root / "blocked/2").string() + ": Not a directory");
  fs::remove_all(root);
}
