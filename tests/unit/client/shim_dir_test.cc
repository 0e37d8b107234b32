// fad run's shim directories: made with the creator's pid, and the ones a
// killed run left removed by the user's next run, nothing else.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "client/shim_dir.h"
#include "common/stale_temps.h"

using namespace fad::client;
namespace fs = std::filesystem;

namespace {

/// A pid that ran a moment ago and runs no more.
pid_t dead_pid() {
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  int status = 0;
  ::waitpid(child, &status, 0);
  return child;
}

/// The first 8 hex digits of this boot's id.
std::string boot() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  std::getline(in, id);
  REQUIRE(id.size() >= 8);
  return id.substr(0, 8);
}

/// `fad-run-<pid>-<this pid namespace>-<this boot>-<tail>`.
std::string shim_name(pid_t pid, const std::string& tail) {
  struct stat st {};
  REQUIRE(::stat("/proc/self/ns/pid", &st) == 0);
  return "fad-run-" + std::to_string(pid) + "-" + std::to_string(st.st_ino) + "-" + boot() + "-" + tail;
}

struct Root {
  fs::path path = fs::temp_directory_path() / ("fad-shim-test-" + std::to_string(::getpid()));
  Root() {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~Root() { fs::remove_all(path); }
};

}  // namespace

TEST_CASE("shim dir: one per run, named after its creator, with nvcc pointing at fad") {
  Root root;
  const std::string dir = make_shim_dir(root.path.string(), "/opt/fad/bin/fad");
  REQUIRE_FALSE(dir.empty());
  const std::string name = fs::path(dir).filename().string();
  CHECK(name.rfind(shim_name(::getpid(), ""), 0) == 0);
  CHECK(fs::read_symlink(fs::path(dir) / "nvcc") == "/opt/fad/bin/fad");
  struct stat st {};
  REQUIRE(::stat(dir.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0700);
  // A second run beside it (the same process here: alive) keeps it.
  const std::string other = make_shim_dir(root.path.string(), "/opt/fad/bin/fad");
  CHECK(other != dir);
  CHECK(fs::exists(dir));
}

TEST_CASE("shim dir: a killed run's directory and depfiles go, live runs' and foreign entries stay") {
  Root root;
  const pid_t gone = dead_pid();
  const fs::path stale = root.path / shim_name(gone, "abcdef");
  fs::create_directories(stale);
  fs::create_symlink("/opt/fad/bin/fad", stale / "nvcc");
  const fs::path live = root.path / shim_name(::getpid(), "abcdef");
  fs::create_directories(live);
  // Not ours to judge: an older version's name without a pid, one made in
  // another pid namespace (a container sharing /tmp), a file, and a link
  // named like a stale directory that points at one of ours.
  const fs::path old = root.path / "fad-run-Xy12Zq";
  fs::create_directories(old);
  const fs::path elsewhere = root.path / ("fad-run-" + std::to_string(gone) + "-4026599999-abcdef");
  fs::create_directories(elsewhere);
  const fs::path file = root.path / shim_name(gone, "file");
  std::ofstream(file) << "x";
  const fs::path target = root.path / "kept";
  fs::create_directories(target);
  std::ofstream(target / "data") << "x";
  const fs::path link = root.path / shim_name(gone, "link");
  fs::create_directory_symlink(target, link);

  // A killed compile's dependency file goes too; a live one's stays, and a
  // directory under that name is not one.
  const fs::path depfile = root.path / ("fad-deps-" + shim_name(gone, "1234.d").substr(8));
  std::ofstream(depfile) << "a.o: a.cu\n";
  const fs::path live_depfile = root.path / ("fad-deps-" + shim_name(::getpid(), "1234.d").substr(8));
  std::ofstream(live_depfile) << "a.o: a.cu\n";
  const fs::path depdir = root.path / ("fad-deps-" + shim_name(gone, "dir").substr(8));
  fs::create_directories(depdir);

  // Another machine's (a TMPDIR on shared storage: the same pid namespace
  // number, another boot) are never judged by this machine's pids.
  std::string other_boot = shim_name(gone, "abcdef");
  other_boot.replace(other_boot.find(boot()), 8, boot() == "00000000" ? "11111111" : "00000000");
  const fs::path other_machine = root.path / other_boot;
  fs::create_directories(other_machine);

  // A compile's sweep takes depfiles only: a stale-looking shim may be the
  // one its own build runs through (its fad run killed, its command on).
  CHECK(fad::sweep_stale_temps(root.path.string(), fad::StaleTemps::depfiles) == 1);
  CHECK_FALSE(fs::exists(depfile));
  CHECK(fs::exists(stale));
  std::ofstream(depfile) << "a.o: a.cu\n";
  CHECK(fad::sweep_stale_temps(root.path.string(), fad::StaleTemps::all) == 2);
  CHECK_FALSE(fs::exists(depfile));
  CHECK(fs::exists(live_depfile));
  CHECK(fs::exists(depdir));
  CHECK(fs::exists(other_machine));
  CHECK_FALSE(fs::exists(stale));
  CHECK(fs::exists(live));
  CHECK(fs::exists(old));
  CHECK(fs::exists(elsewhere));
  CHECK(fs::exists(file));
  CHECK(fs::is_symlink(link));
  CHECK(fs::exists(target / "data"));
}

TEST_CASE("shim dir: another user's stale directory is left to them") {
  if (::getuid() != 0) {
    WARN("SKIP: needs root to make a directory owned by another user");
    return;
  }
  Root root;
  const fs::path theirs = root.path / shim_name(dead_pid(), "abcdef");
  fs::create_directories(theirs);
  REQUIRE(::chown(theirs.c_str(), 65534, 65534) == 0);
  CHECK(fad::sweep_stale_temps(root.path.string(), fad::StaleTemps::all) == 0);
  CHECK(fs::exists(theirs));
}
