// The database over time and against strangers: databases written by earlier
// releases (checked-in fixtures made by the migrations of their day) open with
// today's Store with every row intact, and files that are not fad's are
// refused and left byte for byte as they were.
#include <catch2/catch.hpp>

#include <sqlite3.h>

#include <fstream>
#include <iterator>

#include "daemon/database_check.h"
#include "daemon/sqlite.h"
#include "daemon/store.h"
#include "fakes.h"

namespace fad {
namespace {

using Catch::Contains;
using Catch::StartsWith;
using test::TempDir;
namespace fs = std::filesystem;

std::string bytes_of(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::int64_t count_rows(Store& store, const std::string& table) {
  auto st = store.db().prepare("SELECT count(*) FROM " + table);
  st.step();
  return st.int64(0);
}

/// A copy of a checked-in fixture database in `dir`.
std::string copy_fixture(const TempDir& dir, const std::string& name) {
  const std::string to = dir / "fad.db";
  fs::copy_file(std::string(FAD_FIXTURES_DIR) + "/" + name, to);
  return to;
}

/// Rows every fixture holds, as the release that wrote them left them.
void check_v1_rows(Store& store) {
  auto nightly = store.build(1);
  REQUIRE(nightly);
  CHECK(nightly->name == "nightly");
  CHECK(nightly->state == BuildState::succeeded);
  CHECK(nightly->archs == std::vector<std::string>{"9.0"});
  CHECK(nightly->kernels_glob == "fwd_*");
  CHECK(nightly->finished_at == std::optional<std::string>("2026-06-01T10:20:00Z"));
  CHECK(nightly->peak_bytes == 9663676416ull);
  CHECK(nightly->artifact == std::optional<std::string>("/var/lib/fad/builds/1/lib/libfad_attention.so"));
  CHECK(nightly->kind == "bundled");  // the default migration 2 gave older rows
  CHECK_FALSE(nightly->pruned_at.has_value());
  auto failed = store.build(2);
  REQUIRE(failed);
  CHECK(failed->state == BuildState::failed);
  CHECK(failed->error == "1 unit(s) failed, first bwd_hdim64_fp16_causal");

  auto units = store.units(1);
  REQUIRE(units.size() == 3);
  CHECK(units[0].name == "fwd_hdim64_fp16_causal");
  CHECK(units[1].attempts == 2);
  CHECK(units[1].requeued_peak == 5368709120ull);
  CHECK(units[1].argv.size() == 5);
  CHECK(units[2].kind == UnitKind::link);
  auto failed_units = store.units(2);
  REQUIRE(failed_units.size() == 2);
  CHECK(failed_units[0].exit_code == std::optional<int>(1));
  CHECK(failed_units[1].wait_reason == "waiting for the compile units");
  CHECK(store.finished_builds(10).size() == 2);

  auto history = store.history();
  REQUIRE(history.size() == 2);
  CHECK(history[0].key == "k-fwd64");
  CHECK(history[0].scope.empty());  // measured before scopes: shared, as it was
  CHECK(units[0].scope.empty());
  CHECK_FALSE(store.build(1)->opener);  // opened before fadd knew: never closed for it
  CHECK(history[1].profile == "0:1073741824,100:6174015488,240:2147483648;240");
  CHECK(count_rows(store, "samples") == 2);
  CHECK(store.meta("boot_id") == std::optional<std::string>("0e2a3c1d-7f4b-4a4e-9d0e-5b1c2d3e4f50"));
}

}  // namespace

TEST_CASE("migration: a v1 database opens with every row and the current schema", "[store][migration]") {
  TempDir tmp("fad-migrate");
  const std::string path = copy_fixture(tmp, "fad_v1.db");
  {
    Database raw(path);
    auto st = raw.prepare("PRAGMA user_version");
    st.step();
    REQUIRE(st.int64(0) == 1);  // the fixture really is v1
  }
  Store store(path);
  CHECK(store.schema_version() == kSchemaVersion);
  CHECK(store.application_id() == kApplicationId);  // adopted by its tables, then marked
  CHECK(count_rows(store, "builds") == 2);
  CHECK(count_rows(store, "units") == 5);
  check_v1_rows(store);
  CHECK_FALSE(store.build(1)->groups);  // unknown: its compiles look them up
  // And it works on: a new build gets the next id, the old ones can be pruned.
  BuildRecord b;
  b.name = "after";
  b.created_at = "2026-08-01T00:00:00Z";
  CHECK(store.create_build(b, {}) == 3);
  CHECK(store.prunable_builds("2026-07-01T00:00:00Z").size() == 2);
  // Its finished builds are numbered in the order they finished; the next
  // to finish comes after them, whatever its time says.
  const auto seq_of = [&](std::int64_t id) {
    auto st = store.db().prepare("SELECT finish_seq FROM builds WHERE id = ?");
    st.bind(1, id);
    REQUIRE(st.step());
    return st.opt_int64(0);
  };
  CHECK(seq_of(1) == std::optional<std::int64_t>(1));
  CHECK(seq_of(2) == std::optional<std::int64_t>(2));
  CHECK_FALSE(seq_of(3));
  store.set_build_state(3, BuildState::succeeded, "2020-01-01T00:00:00Z");
  CHECK(seq_of(3) == std::optional<std::int64_t>(3));
  {
    auto check = store.db().prepare("PRAGMA integrity_check");
    REQUIRE(check.step());
    CHECK(check.text(0) == "ok");
  }
}

TEST_CASE("migration: a v2 database keeps its external build and session", "[store][migration]") {
  TempDir tmp("fad-migrate");
  Store store(copy_fixture(tmp, "fad_v2.db"));
  CHECK(store.schema_version() == kSchemaVersion);
  check_v1_rows(store);
  auto ext = store.build(3);
  REQUIRE(ext);
  CHECK(ext->kind == "external");
  CHECK(ext->session == std::optional<std::int64_t>(4242));
  CHECK(ext->command == "pip install flash-attn --no-build-isolation");
  CHECK(ext->budget_bytes == std::optional<std::uint64_t>(12884901888ull));
  // Recorded before builds had owners: it belongs to fadd's own user, and no
  // new launch joins it (its session's owner is unknown).
  CHECK_FALSE(ext->uid.has_value());
  CHECK_FALSE(store.session_build(4242, 0).has_value());
  // A unit left running by a crash of that release is requeued as usual.
  // Its process group is its launcher's, not fadd's to kill, and with no
  // leader start recorded, not fadd's to continue either.
  const auto left = store.recover_running_units();
  REQUIRE(left.size() == 1);
  CHECK(left[0].external);
  CHECK_FALSE(left[0].leader_start);
  CHECK(store.units(3).at(0).state == UnitState::queued);
}

TEST_CASE("database check: new, fad's own, and legacy files are accepted", "[store][foreign]") {
  TempDir tmp("fad-dbcheck");
  CHECK(*check_database_file(tmp / "none.db") == DatabaseKind::absent);
  std::ofstream(tmp / "empty.db").close();
  CHECK(*check_database_file(tmp / "empty.db") == DatabaseKind::absent);
  {
    Store store(tmp / "fad.db");
    CHECK(store.application_id() == kApplicationId);
  }
  CHECK(*check_database_file(tmp / "fad.db") == DatabaseKind::fad);
  fs::copy_file(std::string(FAD_FIXTURES_DIR) + "/fad_v1.db", tmp / "v1.db");
  CHECK(*check_database_file(tmp / "v1.db") == DatabaseKind::fad);
}

TEST_CASE("database check: another application's database is refused and left untouched", "[store][foreign]") {
  TempDir tmp("fad-dbcheck");
  const std::string path = tmp / "fad.db";
  SECTION("with an application_id of its own") {
    Database other(path);
    other.exec(
        "PRAGMA application_id = 1234567; CREATE TABLE moz_places(id INTEGER PRIMARY KEY, url TEXT);"
        "INSERT INTO moz_places(url) VALUES('https://example.org');");
  }
  SECTION("without an application_id, its own tables") {
    Database other(path);
    other.exec(
        "PRAGMA user_version = 7; CREATE TABLE builds(id INTEGER PRIMARY KEY, log TEXT);"
        "INSERT INTO builds(log) VALUES('a CI server''s table of the same name');");
  }
  SECTION("in WAL mode, without an application_id") {
    Database other(path);
    other.exec("PRAGMA journal_mode=WAL; CREATE TABLE notes(t TEXT); INSERT INTO notes VALUES('mine');");
  }
  const std::string before = bytes_of(path);
  auto kind = check_database_file(path);
  REQUIRE_FALSE(kind.ok());
  CHECK_THAT(kind.error(), Contains(path));
  CHECK_THAT(kind.error(), Contains("another application"));
  CHECK_THAT(kind.error(), Contains("leaves it untouched"));
  REQUIRE_THROWS_AS(Store(path), StoreError);
  CHECK(bytes_of(path) == before);  // never adopted, migrated or marked
  Database look(path);
  auto st = look.prepare("SELECT count(*) FROM sqlite_master WHERE name IN ('units', 'unit_history', 'meta')");
  st.step();
  CHECK(st.int64(0) == 0);
}

TEST_CASE("database check: a file that is not SQLite, and a damaged fad database, are refused as they are",
          "[store][foreign]") {
  TempDir tmp("fad-dbcheck");
  const std::string path = tmp / "fad.db";
  SECTION("not SQLite at all") {
    std::ofstream(path) << "this is a text file that happens to be called fad.db, and is long enough to have a header "
                           "of a hundred bytes or more\n";
    const std::string before = bytes_of(path);
    REQUIRE_THROWS_WITH(Store(path), Contains("is not an SQLite database"));
    CHECK(bytes_of(path) == before);
  }
  // However it is damaged, the user reads one line naming the file and what to do.
  auto check_refused = [&path](const std::string& before) {
    try {
      Store store(path);
      FAIL("a damaged database was opened");
    } catch (const StoreError& e) {
      const std::string what = e.what();
      INFO(what);
      CHECK_THAT(what, Contains(path + " is damaged") && Contains(".recover") && !Contains("\n"));
    }
    CHECK(bytes_of(path) == before);
  };
  SECTION("a fad database with damaged pages") {
    {
      Store store(path);
      BuildRecord b;
      b.created_at = "2026-01-01T00:00:00Z";
      std::vector<UnitRecord> units(40);
      for (std::size_t i = 0; i < units.size(); ++i) {
        units[i].name = "unit_" + std::to_string(i);
        units[i].argv = std::vector<std::string>(20, std::string(100, 'x'));
      }
      store.create_build(b, units);
      store.db().exec("PRAGMA wal_checkpoint(TRUNCATE)");
    }
    // Scribble over the middle of the file: b-tree pages, not the header.
    {
      std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
      f.seekp(static_cast<std::streamoff>(fs::file_size(path) / 2));
      const std::string junk(8192, '\x5a');
      f.write(junk.data(), static_cast<std::streamsize>(junk.size()));
    }
    check_refused(bytes_of(path));
  }
  SECTION("a fad database whose schema page or first table page is damaged") {
    {
      Store store(path);
      store.db().exec("PRAGMA wal_checkpoint(TRUNCATE)");
    }
    // Past the 100-byte file header: the schema's b-tree (page 1), or the
    // start of page 2. Damage there stops the check itself.
    const std::streamoff at = GENERATE(std::streamoff{100}, std::streamoff{4096});
    {
      std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
      f.seekp(at);
      const std::string junk(64, '\x5a');
      f.write(junk.data(), static_cast<std::streamsize>(junk.size()));
    }
    check_refused(bytes_of(path));
  }
  SECTION("a fad database with a table dropped by hand") {
    {
      Store store(path);
      store.db().exec("DROP TABLE unit_events; PRAGMA wal_checkpoint(TRUNCATE)");
    }
    try {
      Store store(path);
      FAIL("a database without its unit_events table was opened");
    } catch (const StoreError& e) {
      CHECK_THAT(e.what(), StartsWith(path + " is damaged (its table unit_events is missing)"));
    }
  }
}

}  // namespace fad
