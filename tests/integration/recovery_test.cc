// Crash safety: kill -9 of fadd at any moment, then a restart, resumes the build
// and never compiles a finished unit again; SIGTERM stops cleanly and requeues;
// SIGHUP and the user signals stop nothing.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "harness.h"

using namespace fad::test;

namespace {
std::vector<FakeUnit> slowish_units(int n, const char* fake) {
  std::vector<FakeUnit> units;
  for (int i = 0; i < n; ++i) units.push_back({"fwd_u" + std::to_string(i), fake});
  return units;
}

std::map<std::string, int> compiles_per_source(Daemon& d) {
  std::map<std::string, int> count;
  for (const auto& line : d.fake_log()) {
    auto pos = line.find("src=");
    if (pos == std::string::npos) continue;
    auto end = line.find(' ', pos);
    count[line.substr(pos + 4, end - pos - 4)]++;
  }
  return count;
}

std::vector<std::string> succeeded_units(const json& build) {
  std::vector<std::string> out;
  for (const auto& u : build.at("unit_list"))
    if (u.at("state") == "succeeded") out.push_back(u.at("name"));
  return out;
}
}  // namespace

TEST_CASE("kill -9 mid-build: restart resumes and finished units are not compiled again", "[integration]") {
  Daemon d;
  d.write_kernels(slowish_units(6, "peak_mb=10 duration_s=0.8"));
  d.start();
  const auto id = d.submit({"--arch", "9.0"});
  REQUIRE(wait_for([&] { return d.status(id).at("units").at("succeeded").get<int>() >= 2; }, std::chrono::seconds(60)));
  d.kill9();
  // What the database says had finished at the moment of the crash, read
  // before the restart: the new fadd starts the requeued units before it
  // answers, and one could finish before a status reached it.
  const auto db = run(
      {"sqlite3", d.state_dir() + "/fad.db",
       "SELECT name FROM units WHERE state = 'succeeded' AND kind = 'compile' AND build_id = " + std::to_string(id)});
  REQUIRE(db.exit_code == 0);
  std::vector<std::string> done_before;
  std::istringstream names(db.out);
  for (std::string name; std::getline(names, name);) done_before.push_back(name);
  REQUIRE(done_before.size() >= 2);
  d.start();
  const auto after_crash = d.status(id);
  for (const auto& name : done_before) {
    const auto done = succeeded_units(after_crash);
    CHECK(std::find(done.begin(), done.end(), name) != done.end());  // finished stays finished
  }
  CHECK(after_crash.at("units").at("running").get<int>() <= 2);  // requeued or restarted, never lost
  const auto b = d.wait_final(id, 120);
  REQUIRE(b.at("state") == "succeeded");
  CHECK(b.at("units").at("total") == 7);
  const auto counts = compiles_per_source(d);
  for (const auto& name : done_before) {
    const auto src = d.kernels_dir() + "/src/" + name + ".cu";
    INFO(name);
    CHECK(counts.at(src) == 1);
  }
  int total = 0;
  for (const auto& [src, n] : counts) total += n;
  CHECK(total >= 6);
  CHECK(total <= 6 + 2);  // at most the units running at the crash ran twice
}

TEST_CASE("kill -9 at many moments never loses a build or a finished unit", "[integration]") {
  Daemon d;
  d.write_kernels(slowish_units(5, "peak_mb=5 duration_s=0.3"));
  d.start();
  const auto id = d.submit({"--arch", "9.0"});
  // Crash repeatedly at whatever point the build has reached.
  for (int round = 0; round < 4; ++round) {
    wait_for([&] { return d.fake_log().size() > static_cast<std::size_t>(round + 1); }, std::chrono::seconds(20));
    d.kill9();
    d.start();
  }
  const auto b = d.wait_final(id, 120);
  REQUIRE(b.at("state") == "succeeded");
  // The database is consistent: each unit succeeded once and the counts add up.
  CHECK(b.at("units").at("succeeded") == 6);
  auto integrity = run({"sqlite3", d.state_dir() + "/fad.db", "PRAGMA integrity_check;"});
  REQUIRE(integrity.exit_code == 0);
  CHECK(integrity.out == "ok\n");
}

TEST_CASE("SIGTERM stops running units, exits 0, and a restart finishes the build", "[integration]") {
  Daemon d;
  d.write_kernels(slowish_units(3, "peak_mb=10 duration_s=30"));
  d.start();
  const auto id = d.submit({"--arch", "9.0"});
  REQUIRE(wait_for([&] { return d.status(id).at("units").at("running").get<int>() >= 1; }, std::chrono::seconds(30)));
  CHECK(d.terminate() == 0);
  CHECK(!fs::exists(d.socket()));  // removed on a clean stop
  // Restart with the slow units made quick: the requeued units run again.
  for (int i = 0; i < 3; ++i)
    std::ofstream(fs::path(d.kernels_dir()) / "src" / ("fwd_u" + std::to_string(i) + ".cu")) << "// quick now\n";
  d.start();
  CHECK(d.wait_final(id, 60).at("state") == "succeeded");
}

