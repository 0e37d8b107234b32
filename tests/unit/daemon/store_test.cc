// Store over a real SQLite file in a temp dir: schema versioning, the unit
// state transitions and the crash-recovery queries.
#include <catch2/catch.hpp>

#include <set>

#include <algorithm>

#include "daemon/sqlite.h"
#include "daemon/store.h"
#include "policy/estimator.h"
#include "fakes.h"
#include "store_rows.h"

namespace fad {
namespace {

using test::make_build;
using test::make_unit;
using test::TempDir;

std::int64_t make_three_unit_build(Store& store) {
  return store.create_build(make_build(), {make_unit("u0", 0), make_unit("u1", 1), make_unit("u2", 2)});
}

int in_state(Store& store, std::int64_t build, UnitState state) {
  return store.unit_summary(build).by_state[static_cast<int>(state)];
}

std::int64_t count_rows(Store& store, const std::string& table) {
  auto st = store.db().prepare("SELECT count(*) FROM " + table);
  st.step();
  return st.int64(0);
}

}  // namespace

TEST_CASE("store: a new database is at the current schema version, in WAL mode", "[store]") {
  TempDir tmp("fad-store");
  Store store(tmp / "fad.db");
  CHECK(store.schema_version() == kSchemaVersion);
  auto st = store.db().prepare("PRAGMA journal_mode");
  REQUIRE(st.step());
  CHECK(st.text(0) == "wal");
}

TEST_CASE("store: reopening keeps builds, units and meta", "[store]") {
  TempDir tmp("fad-store");
  std::int64_t id = 0;
  {
    Store store(tmp / "fad.db");
    id = make_three_unit_build(store);
    store.set_meta("boot_id", "abc");
  }
  Store again(tmp / "fad.db");
  CHECK(again.schema_version() == kSchemaVersion);
  auto b = again.build(id);
  REQUIRE(b);
  CHECK(b->name == "b");
  CHECK(b->archs == std::vector<std::string>{"9.0", "12.0"});
  CHECK(again.units(id).size() == 3);
  CHECK(again.meta("boot_id") == std::optional<std::string>("abc"));
}

TEST_CASE("store: a database from a newer fadd is refused, naming its version", "[store]") {
  TempDir tmp("fad-store");
  { Store store(tmp / "fad.db"); }
  {
    Database db(tmp / "fad.db");
    db.exec("PRAGMA user_version = 99");
  }
  REQUIRE_THROWS_AS(Store(tmp / "fad.db"), StoreError);
  REQUIRE_THROWS_WITH(Store(tmp / "fad.db"), Catch::Contains("schema version 99 is newer"));
}

TEST_CASE("store: create_build replaces {build} in paths and argv and queues every unit", "[store]") {
  TempDir tmp("fad-store");
  Store store(tmp / "fad.db");
  const auto first = make_three_unit_build(store);
  const auto id = make_three_unit_build(store);
  CHECK(id == first + 1);
  auto units = store.units(id);
  REQUIRE(units.size() == 3);
  const std::string dir = "/state/builds/" + std::to_string(id);
  for (int i = 0; i < 3; ++i) {
    const auto& u = units[static_cast<std::size_t>(i)];
    const std::string name = "u" + std::to_string(i);
    CHECK(u.seq == i);
    CHECK(u.name == name);
    CHECK(u.build_id == id);
    CHECK(u.state == UnitState::queued);
    CHECK(u.attempts == 0);
    CHECK(u.output_path == dir + "/obj/" + name + ".o");
    CHECK(u.log_path == dir + "/logs/" + name + ".log");
    CHECK(u.argv ==
          std::vector<std::string>{"/opt/fake/nvcc", "-c", "src/" + name + ".cu", "-o", dir + "/obj/" + name + ".o"});
    CHECK(u.prior_peak == 1000);
    CHECK(u.prior_duration_s == Approx(2.5));
    CHECK(u.key == "key-" + name);
    CHECK_FALSE(u.pgid);
  }
  auto b = store.build(id);
  REQUIRE(b);
  CHECK(b->state == BuildState::queued);
  CHECK_FALSE(b->finished_at);
  CHECK_FALSE(b->artifact);
  CHECK_FALSE(store.build(id + 100));
}

TEST_CASE("store: start and finish a unit", "[store]") {
  TempDir tmp("fad-store");
  Store store(tmp / "fad.db");
  const auto id = make_three_unit_build(store);
  const auto uid = store.units(id)[0].id;

  store.start_unit(uid, 2, 5000, "2026-01-01T00:00:01Z");
  store.set_unit_pgid(uid, 4242, std::nullopt);
  auto u = store.unit(uid);
  REQUIRE(u);
  CHECK(u->state == UnitState::running);
  CHECK(u->attempts == 1);
  CHECK(u->threads == 2);
  CHECK(u->estimate_bytes == 5000);
  CHECK(u->started_at == std::optional<std::string>("2026-01-01T00:00:01Z"));
  CHECK(u->pgid == std::optional<std::int64_t>(4242));

  store.finish_unit(uid, UnitState::succeeded, 0, 7777, 3.5, "2026-01-01T00:00:05Z", std::nullopt);
  u = store.unit(uid);
  CHECK(u->state == UnitState::succeeded);
  CHECK(u->exit_code == std::optional<int>(0));
  CHECK(u->peak_bytes == 7777);
  CHECK(u->duration_s == Approx(3.5));
  CHECK(u->finished_at == std::optional<std::string>("2026-01-01T00:00:05Z"));
  CHECK_FALSE(u->pgid);
  CHECK(store.build(id)->peak_bytes == 7777);
  CHECK(store.history().empty());

  // A second start (a retry) counts another attempt and clears the old end.
  store.start_unit(uid, 1, 10, "2026-01-01T00:01:00Z");
  u = store.unit(uid);
  CHECK(u->attempts == 2);
  CHECK_FALSE(u->exit_code);
  CHECK_FALSE(u->finished_at);

  // The build peak only ever rises.
  store.raise_build_peak(id, 10);
  CHECK(store.build(id)->peak_bytes == 7777);
  store.raise_build_peak(id, 9000);
  CHECK(store.build(id)->peak_bytes == 9000);
}

TEST_CASE("store: finish_unit records history in the same transaction", "[store]") {
  TempDir tmp("fad-store");
  Store store(tmp / "fad.db");
  const auto id = make_three_unit_build(store);
  const auto units = store.units(id);
  HistoryRecord h{"key", "src/u0.cu", "hash", "-O3", "90", "V13", "fam", 1, 2, "0:100;1.5"};

  store.start_unit(units[0].id, 2, 100, "t0");
  store.finish_unit(units[0].id, UnitState::succeeded, 0, 100, 1.5, "t1", h);
  auto hist = store.history();
  REQUIRE(hist.size() == 1);
  CHECK(hist[0].key == "key");
  CHECK(hist[0].source == "src/u0.cu");
  CHECK(hist[0].content_hash == "hash");
  CHECK(hist[0].flags == "-O3");
  CHECK(hist[0].archs == "90");
  CHECK(hist[0].compiler == "V13");
  CHECK(hist[0].family == "fam");
  CHECK(hist[0].arch_count == 1);
  CHECK(hist[0].threads == 2);
  CHECK(hist[0].profile == "0:100;1.5");

  // When the history insert fails, the unit's end is not recorded either.
  store.db().exec(
      "CREATE TRIGGER refuse_history BEFORE INSERT ON unit_history BEGIN SELECT RAISE(ABORT, 'refused'); END;");
  store.start_unit(units[1].id, 2, 100, "t0");
  CHECK_THROWS_AS(store.finish_unit(units[1].id, UnitState::succeeded, 0, 99999, 1.5, "t1", h), StoreError);
  auto u = store.unit(units[1].id);
  CHECK(u->state == UnitState::running);
  CHECK(u->peak_bytes == 0);
  CHECK_FALSE(u->finished_at);
  CHECK(store.build(id)->peak_bytes == 100);
  CHECK(store.history().size() == 1);
}

TEST_CASE("store: requeue_unit goes back to the queue keeping the highest floor and the attempt's peak", "[store]") {
  TempDir tmp("fad-store");
  Store store(tmp / "fad.db");
  const auto id = make_three_unit_build(store);
  const auto uid = store.units(id)[0].id;

  store.start_unit(uid, 1, 100, "t0");
  store.set_unit_pgid(uid, 50, std::nullopt);
  store.requeue_unit(uid, 400, 500);
  auto u = store.unit(uid);
  CHECK(u->state == UnitState::queued);
  CHECK(u->requeued_peak == 500);
  // Shown as its latest attempt's peak (bug: 0 B, its row's peak written
  // only when a unit finished).
  CHECK(u->peak_bytes == 400);
  CHECK_FALSE(u->pgid);
  CHECK_FALSE(u->started_at);
  CHECK(u->attempts == 1);

  store.start_unit(uid, 1, 100, "t1");
  store.requeue_unit(uid, 240, 300);
  CHECK(store.unit(uid)->requeued_peak == 500);
  CHECK(store.unit(uid)->peak_bytes == 240);

  store.start_unit(uid, 1, 100, "t2");
  store.requeue_unit(uid, 640, 800);
  CHECK(store.unit(uid)->requeued_peak == 800);

  // Only running units are requeued.
  store.start_unit(uid, 1, 100, "t3");
  store.finish_unit(uid, UnitState::succeeded, 0, 1, 1, "t4", std::nullopt);
  store.requeue_unit(uid, 4000, 5000);
  CHECK(store.unit(uid)->state == UnitState::succeeded);
  CHECK(store.unit(uid)->requeued_peak == 800);
}

TEST_CASE("store: recover_running_units requeues running units and returns their process groups", "[store]") {
  TempDir tmp("fad-store");
  Store store(tmp / "fad.db");
  const auto a = make_three_unit_build(store);
  const auto b = make_three_unit_build(store);
  auto ua = store.units(a);
  auto ub = store.units(b);
  store.start_unit(ua[0].id, 1, 1, "t");
  store.set_unit_pgid(ua[0].id, 111, 9001);
  store.start_unit(ub[1].id, 1, 1, "t");
  store.set_unit_pgid(ub[1].id, 222, std::nullopt);  // started before schema 11
  store.start_unit(ub[2].id, 1, 1, "t");             // started, crashed before its pgid was recorded
  store.start_unit(ua[1].id, 1, 1, "t");
  store.finish_unit(ua[1].id, UnitState::succeeded, 0, 1, 1, "t", std::nullopt);

  CHECK(store.recover_running_units() ==
        std::vector<LeftRunning>{{111, a, 9001, false, ua[0].id}, {222, b, std::nullopt, false, ub[1].id}});
  for (auto uid : {ua[0].id, ub[1].id, ub[2].id}) {
    auto u = store.unit(uid);
    CHECK(u->state == UnitState::queued);
    CHECK_FALSE(u->pgid);
    CHECK_FALSE(u->started_at);
  }
  CHECK(store.unit(ua[1].id)->state == UnitState::succeeded);
  CHECK(store.recover_running_units().empty());
}

TEST_CASE("store: recover_running_units leaves running the units the daemon takes back", "[store]") {
  TempDir tmp("fad-store");
  Store store(tmp / "fad.db");
  const auto a = make_three_unit_build(store);
  auto units = store.units(a);
  store.start_unit(units[0].id, 2, 3, "2026-01-02T03:04:05Z");
  store.set_unit_pgid(units[0].id, 111, 9001);
  store.start_unit(units[1].id, 1, 1, "t");
  store.set_unit_pgid(units[1].id, 222, 9002);
  const auto left = store.recover_running_units([](const LeftRunning& l) { return l.pgid == 111; });
  CHECK(left.size() == 2);  // every one is reported, kept or not
  const auto kept = store.unit(units[0].id);
  CHECK(kept->state == UnitState::running);
  CHECK(kept->pgid == std::optional<std::int64_t>(111));
  CHECK(kept->started_at == std::optional<std::string>("2026-01-02T03:04:05Z"));
  CHECK(kept->attempts == 1);
  CHECK(store.unit(units[1].id)->state == UnitState::queued);
  // At the next start, one not taken back goes back to the queue like the rest.
  CHECK(store.recover_running_units().size() == 1);
  CHECK(store.unit(units[0].id)->state == UnitState::queued);
}

TEST_CASE("store: set_pending_units touches queued units, and running ones when asked", "[store]") {
  TempDir tmp("fad-store");
  Store store(tmp / "fad.db");
  const auto id = make_three_unit_build(store);
  const auto other = make_three_unit_build(store);
  auto units = store.units(id);
  store.start_unit(units[0].id, 1, 1, "t");
  store.set_unit_pgid(units[0].id, 7, std::nullopt);
  store.start_unit(units[1].id, 1, 1, "t");
  store.finish_unit(units[1].id, UnitState::succeeded, 0, 1, 1, "t", std::nullopt);

  CHECK(store.set_pending_units(id, UnitState::cancelled, false) == 1);
  CHECK(store.unit(units[0].id)->state == UnitState::running);
  CHECK(store.unit(units[1].id)->state == UnitState::succeeded);
  CHECK(store.unit(units[2].id)->state == UnitState::cancelled);

  CHECK(store.set_pending_units(id, UnitState::cancelled, true) == 1);
  CHECK(store.unit(units[0].id)->state == UnitState::cancelled);
  CHECK_FALSE(store.unit(units[0].id)->pgid);
  CHECK(store.unit(units[1].id)->state == UnitState::succeeded);

  for (const auto& u : store.units(other)) CHECK(u.state == UnitState::queued);
}

TEST_CASE("store: has_unfinished_units and unit_summary count one build's units only", "[store]") {
  TempDir tmp("fad-store");
  Store store(tmp / "fad.db");
  const auto id = make_three_unit_build(store);
  const auto other = make_three_unit_build(store);
  auto units = store.units(id);
  CHECK(store.has_unfinished_units(id));
  CHECK(in_state(store, id, UnitState::queued) == 3);
  store.start_unit(units[0].id, 1, 1, "t");
  store.finish_unit(units[0].id, UnitState::failed, 1, 1, 1, "t", std::nullopt);
  store.start_unit(units[1].id, 1, 1, "t");
  CHECK(in_state(store, id, UnitState::failed) == 1);
  CHECK(in_state(store, id, UnitState::running) == 1);
  CHECK(in_state(store, id, UnitState::queued) == 1);
  store.finish_unit(units[1].id, UnitState::succeeded, 0, 1, 1, "t", std::nullopt);
  CHECK(store.has_unfinished_units(id));  // u2 still queued
  store.set_pending_units(id, UnitState::cancelled, false);
  CHECK_FALSE(store.has_unfinished_units(id));
  CHECK(in_state(store, id, UnitState::cancelled) == 1);
  // The other build's queued units were never counted.
  CHECK(store.has_unfinished_units(other));
  CHECK(in_state(store, other, UnitState::failed) == 0);
  CHECK(in_state(store, other, UnitState::queued) == 3);
  // A state this fadd does not know (a newer one's row) counts as failed, as
  // reading the unit shows it; a cache hit is counted once.
  auto others = store.units(other);
  store.db().exec("UPDATE units SET state = 'bogus' WHERE id = " + std::to_string(others[0].id));
  store.mark_unit_cached(others[1].id, "t");
  const UnitSummary summary = store.unit_summary(other);
  CHECK(summary.by_state[static_cast<int>(UnitState::failed)] == 1);
  CHECK(store.unit(others[0].id)->state == UnitState::failed);
  CHECK(summary.by_state[static_cast<int>(UnitState::succeeded)] == 1);
  CHECK(summary.cache_hits == 1);
  CHECK(summary.total == 3);
}

TEST_CASE("store: requeue_failed_units requeues failed and cancelled units only", "[store]") {
  TempDir tmp("fad-store");
  Store store(tmp / "fad.db");
  const auto id = make_three_unit_build(store);
  auto units = store.units(id);
  store.start_unit(units[0].id, 1, 1, "t");
  store.finish_unit(units[0].id, UnitState::failed, 1, 1, 1, "t", std::nullopt);
  store.start_unit(units[1].id, 1, 1, "t");
  store.finish_unit(units[1].id, UnitState::succeeded, 0, 1, 1, "t", std::nullopt);
  store.set_pending_units(id, UnitState::cancelled, false);

  CHECK(store.requeue_failed_units(id) == 2);
  auto u0 = store.unit(units[0].id);
  CHECK(u0->state == UnitState::queued);
  CHECK_FALSE(u0->exit_code);
  CHECK_FALSE(u0->finished_at);
  CHECK(store.unit(units[1].id)->state == UnitState::succeeded);
  CHECK(store.unit(units[2].id)->state == UnitState::queued);
  CHECK(store.requeue_failed_units(id) == 0);
}

TEST_CASE("store: wait reasons are stored per unit", "[store]") {
  TempDir tmp("fad-store");
  Store store(tmp / "fad.db");
  const auto id = make_three_unit_build(store);
  const auto uid = store.units(id)[2].id;
  store.set_wait_reasons({{uid, "needs 4.0 GiB"}});
  CHECK(store.unit(uid)->wait_reason == "needs 4.0 GiB");
  store.set_wait_reasons({{uid, "needs 4.0 GiB"}});
  CHECK(store.unit(uid)->wait_reason == "needs 4.0 GiB");
  store.start_unit(uid, 1, 1, "t");
  CHECK(store.unit(uid)->wait_reason.empty());
  // A tick's worth at once.
  const auto units = store.units(id);
  store.set_wait_reasons({{units[0].id, "a"}, {units[1].id, "b"}});
  CHECK(store.unit(units[0].id)->wait_reason == "a");
  CHECK(store.unit(units[1].id)->wait_reason == "b");
  store.set_wait_reasons({});
  CHECK(store.unit(units[1].id)->wait_reason == "b");
}

TEST_CASE("store: add_unit numbers units after the last and keeps names and logs unique", "[store]") {
  TempDir tmp("fad-store");
  Store store(tmp / "fad.db");
  const auto id = store.create_build(make_build(), {make_unit("x.o", 0)});
  auto first = make_unit("x.o", 0);
  first.log_path.clear();
  const auto a = store.add_unit(id, first, "/state/builds/1/logs");
  auto second = make_unit("x.o", 0);
  second.log_path.clear();
  const auto b = store.add_unit(id, second, "/state/builds/1/logs");
  // Two compiles writing x.o (other directories, or a rerun) are two units.
  CHECK(first.name == "x.o#2");
  CHECK(second.name == "x.o#3");
  CHECK(second.log_path == "/state/builds/1/logs/x.o#3.log");
  CHECK(store.unit(a)->seq == 1);
  CHECK(store.unit(b)->seq == 2);
  CHECK(store.unit(b)->log_path == second.log_path);
  CHECK(store.unit(b)->state == UnitState::queued);
  // '%' and '_' in a name are no wildcards: "%" is not taken for a "x.o#N".
  auto percent = make_unit("%", 0);
  store.add_unit(id, percent, "/state/builds/1/logs");
  CHECK(percent.name == "%");
  // A log's file name fits NAME_MAX and holds no controls, and stays unique.
  auto file_name = [](const UnitRecord& u) { return u.log_path.substr(u.log_path.rfind('/') + 1); };
  auto longest = make_unit(std::string(255, 'n'), 0);
  store.add_unit(id, longest, "/state/builds/1/logs");
  CHECK(longest.name.size() == 255);
  CHECK(file_name(longest).size() <= 255);
  auto twin = make_unit(std::string(255, 'n'), 0);
  store.add_unit(id, twin, "/state/builds/1/logs");
  CHECK(file_name(twin) != file_name(longest));
  auto odd = make_unit("o\n\xC2\x85.o", 0);
  store.add_unit(id, odd, "/state/builds/1/logs");
  CHECK(odd.name == "o\n\xC2\x85.o");  // the name itself is kept
  CHECK(file_name(odd) == "o??.o~" + std::to_string(odd.seq) + ".log");
  // A plain name equal to that file's stem gets a log of its own.
  auto lookalike = make_unit("o??.o~" + std::to_string(odd.seq), 0);
  store.add_unit(id, lookalike, "/state/builds/1/logs");
  CHECK(lookalike.log_path != odd.log_path);
  // A compile whose own output is called "z#3" holds that number: the "z"
  // that would be third steps past it instead of failing on the unique name.
  auto add = [&](const std::string& name) {
    auto u = make_unit(name, 0);
    store.add_unit(id, u, "/state/builds/1/logs");
    return u.name;
  };
  CHECK(add("z") == "z");
  CHECK(add("z#3") == "z#3");
  CHECK(add("z") == "z#2");
  CHECK(add("z") == "z#4");
  for (int i = 5; i <= 40; ++i) CHECK(add("z") == "z#" + std::to_string(i));
  // Outputs named to take every power of two (a client's choice): the next
  // "w" still gets a number of its own, with no overflow on the way.
  CHECK(add("w") == "w");
  for (int k = 1; k <= 62; ++k) add("w#" + std::to_string(std::int64_t{1} << k));
  const std::string w = add("w");
  REQUIRE(w.rfind("w#", 0) == 0);
  const long long n = std::stoll(w.substr(2));
  CHECK(n > 2);     // not an overflowed, negative number
  CHECK(n < 1000);  // counted up from its place in the build
  CHECK(add("w") != w);
  std::set<std::string> logs;
  for (const auto& u : store.units(id)) logs.insert(u.log_path);
  CHECK(logs.size() == store.units(id).size());
}

TEST_CASE("store: status_builds and finished_builds order", "[store]") {
  TempDir tmp("fad-store");
  Store store(tmp / "fad.db");
  std::vector<std::int64_t> ids;
  for (int i = 0; i < 6; ++i) ids.push_back(store.create_build(make_build("b" + std::to_string(i)), {}));
  store.set_build_state(ids[0], BuildState::succeeded, "t");
  store.set_build_state(ids[1], BuildState::failed, "t", "why");
  store.set_build_state(ids[2], BuildState::running, std::nullopt);
  store.set_build_state(ids[3], BuildState::cancelled, "t");
  store.set_build_state(ids[4], BuildState::paused, std::nullopt);
  // ids[5] stays queued.

  auto id_list = [](const std::vector<BuildRecord>& v) {
    std::vector<std::int64_t> out;
    for (const auto& b : v) out.push_back(b.id);
    return out;
  };
  CHECK(id_list(store.active_builds()) == std::vector<std::int64_t>{ids[2], ids[4], ids[5]});
  CHECK(id_list(store.finished_builds(10)) == std::vector<std::int64_t>{ids[3], ids[1], ids[0]});
  CHECK(id_list(store.finished_builds(2)) == std::vector<std::int64_t>{ids[3], ids[1]});
  CHECK(id_list(store.status_builds(1)) == std::vector<std::int64_t>{ids[2], ids[3], ids[4], ids[5]});
  CHECK(id_list(store.status_builds(10)) == ids);
  CHECK(store.build(ids[1])->error == "why");
  CHECK(store.build(ids[1])->finished_at == std::optional<std::string>("t"));
}

TEST_CASE("store: trim_samples keeps the newest samples", "[store]") {
  TempDir tmp("fad-store");
  Store store(tmp / "fad.db");
  for (int i = 0; i < 10; ++i) {
    MemorySample s;
    s.at = "s" + std::to_string(i);
    s.total = 100;
    s.available = static_cast<std::uint64_t>(i);
    if (i % 2) s.psi_some_avg10 = 1.5;
    store.add_sample(s);
  }
  CHECK(count_rows(store, "samples") == 10);
  store.trim_samples(3);
  auto st = store.db().prepare("SELECT at, available, psi_some_avg10 FROM samples ORDER BY id");
  std::vector<std::string> kept;
  while (st.step()) kept.push_back(st.text(0));
  CHECK(kept == std::vector<std::string>{"s7", "s8", "s9"});
  store.trim_samples(100);
  CHECK(count_rows(store, "samples") == 3);
}

TEST_CASE("store: meta values are upserted", "[store]") {
  TempDir tmp("fad-store");
  Store store(tmp / "fad.db");
  CHECK_FALSE(store.meta("boot_id"));
  store.set_meta("boot_id", "one");
  CHECK(store.meta("boot_id") == std::optional<std::string>("one"));
  store.set_meta("boot_id", "two");
  CHECK(store.meta("boot_id") == std::optional<std::string>("two"));
  CHECK(count_rows(store, "meta") == 1);
}

TEST_CASE("store: a unit restored from the compile cache is succeeded and cached, never started", "[store]") {
  TempDir tmp("fad-store");
  Store store(tmp / "fad.db");
  const auto id = make_three_unit_build(store);
  const auto units = store.units(id);
  CHECK_FALSE(units[0].cached);
  store.mark_unit_cached(units[0].id, "2026-01-01T00:00:02Z");
  auto u = store.unit(units[0].id);
  CHECK(u->state == UnitState::succeeded);
  CHECK(u->cached);
  CHECK(u->attempts == 0);
  CHECK(u->exit_code == std::optional<int>(0));
  CHECK(u->finished_at == std::optional<std::string>("2026-01-01T00:00:02Z"));
  // Only a queued unit: one already running or finished keeps its own record.
  store.start_unit(units[1].id, 1, 10, "2026-01-01T00:00:03Z");
  store.mark_unit_cached(units[1].id, "2026-01-01T00:00:04Z");
  CHECK(store.unit(units[1].id)->state == UnitState::running);
  CHECK_FALSE(store.unit(units[1].id)->cached);
}

}  // namespace fad

