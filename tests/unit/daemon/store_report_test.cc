// The Store's report data over a real SQLite file: unit attempts and events
// per build, machine samples by time, when a build first ran, and the
// migration from a schema 2 database.
#include <catch2/catch.hpp>

#include "daemon/sqlite.h"
#include "daemon/store.h"
#include "fakes.h"

namespace fad {
namespace {

using test::TempDir;

std::int64_t one_unit_build(Store& store, const std::string& unit = "u0") {
  BuildRecord b;
  b.name = "b";
  b.archs = {"9.0"};
  b.nvcc = "/nvcc";
  b.created_at = "2026-01-01T00:00:00Z";
  UnitRecord u;
  u.name = unit;
  u.source = "src/u.cu";
  u.output_path = "/o";
  u.log_path = "/l";
  return store.create_build(b, {u});
}

}  // namespace

TEST_CASE("store: attempts and events are kept per build, in order", "[store]") {
  TempDir tmp("fad-store");
  Store store(tmp / "fad.db");
  const auto b1 = one_unit_build(store);
  const auto b2 = one_unit_build(store);
  const auto u1 = store.units(b1).at(0).id;
  const auto u2 = store.units(b2).at(0).id;
  store.add_unit_attempt({u1, 1, 100.5, 110.25, "requeued", 2, 1000, 1500, "0:1000,1:1500;9.75"});
  store.add_unit_attempt({u2, 1, 200, 201, "succeeded", 1, 10, 20, "0:20;1"});
  store.add_unit_attempt({u1, 2, 120, 130, "succeeded", 1, 1875, 1700, "0:1700;10"});
  store.add_unit_event({u1, 105, "suspend", "memory pressure"});
  store.add_unit_event({u1, 107, "resume", ""});
  store.add_unit_event({u2, 200.5, "pause", ""});

  const auto attempts = store.unit_attempts(b1);
  REQUIRE(attempts.size() == 2);
  CHECK(attempts[0].unit_id == u1);
  CHECK(attempts[0].attempt == 1);
  CHECK(attempts[0].started_at == Approx(100.5));
  CHECK(attempts[0].ended_at == Approx(110.25));
  CHECK(attempts[0].outcome == "requeued");
  CHECK(attempts[0].threads == 2);
  CHECK(attempts[0].estimate_bytes == 1000);
  CHECK(attempts[0].peak_bytes == 1500);
  CHECK(attempts[0].points == "0:1000,1:1500;9.75");
  CHECK(attempts[1].attempt == 2);
  const auto events = store.unit_events(b1);
  REQUIRE(events.size() == 2);
  CHECK(events[0].kind == "suspend");
  CHECK(events[0].detail == "memory pressure");
  CHECK(events[0].at == Approx(105));
  CHECK(events[1].kind == "resume");
  CHECK(store.unit_attempts(b2).size() == 1);
  CHECK(store.unit_events(b2).size() == 1);

  // Deleting a build's record takes its units' samples and events along.
  CHECK(store.delete_build(b1) == 1);
  CHECK_FALSE(store.build(b1));
  for (const char* table : {"unit_samples", "unit_events"}) {
    auto left = store.db().prepare(std::string("SELECT count(*) FROM ") + table + " WHERE unit_id = ?");
    left.bind(1, u1).step();
    CHECK(left.int64(0) == 0);
  }
  CHECK(store.unit_attempts(b2).size() == 1);
  CHECK(store.unit_events(b2).size() == 1);
}

TEST_CASE("store: a unit keeps only its latest events", "[store]") {
  TempDir tmp("fad-store");
  Store store(tmp / "fad.db");
  const auto b1 = one_unit_build(store);
  const auto b2 = one_unit_build(store);
  const auto u1 = store.units(b1).at(0).id;
  const auto u2 = store.units(b2).at(0).id;
  store.add_unit_event({u2, 1, "pause", "other unit"});
  for (std::size_t i = 0; i < kMaxEventsPerUnit + 50; ++i)
    store.add_unit_event({u1, static_cast<double>(i), i % 2 ? "unpause" : "pause", ""});
  const auto events = store.unit_events(b1);
  REQUIRE(events.size() == kMaxEventsPerUnit);
  CHECK(events.front().at == Approx(50));  // the oldest went
  CHECK(events.back().at == Approx(kMaxEventsPerUnit + 49));
  CHECK(store.unit_events(b2).size() == 1);  // another unit's are its own
}

TEST_CASE("store: machine samples between two times, with capacity", "[store]") {
  TempDir tmp("fad-store");
  Store store(tmp / "fad.db");
  for (const char* at :
       {"2026-01-01T00:00:00Z", "2026-01-01T00:00:05Z", "2026-01-01T00:00:10Z", "2026-01-01T00:01:00Z"})
    store.add_sample(MemorySample{at, 64, 60, 0, 3, 4, std::nullopt, 50});
  const auto s = store.samples_between("2026-01-01T00:00:05Z", "2026-01-01T00:00:10Z");
  REQUIRE(s.size() == 2);
  CHECK(s[0].at == "2026-01-01T00:00:05Z");
  CHECK(s[1].at == "2026-01-01T00:00:10Z");
  CHECK(s[0].capacity == 50);
  CHECK(s[0].fad_bytes == 3);
  CHECK_FALSE(s[0].psi_some_avg10);
}

TEST_CASE("store: a build's start time is its first unit's", "[store]") {
  TempDir tmp("fad-store");
  Store store(tmp / "fad.db");
  const auto id = one_unit_build(store);
  CHECK_FALSE(store.build_started_at(id));
  store.mark_build_started(id, "2026-01-01T00:00:07Z");
  store.mark_build_started(id, "2026-01-01T00:09:00Z");  // a later unit, or a retry
  CHECK(store.build_started_at(id) == std::optional<std::string>("2026-01-01T00:00:07Z"));
  CHECK_FALSE(store.build_started_at(id + 1));
}

TEST_CASE("store: a schema 6 database migrates to the report tables and keeps its rows", "[store]") {
  TempDir tmp("fad-store");
  const std::string path = tmp / "fad.db";
  {
    Store store(path);
    one_unit_build(store);
    store.add_sample(MemorySample{"2026-01-01T00:00:00Z", 64, 60, 0, 3, 4, std::nullopt, 50});
    // Back to what a fadd of schema 6 left: no report tables or columns.
    store.db().exec(
        "DROP TABLE unit_samples; DROP TABLE unit_events; ALTER TABLE builds DROP COLUMN started_at; "
        "ALTER TABLE samples DROP COLUMN capacity; ALTER TABLE units DROP COLUMN node; "
        "ALTER TABLE units DROP COLUMN peak_source; ALTER TABLE builds DROP COLUMN opener_pid; "
        "ALTER TABLE builds DROP COLUMN opener_start; ALTER TABLE units DROP COLUMN scope; "
        "ALTER TABLE unit_history DROP COLUMN scope; ALTER TABLE builds DROP COLUMN supplementary_gids; "
        "ALTER TABLE units DROP COLUMN pgid_start; DROP INDEX units_by_build_seq; DROP INDEX units_by_build_state; "
        "DROP INDEX builds_by_finish_seq; ALTER TABLE builds DROP COLUMN finish_seq; "
        "PRAGMA user_version = 6;");
  }
  Store store(path);
  CHECK(store.schema_version() == kSchemaVersion);
  const auto builds = store.active_builds();
  REQUIRE(builds.size() == 1);
  CHECK_FALSE(store.build_started_at(builds[0].id));
  const auto samples = store.samples_between("2026-01-01T00:00:00Z", "2026-01-01T00:00:00Z");
  REQUIRE(samples.size() == 1);
  CHECK(samples[0].capacity == 0);  // unknown for rows older than the column
  store.add_unit_attempt({store.units(builds[0].id)[0].id, 1, 1, 2, "succeeded", 1, 1, 1, "0:1;1"});
  CHECK(store.unit_attempts(builds[0].id).size() == 1);
}

}  // namespace fad
