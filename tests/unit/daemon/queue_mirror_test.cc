// The queue mirror over a real SQLite file: the store marks the builds whose
// queue changed, and the mirror re-reads those (and only those) until its
// periodic whole reload.
#include <catch2/catch.hpp>

#include "daemon/queue_mirror.h"
#include "daemon/store.h"
#include "fakes.h"
#include "store_rows.h"

namespace fad {
namespace {

using test::make_build;
using test::make_unit;
using test::TempDir;

using Ids = std::set<std::int64_t>;

UnitRecord make_link(int seq) {
  auto u = make_unit("link", seq);
  u.kind = UnitKind::link;
  return u;
}

}  // namespace

TEST_CASE("store: take_changed_builds names builds whose queue changed, not reasons or measurements", "[store]") {
  TempDir tmp("fad-store");
  Store store(tmp / "fad.db");
  const auto a = store.create_build(make_build("a"), {make_unit("u0", 0), make_unit("u1", 1)});
  const auto b = store.create_build(make_build("b"), {make_unit("u0", 0)});
  CHECK(store.take_changed_builds() == Ids{a, b});
  CHECK(store.take_changed_builds().empty());

  const auto units = store.units(a);
  // What the scheduler writes each pass, and what running units report, mark nothing.
  store.set_wait_reasons({{units[0].id, "needs 4.0 GiB"}});
  store.raise_build_peak(a, 1 << 20);
  CHECK(store.take_changed_builds().empty());
  store.start_unit(units[0].id, 2, 1000, "2026-01-01T00:00:01Z");
  CHECK(store.take_changed_builds() == Ids{a});
  store.set_unit_pgid(units[0].id, 4242, std::nullopt);
  CHECK(store.take_changed_builds().empty());
  store.requeue_unit(units[0].id, 4000, 5000);
  CHECK(store.take_changed_builds() == Ids{a});
  store.start_unit(units[0].id, 2, 1000, "2026-01-01T00:00:02Z");
  store.finish_unit(units[0].id, UnitState::succeeded, 0, 900, 1.0, "2026-01-01T00:00:03Z", std::nullopt);
  CHECK(store.take_changed_builds() == Ids{a});

  // Any change to a queued unit, by whatever statement, and any change of a build's state.
  store.db().exec("UPDATE units SET prior_peak = 7 WHERE id = " + std::to_string(units[1].id));
  store.set_build_state(b, BuildState::paused, std::nullopt);
  CHECK(store.take_changed_builds() == Ids{a, b});
}

TEST_CASE("queue mirror: re-reads only the builds that changed, and everything every 30 s", "[store]") {
  TempDir tmp("fad-store");
  Store store(tmp / "fad.db");
  const auto a = store.create_build(make_build("a"), {make_unit("u0", 0), make_unit("u1", 1), make_link(2)});
  const auto b = store.create_build(make_build("b"), {make_unit("u0", 0)});
  QueueMirror mirror;
  mirror.refresh(store, 0);
  REQUIRE(mirror.builds().size() == 2);
  REQUIRE(mirror.queues()[a].units.size() == 3);
  CHECK_FALSE(mirror.queues()[a].compiles_done);
  const auto units = store.units(a);

  // A change no mark covers (a wait reason) is not re-read until the whole reload.
  store.set_wait_reasons({{mirror.queues()[b].units[0].id, "needs 4.0 GiB"}});
  mirror.refresh(store, 1);
  CHECK(mirror.queues()[b].units[0].wait_reason.empty());

  // A started unit leaves its build's queue; the other build is not re-read.
  store.start_unit(units[0].id, 1, 1000, "2026-01-01T00:00:01Z");
  mirror.refresh(store, 2);
  REQUIRE(mirror.queues()[a].units.size() == 2);
  CHECK(mirror.queues()[a].units[0].id == units[1].id);
  CHECK(mirror.queues()[b].units[0].wait_reason.empty());

  // Once both compiles succeed, the link may start.
  for (const auto& u : {units[0], units[1]}) {
    if (u.id != units[0].id) store.start_unit(u.id, 1, 1000, "2026-01-01T00:00:02Z");
    store.finish_unit(u.id, UnitState::succeeded, 0, 900, 1.0, "2026-01-01T00:00:03Z", std::nullopt);
  }
  mirror.refresh(store, 3);
  REQUIRE(mirror.queues()[a].units.size() == 1);
  CHECK(mirror.queues()[a].units[0].kind == UnitKind::link);
  CHECK(mirror.queues()[a].compiles_done);

  mirror.refresh(store, 3 + QueueMirror::kFullReloadS);
  CHECK(mirror.queues()[b].units[0].wait_reason == "needs 4.0 GiB");

  // A final build leaves the mirror.
  store.set_build_state(b, BuildState::cancelled, "2026-01-01T00:00:04Z");
  mirror.refresh(store, 40);
  REQUIRE(mirror.builds().size() == 1);
  CHECK(mirror.builds()[0].id == a);
  CHECK(mirror.queues().count(b) == 0);
}

}  // namespace fad
