// What the launcher says about the compile cache: a store that fails on
// every compile (a full disk) is said once in a while, not by each compile.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "client/launch_cache.h"

namespace fs = std::filesystem;
using fad::client::due_again;
using namespace std::chrono_literals;

TEST_CASE("due_again: once, then not until the interval has passed") {
  const fs::path dir = fs::temp_directory_path() / ("fad-due-test-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string mark = (dir / "said").string();

  CHECK(due_again(mark, 600s));  // never said: due, and now marked
  REQUIRE(fs::exists(mark));
  CHECK_FALSE(due_again(mark, 600s));
  CHECK_FALSE(due_again(mark, 600s));
  // Eleven minutes later it is due again, once.
  fs::last_write_time(mark, fs::file_time_type::clock::now() - 11min);
  CHECK(due_again(mark, 600s));
  CHECK_FALSE(due_again(mark, 600s));

  // A link planted at the mark's name is not followed: the file it names
  // keeps its time, and the message is still said.
  const fs::path target = dir / "target";
  std::ofstream(target) << "keep";
  const auto old = fs::file_time_type::clock::now() - 1h;
  fs::last_write_time(target, old);
  const std::string link = (dir / "link").string();
  fs::create_symlink(target, link);
  CHECK(due_again(link, 600s));
  CHECK(fs::last_write_time(target) == old);

  // Where the mark cannot be written, better said every time than never.
  CHECK(due_again((dir / "missing" / "said").string(), 600s));
  CHECK(due_again((dir / "missing" / "said").string(), 600s));
  fs::remove_all(dir);
}
