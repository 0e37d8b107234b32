// The engine feeding the policy: per-build budgets decided by the scheduler,
// paused builds that hold memory but not cores, estimates learnt from running
// siblings and reported in status, the last unit stopped while the machine is
// short, and history export and import.
#include <catch2/catch.hpp>

#include <signal.h>

#include "daemon/engine.h"
#include "fakes.h"

namespace fad {
namespace {

using Catch::Contains;
using Catch::StartsWith;
using test::EngineFixture;
namespace fs = std::filesystem;

constexpr std::uint64_t kMiB = 1ull << 20;

json unit_json(EngineFixture& f, std::int64_t build, const std::string& name) {
  StatusRequest req;
  req.id = build;
  auto r = f.engine->status(f.me, req);
  REQUIRE(r.ok);
  for (const auto& u : r.result["builds"][0]["unit_list"])
    if (u["name"] == name) return u;
  FAIL("no unit " << name);
  return {};
}

/// Opens a fad run build with `budget` and launches `n` compiles into it.
std::pair<std::int64_t, std::vector<std::int64_t>> launch_build(EngineFixture& f, std::uint64_t budget, int n) {
  OpenBuildRequest open;
  open.name = "run";
  open.command = "ninja";
  open.budget_bytes = budget;
  auto opened = f.engine->open_build(f.me, open);
  REQUIRE(opened.ok);
  const auto build = opened.result["id"].get<std::int64_t>();
  std::vector<std::int64_t> units;
  for (int i = 0; i < n; ++i) {
    const std::string src = f.tmp / ("src/k" + std::to_string(i) + ".cu");
    test::write_file(src, "__global__ void k" + std::to_string(i) + "() {}\n");
    LaunchRequest req;
    req.build_id = build;
    req.cwd = f.tmp.str();
    req.argv = {"nvcc", "-c", src, "-o", src + ".o"};
    req.source = src;
    req.output = src + ".o";
    req.archs = {"sm_90"};
    auto r = f.engine->launch(f.me, req);
    REQUIRE(r.ok);
    units.push_back(r.result["unit_id"].get<std::int64_t>());
  }
  return {build, units};
}

std::string poll_state(EngineFixture& f, std::int64_t unit) {
  auto r = f.engine->launch_poll(f.me, UnitRequest{unit});
  REQUIRE(r.ok);
  return r.result["state"].get<std::string>();
}

TEST_CASE("engine: a build's budget is the scheduler's, and refused units are not committed", "[engine]") {
  // Bug: the budget was applied after the scheduler decided, so the daemon's
  // committed bytes counted units the budget then refused.
  EngineFixture f;
  f.options.estimator.prior_per_thread = 100 * kMiB;
  f.make_engine().recover();
  auto [build, units] = launch_build(f, 150 * kMiB, 3);
  f.engine->tick();
  CHECK(poll_state(f, units[0]) == "admitted");
  CHECK(poll_state(f, units[1]) == "queued");
  CHECK(poll_state(f, units[2]) == "queued");
  auto status = f.engine->status(f.me, StatusRequest{});
  CHECK(status.result["daemon"]["memory"]["committed_bytes"] == 100 * kMiB);
  CHECK_THAT(f.store->unit(units[1])->wait_reason, StartsWith("build budget 150.0 MiB reached"));
}

TEST_CASE("engine: a paused build keeps its memory but gives its cores to other builds", "[engine]") {
  // Bug: paused units went to the scheduler as suspended, which must resume
  // before anything new starts: a paused build kept its cores and blocked
  // every other build.
  EngineFixture f;
  f.options.scheduler.cores = 8;  // build 1's four units at two threads take every core
  f.make_engine().recover();
  const auto first = f.submit();
  f.engine->tick();
  REQUIRE(f.launcher.live().size() == 4);
  const auto second = f.submit();
  f.engine->tick();
  CHECK(f.launcher.launches.size() == 4);
  CHECK_THAT(f.unit(second, "a_one")->wait_reason, StartsWith("all 8 cores busy"));

  REQUIRE(f.engine->pause(f.me, first).ok);
  f.engine->tick();
  CHECK(f.launcher.launches.size() == 8);  // the second build's four units run
  for (const auto& name : test::kCompileUnits) CHECK(f.unit(second, name)->state == UnitState::running);
  // The paused units stay stopped: nothing resumed them.
  for (const auto& [pgid, sig] : f.launcher.signals) CHECK(sig == SIGSTOP);
}

TEST_CASE("engine: status reports each unit's estimate source and predicted duration", "[engine]") {
  EngineFixture f;
  f.options.scheduler.max_parallel_units = 1;
  f.make_engine().recover();
  const auto id = f.submit();
  f.engine->tick();
  auto running = unit_json(f, id, "a_one");
  CHECK(running["state"] == "running");
  CHECK(running["estimate_source"] == "manifest");
  CHECK(running["predicted_duration_s"].get<double>() == Approx(5));  // 10 s on one thread, two threads
  auto queued = unit_json(f, id, "b_one");
  CHECK(queued["estimate_source"] == "manifest");
  CHECK(queued["predicted_duration_s"].is_number());

  // a_one climbs to 300 MiB and comes down: its sibling a_two is now estimated from it.
  f.launcher.memory[f.launcher.pgid_of("a_one")] = 300 * kMiB;
  f.clock.advance(1);
  f.engine->tick();
  f.launcher.memory[f.launcher.pgid_of("a_one")] = 50 * kMiB;
  f.clock.advance(1);
  f.engine->tick();
  CHECK(unit_json(f, id, "a_two")["estimate_source"] == "running_sibling");
  // Its duration is the sibling's age or the prior's, a guess: no ETA may rest on it.
  CHECK(unit_json(f, id, "a_two")["predicted_duration_s"].is_null());
  CHECK(unit_json(f, id, "b_one")["estimate_source"] == "manifest");  // another family

  // A finished unit keeps the source its estimate had; it predicts nothing more.
  f.launcher.exit("a_one", 0);
  auto done = unit_json(f, id, "a_one");
  CHECK(done["estimate_source"] == "manifest");
  CHECK(done["predicted_duration_s"].is_null());
  CHECK(f.unit(id, "a_one")->estimate_source == "manifest");
}

TEST_CASE("engine: the link's first estimate is a prior with no duration to trust, its next one its own measurement",
          "[engine]") {
  EngineFixture f;
  f.make_engine().recover();
  const auto first = f.submit();
  auto link = unit_json(f, first, "link");
  CHECK(link["estimate_source"] == "prior");  // no manifest describes it
  CHECK(link["predicted_duration_s"].is_null());
  f.engine->tick();
  for (const auto& name : test::kCompileUnits) f.launcher.exit(name, 0);
  f.engine->tick();
  REQUIRE(f.launcher.find("link"));
  f.clock.advance(2);
  f.engine->tick();
  test::write_file(f.artifact(first) + ".tmp", "ELF");
  f.launcher.exit("link", 0);
  REQUIRE(f.build_state(first) == BuildState::succeeded);

  const auto second = f.submit();
  link = unit_json(f, second, "link");
  CHECK(link["estimate_source"] == "exact");
  CHECK(link["predicted_duration_s"].get<double>() == Approx(2).margin(0.5));  // measured, not 30 s
}

TEST_CASE("engine: the last unit, stopped while others in the cgroup hold the memory, reruns alone", "[engine]") {
  EngineFixture f;
  f.options.scheduler.max_parallel_units = 1;
  f.options.scheduler.reserve = Reserve{0, 0};
  f.make_engine().recover();
  const auto id = f.submit();
  f.engine->tick();
  const int pgid = f.launcher.pgid_of("a_one");
  f.launcher.memory[pgid] = 600 * kMiB;
  // fadd's cgroup: 1 GiB, of which others hold 700 MiB besides fad's 600 MiB.
  f.probe.snap.cgroup_limit = 1024 * kMiB;
  f.probe.snap.cgroup_usage = 1300 * kMiB;
  f.clock.advance(1);
  f.engine->tick();
  CHECK(f.launcher.signals_to(pgid) == std::vector<int>{SIGSTOP});
  f.clock.advance(f.options.scheduler.suspend_grace_s + 1);
  f.engine->tick();
  CHECK(f.launcher.signals_to(pgid) == std::vector<int>{SIGSTOP, SIGTERM, SIGCONT});
  f.launcher.exit("a_one", 128 + SIGTERM, true);
  CHECK(f.unit(id, "a_one")->state == UnitState::queued);
  CHECK(f.unit(id, "a_one")->requeued_peak == 600 * kMiB);
  // The others still hold 700 MiB: it waits, and nothing starts before it.
  f.probe.snap.cgroup_usage = 700 * kMiB;
  f.engine->tick();
  CHECK(f.unit(id, "a_one")->wait_reason == "must run alone: needs 600.0 MiB, the machine leaves fad 324.0 MiB");
  CHECK(f.unit(id, "a_two")->wait_reason == "waiting for a unit that must run alone");
  CHECK(f.launcher.launch_count("a_one") == 1);
  f.probe.snap.cgroup_usage = 100 * kMiB;
  f.engine->tick();
  CHECK(f.launcher.launch_count("a_one") == 2);
  CHECK(f.launcher.live() == std::vector<std::string>{"a_one"});
}

TEST_CASE("engine: an import is held to the history's bound at once, not at the next daily trim", "[engine]") {
  EngineFixture f;
  f.make_engine().recover();
  // The unscoped history (where imports go) already full of older rows.
  f.store->db().exec("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < " +
                     std::to_string(Engine::kMaxHistoryKeysPerScope) +
                     ") INSERT INTO unit_history(key, source, content_hash, flags, archs, compiler, family, "
                     "arch_count, threads, profile, recorded_at) SELECT 'k' || i, 'x.cu', 'h', '', '90', 'V', 'x', 1, "
                     "1, '0:1048576;10', '2026-01-01T00:00:00Z' FROM n");
  json profiles = json::array();
  for (int i = 0; i < 3; ++i)
    profiles.push_back({{"source", "new" + std::to_string(i) + ".cu"},
                        {"content_hash", "c"},
                        {"flags", ""},
                        {"archs", "9.0"},
                        {"compiler", "V"},
                        {"family", "new"},
                        {"recorded_at", ""},
                        {"origin", "local"},
                        {"arch_count", 1},
                        {"threads", 1},
                        {"duration_s", 10},
                        {"points", {{0, 100 * kMiB}}}});
  auto req = HistoryImportRequest::from_json(json{{"profiles", profiles}});
  REQUIRE(req);
  auto imported = f.engine->history_import(f.me, *req);
  REQUIRE(imported.ok);
  CHECK(imported.result["imported"] == 3);
  // Bug: nothing bounded an import until the next daily trim or start, so
  // 200,000 imported profiles grew fadd by hundreds of MiB meanwhile.
  CHECK(f.store->history().size() == Engine::kMaxHistoryKeysPerScope);
  CHECK(f.engine->known_observations() == Engine::kMaxHistoryKeysPerScope);
  // What was measured here outranks what was imported: the import is what goes.
  std::map<std::string, int> sources;
  for (const auto& h : f.store->history()) ++sources[h.source];
  CHECK(sources["x.cu"] == static_cast<int>(Engine::kMaxHistoryKeysPerScope));
  CHECK(sources["new0.cu"] == 0);
}

TEST_CASE("engine: history exported from one daemon seeds another, marked as imported", "[engine]") {
  EngineFixture from;
  from.make_engine().recover();
  const auto id = from.submit({"9.0"});
  from.engine->tick();
  for (const auto& name : test::kCompileUnits) from.launcher.memory[from.launcher.pgid_of(name)] = 200 * kMiB;
  from.clock.advance(30);
  from.engine->tick();
  for (const auto& name : test::kCompileUnits) from.launcher.exit(name, 0);
  REQUIRE(from.store->history().size() == 4);

  HistoryExportRequest page;
  page.limit = 3;
  auto first = from.engine->history_export(from.me, page);
  REQUIRE(first.ok);
  CHECK(first.result["profiles"].size() == 3);
  REQUIRE(first.result["next_after"].is_number());
  page.after = first.result["next_after"].get<std::int64_t>();
  auto second = from.engine->history_export(from.me, page);
  REQUIRE(second.ok);
  CHECK(second.result["profiles"].size() == 1);
  CHECK(second.result["next_after"].is_null());
  json all = first.result["profiles"];
  all.push_back(second.result["profiles"][0]);
  CHECK(all[0]["origin"] == "local");
  CHECK(all[0]["points"][0][1] == 200 * kMiB);

  // One recorded long ago, one on a machine whose clock ran ahead.
  all[0]["recorded_at"] = "2020-05-06T07:08:09Z";
  all[1]["recorded_at"] = "2099-01-01T00:00:00Z";
  EngineFixture to;
  to.make_engine().recover();
  auto req = HistoryImportRequest::from_json(json{{"profiles", all}});
  REQUIRE(req);
  // Another user may not steer everyone's estimates.
  const Caller other{to.me.uid + 4242, to.me.gid, 1};
  auto refused = to.engine->history_import(other, *req);
  CHECK_FALSE(refused.ok);
  CHECK(refused.message.find("may import history") != std::string::npos);
  CHECK(to.store->history().empty());
  auto imported = to.engine->history_import(to.me, *req);
  REQUIRE(imported.ok);
  CHECK(imported.result["imported"] == 4);
  CHECK(to.engine->history_import(to.me, *req).result["skipped"] == 4);  // once is enough
  CHECK(to.store->history().size() == 4);
  CHECK(to.store->history()[0].origin == "imported");
  std::map<std::string, std::string> recorded;
  for (const auto& h : to.store->history()) recorded[h.source] = h.recorded_at;
  CHECK(recorded.at(all[0]["source"].get<std::string>()) == "2020-05-06T07:08:09Z");
  CHECK(recorded.at(all[1]["source"].get<std::string>()) == to.clock.wall());

  const auto build = to.submit({"9.0"});
  to.engine->tick();
  auto u = unit_json(to, build, "a_one");
  CHECK(u["estimate_source"] == "imported_exact");
  CHECK(u["estimate_bytes"] == 200 * kMiB);
  (void)id;
}

}  // namespace
}  // namespace fad