TEST_CASE("SIGHUP, SIGUSR1, SIGUSR2 and SIGALRM neither stop fadd nor its running build, and it says so in the log",
          "[integration]") {
  Daemon d;
  d.write_kernels(slowish_units(1, "peak_mb=10 duration_s=2"));
  d.start();
  const auto id = d.submit({"--arch", "9.0"});
  REQUIRE(wait_for([&] { return d.status(id).at("units").at("running").get<int>() >= 1; }, std::chrono::seconds(30)));
  REQUIRE(::kill(d.pid(), SIGHUP) == 0);
  REQUIRE(
      wait_for([&] { return d.daemon_log().find("SIGHUP ignored") != std::string::npos; }, std::chrono::seconds(10)));
  ::kill(d.pid(), SIGHUP);  // and again: the handler stays armed
  // Nor do the user signals, whose default is to kill without a word.
  REQUIRE(::kill(d.pid(), SIGUSR1) == 0);
  REQUIRE(::kill(d.pid(), SIGUSR2) == 0);
  REQUIRE(::kill(d.pid(), SIGALRM) == 0);
  REQUIRE(
      wait_for([&] { return d.daemon_log().find("SIGALRM ignored") != std::string::npos; }, std::chrono::seconds(10)));
  CHECK(d.daemon_log().find("SIGUSR1 ignored") != std::string::npos);
  CHECK(d.wait_final(id, 60).at("state") == "succeeded");
  CHECK(d.fad({"status"}).exit_code == 0);
  CHECK(d.terminate() == 0);
}

TEST_CASE("a fadd refused for another fadd's socket or state dir says one line and makes nothing", "[integration]") {
  // Bug: with another state dir on an answering socket, the refused fadd had
  // made that state dir, its database and lock, and said four lines first.
  Daemon d;
  d.write_kernels({});
  d.start();
  const fs::path other_state = d.dir() / "other-state";
  const std::map<std::string, std::string> env{{"FAD_CONFIG", (d.dir() / "test-config.json").string()}};
  auto on_socket = run({FAD_FADD_BIN, "--socket", d.socket(), "--state-dir", other_state.string(), "--kernels-dir",
                        d.kernels_dir(), "--nvcc", FAD_FAKE_NVCC_BIN},
                       env, 30);
  INFO(on_socket.err);
  CHECK(on_socket.exit_code == 1);
  CHECK(std::count(on_socket.err.begin(), on_socket.err.end(), '\n') == 1);
  CHECK_THAT(on_socket.err, Catch::Contains("another fadd is already running on " + d.socket()));
  CHECK_FALSE(fs::exists(other_state));
  auto on_state = run({FAD_FADD_BIN, "--socket", (d.dir() / "other.sock").string(), "--state-dir", d.state_dir(),
                       "--kernels-dir", d.kernels_dir(), "--nvcc", FAD_FAKE_NVCC_BIN},
                      env, 30);
  INFO(on_state.err);
  CHECK(on_state.exit_code == 1);
  // (A root fadd may warn first of a state dir others cannot reach: that is
  // about the machine, not this start.)
  std::istringstream lines(on_state.err);
  int said = 0;
  for (std::string line; std::getline(lines, line);) said += line.find(" warn ") == std::string::npos;
  CHECK(said == 1);
  CHECK_THAT(on_state.err, Catch::Contains("another fadd is already running (pid "));
  CHECK(d.fad({"status"}).exit_code == 0);
}

TEST_CASE("a second fadd on the same state dir or socket refuses to start", "[integration]") {
  Daemon d;
  d.write_kernels(slowish_units(1, ""));
  d.start();
  std::string log;
  CHECK(d.start_expect_exit({}, &log) == 1);
  CHECK(log.find("already running") != std::string::npos);
  // The first one still serves.
  CHECK(d.fad({"status"}).exit_code == 0);
}

TEST_CASE("a stale socket left by a killed fadd is cleaned up on start", "[integration]") {
  Daemon d;
  d.write_kernels(slowish_units(1, ""));
  d.start();
  d.kill9();
  REQUIRE(fs::exists(d.socket()));  // kill -9 leaves it behind
  CHECK(d.fad({"status"}).exit_code == 3);
  d.start();
  CHECK(d.fad({"status"}).exit_code == 0);
}

TEST_CASE("fadd never deletes a file or a directory where its socket goes, and says why it does not start",
          "[integration]") {
  // Only a socket is a stale socket: a --socket naming the wrong path must not cost a file.
  Daemon d;
  d.write_kernels(slowish_units(1, ""));
  fs::create_directories(fs::path(d.socket()).parent_path());
  ::chmod(fs::path(d.socket()).parent_path().c_str(), 0700);
  std::ofstream(d.socket()) << "important\n";
  std::string log;
  CHECK(d.start_expect_exit({}, &log) == 1);
  CHECK(log.find(d.socket() + " exists and is not a socket") != std::string::npos);
  CHECK(slurp(d.socket()) == "important\n");
  // Refused before anything was made: no state dir, database or lock.
  CHECK_FALSE(fs::exists(d.state_dir()));
  fs::remove(d.socket());
  fs::create_directories(fs::path(d.socket()) / "x");
  CHECK(d.start_expect_exit({}, &log) == 1);
  CHECK(log.find("is not a socket") != std::string::npos);
  CHECK(fs::is_directory(fs::path(d.socket()) / "x"));
}