namespace fad {
namespace {

/// What the estimator learns from `rows`, as the engine loads them at start.
Estimator estimator_of(const std::vector<HistoryRecord>& rows) {
  Estimator est({5ull << 30, 120});
  for (const auto& h : rows) {
    auto profile = Profile::parse(h.profile);
    if (!profile) continue;
    est.learn(
        Observation{UnitKey{h.source, h.content_hash, h.flags, h.archs, h.compiler, h.family, h.arch_count, h.scope},
                    h.threads, *profile, h.origin == "imported"});
  }
  return est;
}

}  // namespace

TEST_CASE("store: history keeps the keys of each scope seen most recently, past the most one scope may have",
          "[store]") {
  test::TempDir tmp("fad-store");
  Store store(tmp / "fad.db");
  int mib = 0;
  auto add = [&](const std::string& scope, const std::string& key) {
    // Each its own profile: importing the same profile of a key twice is a no-op.
    HistoryRecord h{key, "a.cu", "hash", "-O3", "90", "V13", "f", 1, 1, "0:" + std::to_string(++mib << 20) + ";10"};
    h.recorded_at = "2026-01-01T00:00:00Z";
    REQUIRE(store.import_history(h));
    // Imports go to the shared scope; a user's own rows come from their units' ends.
    store.db().exec("UPDATE unit_history SET scope = '" + scope + "' WHERE id = last_insert_rowid()");
  };
  // A user naming ever new flags: k1..k5, then k2 again (seen recently).
  for (const char* key : {"k1", "k2", "k3", "k4", "k5", "k2"}) add("1000", key);
  for (const char* key : {"s1", "s2"}) add("", key);  // the shared scope: under the limit
  add("2000", "k1");                                  // another user's k1: their own scope
  CHECK(store.trim_history(5, 3) == 2);               // k1 and k3 of user 1000
  std::set<std::string> kept;
  for (const auto& h : store.history()) kept.insert(h.scope + "/" + h.key);
  CHECK(kept == std::set<std::string>{"1000/k2", "1000/k4", "1000/k5", "/s1", "/s2", "2000/k1"});
  CHECK(store.trim_history(5, 3) == 0);

  // A large import, newer than fadd's own measurements, never pushes them out:
  // the shared scope's local keys s1 and s2 stay, and the newest imported one.
  store.db().exec("UPDATE unit_history SET origin = 'local' WHERE scope = ''");
  for (const char* key : {"i1", "i2", "i3"}) add("", key);
  CHECK(store.trim_history(5, 3) == 2);
  kept.clear();
  for (const auto& h : store.history())
    kept.insert(h.scope + "/" + h.key + (h.origin == "imported" ? " imported" : ""));
  CHECK(kept == std::set<std::string>{"1000/k2 imported", "1000/k4 imported", "1000/k5 imported", "/s1", "/s2",
                                      "/i3 imported", "2000/k1 imported"});
}

TEST_CASE("store: history is trimmed to what the estimator can use, and the estimates do not change", "[store]") {
  test::TempDir tmp("fad-store");
  Store store(tmp / "fad.db");
  auto add = [&](const std::string& source, const std::string& family, int mib, bool imported) {
    HistoryRecord h{
        source + "\x1f", source, "hash", "-O3", "90",
        "V13",           family, 1,      1,     "0:" + std::to_string(static_cast<std::int64_t>(mib) << 20) + ";10"};
    // Imported, then made local: the store records local rows only as a
    // unit's end, and the origin is all that differs.
    h.recorded_at = "2026-01-01T00:00:00Z";
    REQUIRE(store.import_history(h));
    if (!imported) store.db().exec("UPDATE unit_history SET origin = 'local' WHERE id = last_insert_rowid()");
  };
  for (int i = 1; i <= 7; ++i) add("a.cu", "f", 100 * i, false);  // the two oldest go
  add("a.cu", "f", 5000, true);                                   // imported: behind any local row, go
  add("a.cu", "f", 6000, true);
  for (int i = 1; i <= 2; ++i) add("b.cu", "f", 300 * i, false);  // 2 local + 3 newest imported stay
  for (int i = 1; i <= 4; ++i) add("b.cu", "f", 1000 * i, true);
  add("a.cu", "g", 42, false);  // the same unit in another family: its own five
  const auto before = store.history();
  REQUIRE(before.size() == 16);

  CHECK(store.trim_history(5) == 5);
  const auto after = store.history();
  std::vector<std::string> kept;
  for (const auto& h : after) kept.push_back(h.source + "/" + h.family + "/" + h.profile + "/" + h.origin);
  CHECK(kept == std::vector<std::string>{
                    "a.cu/f/0:314572800;10/local", "a.cu/f/0:419430400;10/local", "a.cu/f/0:524288000;10/local",
                    "a.cu/f/0:629145600;10/local", "a.cu/f/0:734003200;10/local", "b.cu/f/0:314572800;10/local",
                    "b.cu/f/0:629145600;10/local", "b.cu/f/0:2097152000;10/imported", "b.cu/f/0:3145728000;10/imported",
                    "b.cu/f/0:4194304000;10/imported", "a.cu/g/0:44040192;10/local"});
  CHECK(store.trim_history(5) == 0);

  // Lossless: every estimate the old rows gave, the trimmed rows give.
  auto full = estimator_of(before), trimmed = estimator_of(after);
  for (const auto& h : before)
    for (int threads : {1, 2}) {
      const UnitKey k{h.source, h.content_hash, h.flags, h.archs, h.compiler, h.family, h.arch_count, h.scope};
      UnitKey sibling = k;
      sibling.source = "new.cu";  // same family, never seen: the family's estimate
      CHECK(full.estimate(k, threads, std::nullopt).peak() == trimmed.estimate(k, threads, std::nullopt).peak());
      CHECK(full.estimate(sibling, threads, std::nullopt).peak() ==
            trimmed.estimate(sibling, threads, std::nullopt).peak());
    }
}

TEST_CASE("store: unit views are the units without command lines. Counts by state read only an index", "[store]") {
  // Bug: status and report of a build of 10,000 launches read every unit's
  // 16 KiB command line on fadd's one event loop (seconds, for everyone).
  TempDir tmp("fad-store");
  Store store(tmp / "fad.db");
  auto u0 = make_unit("u0", 0);
  u0.argv = {"nvcc", "-c", std::string(16 * 1024, 'x'), "a.cu"};
  u0.flags = "-O3 -DBIG";
  const auto id = store.create_build(make_build(), {u0, make_unit("u1", 1)});
  const auto full = store.units(id);
  const auto views = store.unit_views(id);
  REQUIRE(views.size() == full.size());
  CHECK(full[0].argv.size() == 4);
  CHECK(full[0].flags == "-O3 -DBIG");
  for (std::size_t i = 0; i < views.size(); ++i) {
    CHECK(views[i].argv.empty());
    CHECK(views[i].flags == full[i].flags);  // part of the key a queued unit's estimate is shown for
    CHECK(views[i].id == full[i].id);
    CHECK(views[i].name == full[i].name);
    CHECK(views[i].state == full[i].state);
    CHECK(views[i].archs == full[i].archs);
    CHECK(views[i].scope == full[i].scope);
  }
  auto plan = store.db().prepare(
      "EXPLAIN QUERY PLAN SELECT state, COUNT(*), SUM(cached != 0) FROM units WHERE build_id = ? GROUP BY state");
  std::string details;
  while (plan.step()) details += plan.text(3) + "\n";
  CHECK_THAT(details, Catch::Contains("COVERING INDEX units_by_build_state"));
}

}  // namespace fad
