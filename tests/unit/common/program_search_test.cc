// find_program and find_nvcc: which file a name means, for the client and for
// fadd alike.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "common/compiler_identity.h"

namespace fs = std::filesystem;

namespace {
struct Dir {
  fs::path path = fs::temp_directory_path() / ("fad-search-test-" + std::to_string(::getpid()));
  Dir() { fs::create_directories(path); }
  ~Dir() { fs::remove_all(path); }
  std::string operator/(const char* name) const { return (path / name).string(); }
};

void executable(const std::string& path) {
  std::ofstream(path) << "#!/bin/sh\n";
  ::chmod(path.c_str(), 0755);
}
}  // namespace

TEST_CASE("find_program takes the first executable file on PATH, never a directory", "[program_search]") {
  Dir d;
  fs::create_directories(d / "a/tool");  // a directory named like the program comes first
  fs::create_directories(d / "b");
  executable(d / "b/tool");
  const std::string path = d / "a" + ":" + d / "b";
  CHECK(fad::find_program("tool", path, "/") == d / "b/tool");
  CHECK(fad::find_program("missing", path, "/").empty());
  // With a slash, the file itself, against cwd; a directory is no program.
  CHECK(fad::find_program("b/tool", "", d.path.string()) == d / "b/tool");
  CHECK(fad::find_program("a/tool", "", d.path.string()).empty());
  // An empty entry is the working directory, as for a shell.
  executable(d / "here");
  CHECK(fad::find_program("here", ":" + d / "b", d.path.string()) == d / "here");
}

TEST_CASE("find_nvcc skips PATH's empty entries and falls back to /usr/local/cuda/bin", "[program_search]") {
  Dir d;
  executable(d / "nvcc-here");
  // fadd's working directory means nothing to the user who named the compiler.
  CHECK(fad::find_nvcc("nvcc-here", ":", d.path.string()).empty());
  CHECK(fad::without_empty_entries("::/a::/b:") == "/a:/b");
  CHECK(fad::without_empty_entries("").empty());
  fs::create_directories(d / "bin");
  executable(d / "bin/nvcc-here");
  CHECK(fad::find_nvcc("nvcc-here", ":" + d / "bin", "/") == d / "bin/nvcc-here");
  CHECK(fad::find_nvcc("../bin/nvcc-here", "", d / "bin") == d / "bin/../bin/nvcc-here");  // as named
  CHECK(fad::find_nvcc("bin", "", d.path.string()).empty());                               // a directory
  if (::access("/usr/local/cuda/bin/nvcc", X_OK) == 0) {
    CHECK(fad::find_nvcc("nvcc", "", "/") == "/usr/local/cuda/bin/nvcc");
  } else {
    WARN("no /usr/local/cuda/bin/nvcc here: the fallback is not exercised");
  }
}
