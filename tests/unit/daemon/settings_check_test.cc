// fadd --check: what a start would refuse about its places, found without
// making anything, so `fad daemon restart` can ask before it stops a fadd.
#include "daemon/settings_check.h"

#include <sys/stat.h>

#include <catch2/catch.hpp>

#include "fakes.h"

namespace fad {
namespace {
namespace fs = std::filesystem;
using Catch::Contains;
using test::TempDir;

DaemonOptions placed_in(const fs::path& dir) {
  DaemonOptions o;
  o.state_dir = (dir / "state").string();
  o.socket = (dir / "run" / "fad.sock").string();
  o.log_file = (dir / "state" / "fadd.log").string();
  return o;
}

}  // namespace

TEST_CASE("settings check: usable places pass, and the check leaves nothing behind", "[settings_check]") {
  TempDir tmp("fad-check");
  fs::permissions(tmp.path(), fs::perms::owner_all, fs::perm_options::replace);
  DaemonOptions o = placed_in(tmp.path());
  CHECK(settings_check_problem(o).empty());  // nothing there yet: a start makes it all
  fs::create_directory(o.state_dir);
  fs::permissions(o.state_dir, fs::perms::owner_all, fs::perm_options::replace);
  CHECK(settings_check_problem(o).empty());
  // Asked by making a file of another name beside it, and removing that: a
  // fadd starting beside the check may be opening the log file itself.
  CHECK(fs::is_empty(o.state_dir));
  std::ofstream(o.log_file) << "kept\n";
  CHECK(settings_check_problem(o).empty());
  std::ifstream in(o.log_file);
  std::string line;
  CHECK((std::getline(in, line) && line == "kept"));
}

TEST_CASE("settings check: what a start would refuse, in its words", "[settings_check]") {
  TempDir tmp("fad-check");
  fs::permissions(tmp.path(), fs::perms::owner_all, fs::perm_options::replace);
  DaemonOptions o = placed_in(tmp.path());
  fs::create_directory(o.state_dir);
  // A state dir others may write: a start refuses it after the old fadd is gone.
  fs::permissions(o.state_dir, fs::perms::all, fs::perm_options::replace);
  CHECK_THAT(settings_check_problem(o), Contains("refusing state dir " + o.state_dir));
  fs::permissions(o.state_dir, fs::perms::owner_all, fs::perm_options::replace);
  // A FIFO with no reader: a start would hang on it; the check must not.
  const std::string fifo = (tmp.path() / "state" / "fifo").string();
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  o.log_file = fifo;
  CHECK_THAT(settings_check_problem(o), Contains("cannot log to " + fifo));
  // A directory where no file can be made (root may write anywhere else).
  o.log_file = (tmp.path() / "state" / "fadd.log").string();
  // A socket directory others may write, or a file where the socket goes.
  fs::create_directories(tmp.path() / "run");
  fs::permissions(tmp.path() / "run", fs::perms::all, fs::perm_options::replace);
  CHECK_THAT(settings_check_problem(o), Contains("socket directory " + (tmp.path() / "run").string()));
  fs::permissions(tmp.path() / "run", fs::perms::owner_all, fs::perm_options::replace);
  CHECK(settings_check_problem(o).empty());
  std::ofstream(o.socket) << "not a socket\n";
  CHECK_THAT(settings_check_problem(o), Contains(o.socket + " exists and is not a socket"));
  fs::remove(o.socket);
  o.socket = "/proc/fad-check/fad.sock";
  CHECK_THAT(settings_check_problem(o), Contains("cannot create socket directory /proc/fad-check"));
  // A directory that passes the trust rule (root's) and cannot be written:
  // the start would fail to listen. Bug: --check said the settings were usable.
  o.socket = "/proc/fad.sock";
  CHECK_THAT(settings_check_problem(o), Contains("cannot make the socket /proc/fad.sock: ") && Contains(" in /proc"));
  {
    DaemonOptions missing = o;
    missing.socket = (tmp.path() / "run" / "fad.sock").string();
    missing.state_dir = "/proc/fad-check-state";
    CHECK_THAT(settings_check_problem(missing), Contains("cannot create state dir /proc/fad-check-state: ") &&
                                                    Contains("(create it first, or choose another)"));
  }
  o.socket = (tmp.path() / "run" / "fad.sock").string();
  // A file where the state dir goes: the start chmodded it before its lock failed.
  const DaemonOptions kept = o;
  o.state_dir = (tmp.path() / "state" / "fadd.log").string();
  std::ofstream(o.state_dir) << "a file\n";
  CHECK_THAT(settings_check_problem(o), Contains("exists and is not a directory"));
  CHECK_FALSE(state_dir_safe(o.state_dir));
  o = kept;
  o.log_file = "/proc/fad-check.log";
  CHECK_THAT(settings_check_problem(o), Contains("cannot log to /proc/fad-check.log"));
  o.log_file = "/proc/fad-check/logs/fadd.log";  // the logger would make the directories, and could not
  CHECK_THAT(settings_check_problem(o), Contains("cannot log to /proc/fad-check/logs/fadd.log"));
  o.log_file = (tmp.path() / "state" / std::string(300, 'x')).string();
  CHECK_THAT(settings_check_problem(o), Contains("File name too long"));
  o.log_file = (tmp.path() / "logs" / "deeper" / "fadd.log").string();  // it could make these
  CHECK(settings_check_problem(o).empty());
  CHECK_FALSE(fs::exists(tmp.path() / "logs"));
  CHECK(std::distance(fs::directory_iterator(tmp.path()), fs::directory_iterator()) == 2);  // state and run only
}

}  // namespace fad
