// fadd's state dir over a long life: many kill -9 restarts, databases that are
// not fad's (refused, never touched), and retention of old builds' outputs.
#include <signal.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "harness.h"

using namespace fad::test;

namespace {

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

/// A foreign SQLite database (another application's) at `path`.
void write_foreign_db(const std::string& path) {
  auto r = run({"sqlite3", path,
                "PRAGMA application_id = 1095782483; CREATE TABLE moz_places(id INTEGER PRIMARY KEY, url TEXT); "
                "INSERT INTO moz_places(url) VALUES('https://example.org');"});
  REQUIRE(r.exit_code == 0);
}

}  // namespace

TEST_CASE("kill -9 restarts mid-build: each restart answers at once, no finished unit is compiled twice",
          "[integration][long][state]") {
  Daemon d;
  std::vector<FakeUnit> units;
  for (int i = 0; i < 12; ++i) units.push_back({"fwd_u" + std::to_string(i), "peak_mb=5 duration_s=0.4"});
  d.write_kernels(units);
  d.start();
  const auto id = d.submit({"--arch", "9.0"});
  // For each unit the database called succeeded before a crash: how often it
  // had been compiled by then. It must never be compiled again.
  std::map<std::string, int> compiles_when_finished;
  auto record_finished = [&] {
    // The status first: a unit that finishes between the two reads is then
    // not yet succeeded, rather than succeeded with its compile uncounted.
    const json build = d.status(id);
    const auto counts = compiles_per_source(d);
    for (const auto& u : build.at("unit_list")) {
      const std::string src = d.kernels_dir() + "/src/" + u.at("name").get<std::string>() + ".cu";
      if (u.at("state") == "succeeded" && u.at("kind") == "compile" && !compiles_when_finished.count(src))
        compiles_when_finished[src] = counts.count(src) ? counts.at(src) : 0;
    }
  };
  for (int round = 0; round < 25; ++round) {
    INFO("round " << round);
    // Crash at every stage: some rounds with units finishing in between, some
    // at once after the restart.
    if (round % 3 != 2) {
      const int want = std::min(12, 1 + round / 2);
      wait_for([&] { return d.status(id).at("units").at("succeeded").get<int>() >= want; }, std::chrono::seconds(10));
    }
    record_finished();
    d.kill9();
    const auto t0 = std::chrono::steady_clock::now();
    d.start();  // throws unless it answers within its deadline
    // Generous for a sanitizer build on a loaded machine; what it rules out
    // is a restart that waits on something (a lock, a timer) before listening.
    CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(15));
  }
  const auto b = d.wait_final(id, 180);
  REQUIRE(b.at("state") == "succeeded");
  CHECK(b.at("units").at("succeeded") == 13);
  CHECK_FALSE(compiles_when_finished.empty());
  const auto counts = compiles_per_source(d);
  for (const auto& [src, n] : compiles_when_finished) {
    INFO(src);
    CHECK(n >= 1);
    CHECK(counts.at(src) == n);
  }
  auto integrity = run({"sqlite3", d.state_dir() + "/fad.db", "PRAGMA integrity_check;"});
  REQUIRE(integrity.exit_code == 0);
  CHECK(integrity.out == "ok\n");
}

TEST_CASE("another application's database at STATE/fad.db is refused with a clear line and left untouched",
          "[integration][state]") {
  Daemon d;
  d.write_kernels({{"fwd_x", ""}});
  fs::create_directories(d.state_dir());
  const std::string db = d.state_dir() + "/fad.db";
  write_foreign_db(db);
  const std::string before = slurp_file(db);
  std::string log;
  CHECK(d.start_expect_exit({}, &log) == 1);
  INFO(log);
  CHECK(log.find(db + " belongs to another application") != std::string::npos);
  CHECK(log.find("leaves it untouched") != std::string::npos);
  CHECK(slurp_file(db) == before);
  auto tables = run({"sqlite3", db, "SELECT group_concat(name) FROM sqlite_master WHERE type = 'table';"});
  CHECK(tables.out == "moz_places\n");

  // Through `fad daemon start`, the user sees why.
  auto r = run({FAD_FAD_BIN, "daemon", "start", "--", "--kernels-dir", d.kernels_dir()},
               {{"FAD_SOCKET", d.socket()},
                {"FAD_STATE_DIR", d.state_dir()},
                {"FAD_CONFIG", (d.dir() / "test-config.json").string()}});
  CHECK(r.exit_code == 1);
  CHECK(r.err.find("belongs to another application") != std::string::npos);
  CHECK(slurp_file(db) == before);
}

TEST_CASE("a damaged fad.db is refused and not overwritten, and once moved away fadd starts afresh",
          "[integration][state]") {
  Daemon d;
  d.write_kernels({{"fwd_x", ""}});
  d.start();
  CHECK(d.wait_final(d.submit({"--arch", "9.0"}), 60).at("state") == "succeeded");
  CHECK(d.terminate() == 0);
  const std::string db = d.state_dir() + "/fad.db";
  REQUIRE(run({"sqlite3", db, "PRAGMA wal_checkpoint(TRUNCATE);"}).exit_code == 0);
  {
    // Scribble over every page after the first: the header survives, the tables do not.
    std::fstream f(db, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(4096);
    const std::string junk(fs::file_size(db) - 4096, '\x5a');
    f.write(junk.data(), static_cast<std::streamsize>(junk.size()));
  }
  const std::string before = slurp_file(db);
  std::string log;
  CHECK(d.start_expect_exit({}, &log) == 1);
  INFO(log);
  CHECK((log.find("damaged") != std::string::npos || log.find("malformed") != std::string::npos));
  CHECK(slurp_file(db) == before);
  fs::rename(db, db + ".broken");
  fs::remove(db + "-wal");
  fs::remove(db + "-shm");
  d.start();
  CHECK(d.fad({"history"}).exit_code == 0);
}

TEST_CASE("fad prune deletes old builds' outputs and logs but keeps their records, and retention runs at start",
          "[integration][state]") {
  Daemon d;
  d.write_kernels({{"fwd_a", ""}, {"fwd_b", ""}});
  d.start();
  const auto first = d.submit({"--arch", "9.0"});
  REQUIRE(d.wait_final(first, 60).at("state") == "succeeded");
  const fs::path dir = fs::path(d.state_dir()) / "builds" / std::to_string(first);
  REQUIRE(fs::exists(dir / "build.log"));

  auto dry = d.fad({"prune", "--older-than", "0s", "--dry-run", "--json"});
  REQUIRE(dry.exit_code == 0);
  CHECK(json::parse(dry.out).at("builds").at(0).at("id") == first);
  CHECK(fs::exists(dir));

  auto bad = d.fad({"prune", "--older-than", "soon"});
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.find("invalid age 'soon'") != std::string::npos);

  auto done = d.fad({"prune", "--older-than", "0s"});
  REQUIRE(done.exit_code == 0);
  CHECK(done.out.find("pruned build " + std::to_string(first)) != std::string::npos);
  CHECK_FALSE(fs::exists(dir));
  auto history = json::parse(d.fad({"history", "--json"}).out).at("builds");
  REQUIRE(history.size() == 1);
  CHECK(history.at(0).at("state") == "succeeded");
  CHECK(history.at(0).at("pruned_at").is_string());
  CHECK(d.fad({"history"}).out.find("succeeded (pruned)") != std::string::npos);
  auto logs = d.fad({"logs", std::to_string(first)});
  CHECK(logs.exit_code == 1);
  CHECK(logs.err.find("pruned") != std::string::npos);
  // The estimator still knows both units and the link: what it learned survives pruning.
  auto learned = run({"sqlite3", d.state_dir() + "/fad.db", "SELECT count(*) FROM unit_history;"});
  CHECK(learned.out == "3\n");

  // A second build, then a restart with a retention of one second: fadd
  // prunes it by itself at start.
  const auto second = d.submit({"--arch", "9.0"});
  REQUIRE(d.wait_final(second, 60).at("state") == "succeeded");
  CHECK(d.terminate() == 0);
  std::ofstream(d.dir() / "test-config.json") << R"({"poll_interval_ms": 100, "retention": "1s"})";
  const fs::path second_dir = fs::path(d.state_dir()) / "builds" / std::to_string(second);
  REQUIRE(fs::exists(second_dir));
  // finished_at has a resolution of one second: be sure the build is older than that.
  std::this_thread::sleep_for(std::chrono::milliseconds(2100));
  d.start();
  CHECK(wait_for([&] { return !fs::exists(second_dir); }, std::chrono::seconds(10)));
  CHECK(d.status(second).at("pruned_at").is_string());
}

TEST_CASE("a root fadd whose state dir other users cannot reach says so at start", "[integration]") {
  if (::geteuid() != 0) {
    WARN("SKIP: only a root fadd serves other users; the state dir reach check did not run");
    return;
  }
  Daemon d;
  d.write_kernels({});
  for (fs::path up = d.dir().parent_path(); up != up.parent_path(); up = up.parent_path())
    if ((fs::status(up).permissions() & fs::perms::others_exec) == fs::perms::none) {
      WARN("SKIP: " << up << " above the test's directory lacks o+x; the state dir reach check did not run");
      return;
    }
  const std::string warning = "which other users cannot pass through: their builds will fail";
  fs::permissions(d.dir(), fs::perms::owner_all, fs::perm_options::replace);  // 0700, as a private home
  d.start();
  CHECK(d.daemon_log().find(warning) != std::string::npos);
  CHECK(d.daemon_log().find(d.dir().string() + ",") != std::string::npos);  // names the directory
  REQUIRE(d.terminate() == 0);
  fs::remove(d.dir() / "fadd.log");
  fs::permissions(d.dir(), fs::perms::owner_all | fs::perms::others_exec, fs::perm_options::replace);  // 0701
  d.start();
  CHECK(d.daemon_log().find(warning) == std::string::npos);
}
