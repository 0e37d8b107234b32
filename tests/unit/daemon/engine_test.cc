// The Engine wired to a fake clock, a settable memory probe and a launcher that
// only records, over a real Store and a kernels tree in a temp dir. The test
// ends "processes" by hand and asserts on launches, signals and the store.
#include <catch2/catch.hpp>

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

#include "daemon/engine.h"
#include "fakes.h"

namespace fad {
namespace {

using Catch::Contains;
using test::EngineFixture;
using test::kCompileUnits;
namespace fs = std::filesystem;

std::vector<std::string> sorted(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  return v;
}

/// Submits the test build with two units at a time and starts it: a_one and
/// a_two run. Returns the build id.
std::int64_t submit_with_two_running(EngineFixture& f) {
  f.options.scheduler.max_parallel_units = 2;
  f.make_engine().recover();
  const auto id = f.submit();
  f.engine->tick();
  REQUIRE(f.launcher.live() == std::vector<std::string>{"a_one", "a_two"});
  return id;
}

/// Runs the four compile units of build `id` to success.
void finish_compiles(EngineFixture& f) {
  for (const auto& name : kCompileUnits) f.launcher.exit(name, 0);
}

}  // namespace

TEST_CASE("engine: submit then tick launches every compile unit with --threads", "[engine]") {
  EngineFixture f;
  f.make_engine().recover();
  const auto id = f.submit();
  CHECK(f.build_state(id) == BuildState::queued);
  CHECK(f.launcher.launches.empty());

  f.engine->tick();
  REQUIRE(f.launcher.launches.size() == 4);
  CHECK(f.launcher.live() == kCompileUnits);
  CHECK(f.engine->running_count() == 4);
  CHECK(f.build_state(id) == BuildState::running);

  const std::string dir = f.build_dir(id);
  const auto* a = f.launcher.find("a_one");
  REQUIRE(a);
  CHECK(a->spec.argv ==
        std::vector<std::string>{"/opt/fake/nvcc", "-c", f.kernels + "/src/a_one.cu", "-o", dir + "/obj/a_one.o", "-O3",
                                 "-std=c++17", "-I" + f.kernels + "/include", "-gencode", "arch=compute_90,code=sm_90",
                                 "-gencode", "arch=compute_120,code=sm_120", "--threads", "2"});
  CHECK(a->spec.log_path == dir + "/logs/a_one.log");
  CHECK(a->spec.unit_id == f.unit(id, "a_one")->id);
  // The command is logged and the output directories exist before launch.
  CHECK_THAT(test::slurp(dir + "/logs/a_one.log"), Contains("$ /opt/fake/nvcc -c"));
  CHECK(fs::is_directory(dir + "/obj"));

  for (const auto& name : kCompileUnits) {
    auto u = f.unit(id, name);
    CHECK(u->state == UnitState::running);
    CHECK(u->attempts == 1);
    CHECK(u->threads == 2);
    CHECK(u->estimate_bytes > 0);
    CHECK(u->pgid == std::optional<std::int64_t>(f.launcher.pgid_of(name)));
    CHECK(u->started_at == std::optional<std::string>(f.clock.wall_));
  }
  CHECK(f.unit(id, "link")->state == UnitState::queued);

  // A second tick starts nothing more: the link waits for the compiles.
  f.engine->tick();
  CHECK(f.launcher.launches.size() == 4);
}

TEST_CASE("engine: the link runs after all compiles and publishes the artifact", "[engine]") {
  EngineFixture f;
  f.make_engine().recover();
  const auto id = f.submit();
  f.engine->tick();
  f.launcher.memory[f.launcher.pgid_of("a_one")] = 300ull << 20;
  f.launcher.memory[f.launcher.pgid_of("a_two")] = 100ull << 20;
  f.clock.advance(1);
  f.engine->tick();
  CHECK(f.store->build(id)->peak_bytes == 400ull << 20);

  f.launcher.exit("a_one", 0);
  f.launcher.exit("a_two", 0);
  f.launcher.exit("b_one", 0);
  f.engine->tick();
  CHECK(f.launcher.find("link") == nullptr);  // b_two still compiles
  f.launcher.exit("b_two", 0);
  CHECK(f.engine->idle());
  CHECK(f.unit(id, "a_one")->state == UnitState::succeeded);
  CHECK(f.unit(id, "a_one")->peak_bytes == 300ull << 20);
  CHECK(f.unit(id, "a_one")->exit_code == std::optional<int>(0));
  CHECK(f.store->history().size() == 4);  // every clean compile teaches the estimator
  CHECK(f.build_state(id) == BuildState::running);

  f.engine->tick();
  const auto* link = f.launcher.find("link");
  REQUIRE(link);
  const std::string dir = f.build_dir(id);
  CHECK(link->spec.argv ==
        std::vector<std::string>{"/opt/fake/nvcc", "-shared", "-o", f.artifact(id) + ".tmp", dir + "/obj/a_one.o",
                                 dir + "/obj/a_two.o", dir + "/obj/b_one.o", dir + "/obj/b_two.o", "-lcudart",
                                 "-gencode", "arch=compute_90,code=sm_90", "-gencode", "arch=compute_120,code=sm_120"});

  test::write_file(f.artifact(id) + ".tmp", "ELF");
  f.launcher.exit("link", 0);
  CHECK(fs::exists(f.artifact(id)));
  CHECK_FALSE(fs::exists(f.artifact(id) + ".tmp"));
  auto b = f.store->build(id);
  CHECK(b->state == BuildState::succeeded);
  CHECK(b->artifact == std::optional<std::string>(f.artifact(id)));
  CHECK(b->finished_at == std::optional<std::string>(f.clock.wall_));
  CHECK(b->peak_bytes == 400ull << 20);
  const auto history = f.store->history();
  REQUIRE(history.size() == 5);  // four compiles and the link, whose next estimate rests on its measured time
  CHECK(history.back().family == "link");
  CHECK(history.back().arch_count == 1);  // one process whatever the archs
  CHECK_THAT(test::slurp(dir + "/build.log"), Contains("build succeeded"));
}

TEST_CASE("engine: a link that exits 0 without writing its output fails the build", "[engine]") {
  EngineFixture f;
  f.make_engine().recover();
  const auto id = f.submit();
  f.engine->tick();
  finish_compiles(f);
  f.engine->tick();
  f.launcher.exit("link", 0);  // no .tmp file: nothing to publish
  CHECK(f.unit(id, "link")->state == UnitState::failed);
  auto b = f.store->build(id);
  CHECK(b->state == BuildState::failed);
  CHECK_FALSE(b->artifact);
  CHECK_THAT(b->error, Contains("link"));
  CHECK_THAT(test::slurp(f.build_dir(id) + "/logs/link.log"), Contains("cannot publish"));
}

TEST_CASE("engine: a failing unit cancels queued units, retry requeues and the build can succeed", "[engine]") {
  EngineFixture f;
  const auto id = submit_with_two_running(f);

  f.launcher.exit("a_one", 1);
  CHECK(f.unit(id, "a_one")->state == UnitState::failed);
  CHECK(f.unit(id, "a_one")->exit_code == std::optional<int>(1));
  CHECK(f.unit(id, "b_one")->state == UnitState::cancelled);
  CHECK(f.unit(id, "b_two")->state == UnitState::cancelled);
  CHECK(f.unit(id, "link")->state == UnitState::cancelled);
  CHECK(f.unit(id, "a_two")->state == UnitState::running);
  CHECK(f.build_state(id) == BuildState::running);  // a_two still runs
  f.engine->tick();
  CHECK(f.launcher.launches.size() == 2);  // nothing new starts

  f.launcher.exit("a_two", 0);
  auto b = f.store->build(id);
  CHECK(b->state == BuildState::failed);
  CHECK(b->finished_at);
  CHECK_THAT(b->error, Contains("a_one"));
  CHECK(f.store->history().size() == 1);  // only the clean success

  // Retrying a failed build requeues the failed and cancelled units only.
  auto r = f.engine->retry(f.me, id);
  REQUIRE(r.ok);
  CHECK(r.result["requeued"] == 4);
  CHECK(f.unit(id, "a_two")->state == UnitState::succeeded);
  CHECK(f.build_state(id) != BuildState::failed);

  f.engine->tick();
  CHECK(sorted(f.launcher.live()) == std::vector<std::string>{"a_one", "b_one"});
  CHECK(f.unit(id, "a_one")->attempts == 2);
  f.launcher.exit("a_one", 0);
  f.launcher.exit("b_one", 0);
  f.engine->tick();
  f.launcher.exit("b_two", 0);
  f.engine->tick();
  test::write_file(f.artifact(id) + ".tmp", "ELF");
  f.launcher.exit("link", 0);
  CHECK(f.build_state(id) == BuildState::succeeded);
  CHECK(f.launcher.launch_count("a_one") == 2);
  CHECK(f.launcher.launch_count("a_two") == 1);
  CHECK(f.launcher.launch_count("link") == 1);

  // Only failed or cancelled builds can be retried.
  auto again = f.engine->retry(f.me, id);
  CHECK_FALSE(again.ok);
  CHECK(again.code == ErrorCode::failed);
}

TEST_CASE("engine: a unit the OOM killer ends is requeued with a raised estimate, three kills fail it", "[engine]") {
  EngineFixture f;
  const auto id = submit_with_two_running(f);

  // SIGKILL with the unit cgroup's oom_kill counter up: memory ran out, the unit did not fail.
  f.launcher.exit_with("a_one", ExitInfo{137, true, 4ull << 30, true});
  CHECK(f.unit(id, "a_one")->state == UnitState::queued);
  CHECK(f.unit(id, "a_one")->requeued_peak == 5ull << 30);  // the kill cut it short: peak + 25%
  CHECK(f.unit(id, "a_one")->peak_bytes == 4ull << 30);     // what fad status shows: the attempt's peak
  CHECK(f.unit(id, "b_one")->state == UnitState::queued);   // nothing cancelled
  CHECK(f.build_state(id) == BuildState::running);
  CHECK_THAT(test::slurp(f.build_dir(id) + "/build.log"), Contains("OOM-killed a_one at 4.0 GiB (requeued)"));

  // Rerun, killed again, rerun, killed a third time: it does not fit even
  // with its own peak as the estimate, so it fails like any failed unit.
  f.engine->tick();
  CHECK(f.launcher.launch_count("a_one") == 2);
  f.launcher.exit_with("a_one", ExitInfo{137, true, 5ull << 30, true});
  CHECK(f.unit(id, "a_one")->state == UnitState::queued);
  f.engine->tick();
  CHECK(f.launcher.launch_count("a_one") == 3);
  f.launcher.exit_with("a_one", ExitInfo{137, true, 5ull << 30, true});
  CHECK(f.unit(id, "a_one")->state == UnitState::failed);
  CHECK(f.unit(id, "a_one")->attempts == 3);
  CHECK(f.unit(id, "b_one")->state == UnitState::cancelled);

  // A SIGKILL the OOM killer did not send (someone's kill -9) is a failure at once.
  f.launcher.exit("a_two", 137, true);
  CHECK(f.unit(id, "a_two")->state == UnitState::failed);
  CHECK(f.unit(id, "a_two")->attempts == 1);
}

TEST_CASE("engine: a launch failure fails the unit and cancels the rest", "[engine]") {
  EngineFixture f;
  f.options.scheduler.max_parallel_units = 1;
  f.make_engine().recover();
  const auto id = f.submit();
  f.launcher.fail_next = true;
  f.engine->tick();
  CHECK(f.launcher.launches.empty());
  CHECK(f.unit(id, "a_one")->state == UnitState::failed);
  CHECK(f.unit(id, "a_two")->state == UnitState::cancelled);
  CHECK(f.build_state(id) == BuildState::failed);
  CHECK_THAT(test::slurp(f.build_dir(id) + "/logs/a_one.log"), Contains("test failure"));
}

TEST_CASE("engine: cancel terminates running groups and cancels the build", "[engine]") {
  EngineFixture f;
  f.make_engine().recover();
  const auto id = f.submit();
  f.engine->tick();
  auto r = f.engine->cancel(f.me, id);
  REQUIRE(r.ok);
  CHECK(r.result["state"] == "cancelled");
  for (const auto& name : kCompileUnits)
    CHECK(f.launcher.signals_to(f.launcher.pgid_of(name)) == std::vector<int>{SIGTERM});
  auto b = f.store->build(id);
  CHECK(b->state == BuildState::cancelled);
  CHECK(b->finished_at);
  for (const auto& u : f.store->units(id)) CHECK(u.state == UnitState::cancelled);

  // Past the kill grace, a unit that ignored SIGTERM gets SIGKILL.
  f.launcher.exit("a_one", 128 + SIGTERM, true);
  f.clock.advance(f.options.kill_grace_s + 1);
  f.engine->tick();
  CHECK(f.launcher.signals_to(f.launcher.pgid_of("a_one")) == std::vector<int>{SIGTERM});
  CHECK(f.launcher.signals_to(f.launcher.pgid_of("a_two")) == std::vector<int>{SIGTERM, SIGKILL});

  for (const auto& name : {"a_two", "b_one", "b_two"}) f.launcher.exit(name, 128 + SIGKILL, true);
  CHECK(f.engine->idle());
  for (const auto& u : f.store->units(id)) CHECK(u.state == UnitState::cancelled);
  CHECK(f.build_state(id) == BuildState::cancelled);
  f.engine->tick();
  CHECK(f.launcher.launches.size() == 4);

  auto twice = f.engine->cancel(f.me, id);
  CHECK_FALSE(twice.ok);
  CHECK(twice.code == ErrorCode::failed);
  CHECK(f.engine->cancel(f.me, id + 1).code == ErrorCode::not_found);
}

TEST_CASE("engine: each run of a unit has a TMPDIR of its own, deleted when it ends and by the next fadd", "[engine]") {
  // nvcc killed mid-run (cancel, OOM, pressure) leaves its tmpxft files
  // behind: in /tmp they would pile up for ever (in RAM, where /tmp is tmpfs).
  EngineFixture f;
  f.make_engine().recover();
  const auto id = f.submit();
  f.engine->tick();
  REQUIRE(f.launcher.launches.size() == 4);
  std::set<std::string> dirs;
  for (const auto& l : f.launcher.launches) {
    const auto unit = f.store->unit(l.spec.unit_id);
    REQUIRE(unit);
    CHECK(l.spec.temp_dir == f.state + "/builds/" + std::to_string(id) + "/tmp/" + std::to_string(unit->id) + "-1");
    CHECK(fs::is_directory(l.spec.temp_dir));
    dirs.insert(l.spec.temp_dir);
  }
  CHECK(dirs.size() == 4);
  const std::string one = f.launcher.launches[0].spec.temp_dir;
  const std::string first = f.store->unit(f.launcher.launches[0].spec.unit_id)->name;
  std::ofstream(one + "/tmpxft_0001.cpp1.ii") << "left by a killed nvcc";
  REQUIRE(f.engine->cancel(f.me, id).ok);
  f.launcher.exit(first, 128 + SIGTERM, true);
  CHECK_FALSE(fs::exists(one));
  for (const auto& d : dirs) CHECK(fs::exists(d) == (d != one));  // the others still run

  // A fadd that stopped before its compilers ended: the next one deletes what they left.
  f.engine.reset();
  f.launcher.forget_callbacks();
  f.make_engine().recover();
  for (const auto& d : dirs) CHECK_FALSE(fs::exists(d));
  CHECK(fs::is_empty(f.state + "/trash"));
}

TEST_CASE("engine: retry right after cancel, before the stopped units exit, can still finish", "[engine]") {
  // Bug: cancel() marks running units cancelled at once; retry() requeues them,
  // but when the old process then exits, on_exit (StopReason::cancel) writes
  // 'cancelled' over the requeued unit and the build stays 'running' forever.
  EngineFixture f;
  f.make_engine().recover();
  const auto id = f.submit();
  f.engine->tick();
  REQUIRE(f.engine->cancel(f.me, id).ok);
  auto r = f.engine->retry(f.me, id);
  if (r.ok) {
    for (const auto& name : kCompileUnits) f.launcher.exit(name, 128 + SIGTERM, true);
    f.engine->tick();
    for (const auto& name : kCompileUnits) {
      INFO(name);
      CHECK(f.unit(id, name)->state != UnitState::cancelled);
    }
    for (const auto& name : kCompileUnits)
      if (f.launcher.find(name) && !f.launcher.find(name)->ended) f.launcher.exit(name, 0);
    f.engine->tick();
    if (f.launcher.find("link")) {
      test::write_file(f.artifact(id) + ".tmp", "ELF");
      f.launcher.exit("link", 0);
    }
    CHECK(f.build_state(id) == BuildState::succeeded);
  } else {
    // Refusing the retry until the units have stopped is also correct.
    CHECK(r.code == ErrorCode::failed);
  }
}

TEST_CASE("engine: pause stops running groups and admits nothing until resume", "[engine]") {
  EngineFixture f;
  const auto id = submit_with_two_running(f);
  const int p1 = f.launcher.pgid_of("a_one");
  const int p2 = f.launcher.pgid_of("a_two");

  auto r = f.engine->pause(f.me, id);
  REQUIRE(r.ok);
  CHECK(f.build_state(id) == BuildState::paused);
  CHECK(f.launcher.signals_to(p1) == std::vector<int>{SIGSTOP});
  CHECK(f.launcher.signals_to(p2) == std::vector<int>{SIGSTOP});
  CHECK(f.engine->pause(f.me, id).code == ErrorCode::failed);  // already paused

  // A unit ending while paused frees a slot, but nothing new starts.
  f.launcher.exit("a_one", 0);
  f.engine->tick();
  f.engine->tick();
  CHECK(f.launcher.launches.size() == 2);
  CHECK(f.build_state(id) == BuildState::paused);
  CHECK(f.launcher.signals_to(p2) == std::vector<int>{SIGSTOP});

  r = f.engine->resume(f.me, id);
  REQUIRE(r.ok);
  CHECK(r.result["state"] == "running");
  CHECK(f.build_state(id) == BuildState::running);
  CHECK(f.launcher.signals_to(p2) == std::vector<int>{SIGSTOP, SIGCONT});
  CHECK(f.launcher.signals_to(p1) == std::vector<int>{SIGSTOP});  // it had ended
  f.engine->tick();
  CHECK(f.launcher.launches.size() == 3);
  CHECK(f.launcher.find("b_one"));
  CHECK(f.engine->resume(f.me, id).code == ErrorCode::failed);  // not paused
}

TEST_CASE("engine: time a unit spent paused is not compile time: not in its duration, nor in what is learnt",
          "[engine]") {
  EngineFixture f;
  const auto id = submit_with_two_running(f);
  f.launcher.memory[f.launcher.pgid_of("a_one")] = 100ull << 20;
  const auto run = [&](int seconds) {
    for (int i = 0; i < seconds; ++i) {
      f.clock.advance(1);
      f.engine->tick();
    }
  };
  run(10);
  REQUIRE(f.engine->pause(f.me, id).ok);
  run(100);
  REQUIRE(f.engine->resume(f.me, id).ok);
  run(5);
  f.launcher.exit("a_one", 0);
  f.engine->tick();
  const auto unit = f.unit(id, "a_one");
  REQUIRE(unit->state == UnitState::succeeded);
  CHECK(unit->duration_s == Approx(15).margin(1.5));  // not 115
  const auto history = f.store->history();
  REQUIRE(history.size() == 1);
  const auto learnt = Profile::parse(history[0].profile);
  REQUIRE(learnt);
  CHECK(learnt->duration_s == Approx(15).margin(1.5));
  for (const auto& [t, bytes] : learnt->points) CHECK(t <= 16);  // samples in compile time
}

TEST_CASE("engine: cancelling a paused build continues its stopped groups so they can exit", "[engine]") {
  EngineFixture f;
  f.make_engine().recover();
  const auto id = f.submit();
  f.engine->tick();
  REQUIRE(f.engine->pause(f.me, id).ok);
  REQUIRE(f.engine->cancel(f.me, id).ok);
  for (const auto& name : kCompileUnits)
    CHECK(f.launcher.signals_to(f.launcher.pgid_of(name)) == std::vector<int>{SIGSTOP, SIGTERM, SIGCONT});
}

TEST_CASE("engine: a paused unit under memory pressure keeps its suspend grace", "[engine]") {
  // Bug: pause() leaves Running::suspended_at at 0, and schedule() hands paused
  // units to the scheduler as suspended since then, so under pressure the
  // scheduler sees them "suspended for ages" and stops them at once instead of
  // after suspend_grace_s.
  EngineFixture f;
  f.make_engine().recover();
  const auto id = f.submit();
  f.engine->tick();
  REQUIRE(f.engine->pause(f.me, id).ok);
  f.probe.snap.available = 1ull << 30;  // under the 10% reserve: pressure
  f.engine->tick();
  for (const auto& name : kCompileUnits) {
    INFO(name);
    CHECK(f.launcher.signals_to(f.launcher.pgid_of(name)) == std::vector<int>{SIGSTOP});
  }
}

TEST_CASE("engine: shutdown stops running units and requeues them as they exit", "[engine]") {
  EngineFixture f;
  f.make_engine().recover();
  const auto id = f.submit();
  f.engine->tick();
  f.engine->begin_shutdown();
  for (const auto& name : kCompileUnits)
    CHECK(f.launcher.signals_to(f.launcher.pgid_of(name)) == std::vector<int>{SIGTERM});
  CHECK_FALSE(f.engine->idle());

  SubmitRequest req;
  req.archs = {"9.0"};
  auto refused = f.submit_as(f.me, req);
  CHECK_FALSE(refused.ok);
  CHECK(refused.code == ErrorCode::failed);

  for (const auto& name : kCompileUnits) f.launcher.exit(name, 128 + SIGTERM, true);
  CHECK(f.engine->idle());
  for (const auto& name : kCompileUnits) {
    auto u = f.unit(id, name);
    CHECK(u->state == UnitState::queued);
    CHECK_FALSE(u->pgid);
    CHECK(u->attempts == 1);
  }
  CHECK_FALSE(is_final(f.build_state(id)));
  f.engine->tick();
  CHECK(f.launcher.launches.size() == 4);  // nothing starts while shutting down
}

TEST_CASE("engine: after a crash a new engine requeues running units and keeps finished ones", "[engine]") {
  EngineFixture f;
  f.make_engine().recover();
  const auto id = f.submit();
  f.engine->tick();
  const int left_b1 = f.launcher.pgid_of("b_one");
  const int left_b2 = f.launcher.pgid_of("b_two");
  f.launcher.exit("a_one", 0);
  f.launcher.exit("a_two", 0);

  // Crash: the engine goes away without its units ending.
  f.engine.reset();
  f.launcher.forget_callbacks();
  CHECK(f.unit(id, "b_one")->state == UnitState::running);

  f.make_engine().recover();
  CHECK(f.unit(id, "b_one")->state == UnitState::queued);
  CHECK(f.unit(id, "b_two")->state == UnitState::queued);
  CHECK(f.unit(id, "a_one")->state == UnitState::succeeded);
  if (!read_small_file("/proc/sys/kernel/random/boot_id").empty()) {
    // Same boot: the leftover compilers are killed.
    CHECK(f.launcher.signals_to(left_b1) == std::vector<int>{SIGKILL});
    CHECK(f.launcher.signals_to(left_b2) == std::vector<int>{SIGKILL});
  }
  // Each further crash: the engine goes, a new one recovers; within the same
  // boot it must leave the group `spared` alone and kill `killed`.
  const auto crash_and_restart = [&] {
    f.engine.reset();
    f.launcher.forget_callbacks();
    f.make_engine().recover();
  };
  const auto spares_and_kills = [&](int spared, int killed) {
    if (read_small_file("/proc/sys/kernel/random/boot_id").empty()) return;
    CHECK(f.launcher.signals_to(spared).empty());
    CHECK(f.launcher.signals_to(killed) == std::vector<int>{SIGKILL});
  };
  // Crashed again. b_one's compiler ended meanwhile and another user's
  // process now has its id: that one is left alone, b_two's own is killed.
  f.engine->tick();
  const int again_b1 = f.launcher.pgid_of("b_one");
  const int again_b2 = f.launcher.pgid_of("b_two");
  f.launcher.processes[again_b1] = ProcessInfo{1, again_b1, f.me.uid + 1, 777};
  f.launcher.processes[again_b2] = ProcessInfo{1, again_b2, f.me.uid, 778};
  crash_and_restart();
  spares_and_kills(again_b1, again_b2);
  // A third crash. fadd noted each leader's start time when it launched
  // it; b_one's id now names a process of the same user started since (a
  // fast-cycling pid space): only b_two's leftover group is killed.
  f.launcher.processes.clear();
  for (int pgid = f.launcher.next_pgid; pgid < f.launcher.next_pgid + 2; ++pgid)
    f.launcher.processes[pgid] = ProcessInfo{1, pgid, f.me.uid, 5000u + static_cast<unsigned>(pgid)};
  f.engine->tick();
  const int third_b1 = f.launcher.pgid_of("b_one");
  const int third_b2 = f.launcher.pgid_of("b_two");
  REQUIRE(f.launcher.processes.count(third_b1) == 1);
  REQUIRE(f.launcher.processes.count(third_b2) == 1);
  f.launcher.processes[third_b1].start_ticks += 100;
  crash_and_restart();
  spares_and_kills(third_b1, third_b2);
  // A fourth. Neither leader lives; b_one's id is now the group of another
  // user's pipeline whose first process has exited: its members are left
  // alone; b_two's group still holds the unit's own compilers (cicc, ptxas).
  f.launcher.processes.clear();
  f.engine->tick();
  const int fourth_b1 = f.launcher.pgid_of("b_one");
  const int fourth_b2 = f.launcher.pgid_of("b_two");
  f.launcher.processes[90001] = ProcessInfo{1, fourth_b1, f.me.uid + 1, 9};
  f.launcher.processes[90002] = ProcessInfo{1, fourth_b2, f.me.uid, 9};
  crash_and_restart();
  spares_and_kills(fourth_b1, fourth_b2);

  f.engine->tick();
  CHECK(f.launcher.launch_count("a_one") == 1);
  CHECK(f.launcher.launch_count("a_two") == 1);
  CHECK(f.launcher.launch_count("b_one") == 5);
  CHECK(f.launcher.launch_count("b_two") == 5);
  CHECK(f.unit(id, "b_one")->attempts == 5);
  f.launcher.exit("b_one", 0);
  f.launcher.exit("b_two", 0);
  f.engine->tick();
  test::write_file(f.artifact(id) + ".tmp", "ELF");
  f.launcher.exit("link", 0);
  CHECK(f.build_state(id) == BuildState::succeeded);
}

TEST_CASE("engine: submit errors are usage errors", "[engine]") {
  EngineFixture f;
  f.make_engine().recover();
  SubmitRequest req;
  SECTION("an arch the compiler cannot build names the buildable ones") {
    req.archs = {"5.0"};
    auto r = f.submit_as(f.me, req);
    REQUIRE_FALSE(r.ok);
    CHECK(r.code == ErrorCode::usage);
    CHECK_THAT(r.message, Contains("5.0") && Contains("9.0") && Contains("12.0"));
  }
  SECTION("an unparsable arch") {
    req.archs = {"banana"};
    auto r = f.submit_as(f.me, req);
    REQUIRE_FALSE(r.ok);
    CHECK(r.code == ErrorCode::usage);
    CHECK_THAT(r.message, Contains("banana"));
  }
  SECTION("a glob matching no unit") {
    req.archs = {"9.0"};
    req.kernels = "zzz*";
    auto r = f.submit_as(f.me, req);
    REQUIRE_FALSE(r.ok);
    CHECK(r.code == ErrorCode::usage);
    CHECK_THAT(r.message, Contains("zzz*") && Contains("a_one"));
  }
  CHECK(f.store->status_builds(10).empty());
}

TEST_CASE("engine: logs return data, offsets and done", "[engine]") {
  EngineFixture f;
  f.make_engine().recover();
  const auto id = f.submit();
  f.engine->tick();
  const std::string log = f.build_dir(id) + "/logs/a_one.log";
  { std::ofstream(log, std::ios::app) << "compiling\n"; }
  const std::string full = test::slurp(log);

  LogsRequest req;
  req.id = id;
  req.unit = "a_one";
  auto r = f.engine->logs(f.me, req);
  REQUIRE(r.ok);
  CHECK(r.result["data"] == full);
  CHECK(r.result["offset"] == full.size());
  CHECK(r.result["done"] == false);

  req.offset = 2;
  req.max_bytes = 3;
  r = f.engine->logs(f.me, req);
  CHECK(r.result["data"] == full.substr(2, 3));
  CHECK(r.result["offset"] == 5);

  req.offset = full.size() + 100;
  req.max_bytes = 1024;
  r = f.engine->logs(f.me, req);
  CHECK(r.result["data"] == "");
  CHECK(r.result["offset"] == full.size());

  f.launcher.exit("a_one", 0);
  req.offset = full.size();
  r = f.engine->logs(f.me, req);
  CHECK(r.result["data"] == "");
  CHECK(r.result["done"] == true);

  // Without a unit: the build log, not done while the build runs.
  LogsRequest build_log;
  build_log.id = id;
  r = f.engine->logs(f.me, build_log);
  REQUIRE(r.ok);
  CHECK_THAT(r.result["data"].get<std::string>(), Contains("submitted: 5 units") && Contains("finished a_one"));
  CHECK(r.result["done"] == false);

  req.unit = "nope";
  CHECK(f.engine->logs(f.me, req).code == ErrorCode::not_found);
  build_log.id = id + 7;
  CHECK(f.engine->logs(f.me, build_log).code == ErrorCode::not_found);
}

TEST_CASE("engine: the logs of a finished build whose directory was deleted are an error, not an empty log",
          "[engine]") {
  EngineFixture f;
  f.make_engine().recover();
  const auto id = f.submit();
  REQUIRE(f.engine->cancel(f.me, id).ok);
  LogsRequest req;
  req.id = id;
  REQUIRE(f.engine->logs(f.me, req).ok);
  fs::remove_all(f.build_dir(id));
  for (const auto& unit : {std::optional<std::string>{}, std::optional<std::string>{"a_one"}}) {
    req.unit = unit;
    const auto r = f.engine->logs(f.me, req);
    CHECK(r.code == ErrorCode::not_found);
    CHECK(r.message ==
          "build " + std::to_string(id) + "'s logs are gone: " + f.build_dir(id) + " was deleted outside fad");
  }
}

TEST_CASE("engine: a unit that ran and has no log says so, even while its build runs", "[engine]") {
  EngineFixture f;
  f.make_engine().recover();
  const auto id = f.submit();
  LogsRequest req;
  req.id = id;
  req.unit = "a_one";
  REQUIRE(f.engine->logs(f.me, req).ok);  // queued: no log yet, and none expected
  f.engine->tick();                       // started: its log holds its command
  REQUIRE(f.engine->logs(f.me, req).ok);
  fs::remove_all(f.build_dir(id) + "/logs");
  const auto r = f.engine->logs(f.me, req);
  CHECK(r.code == ErrorCode::not_found);
  CHECK(r.message == "unit a_one's log is gone: " + f.build_dir(id) +
                         "/logs/a_one.log was deleted outside fad, or could not be created (fadd's log says why)");
}

TEST_CASE("engine: a log of control bytes is sent in slices that fit the message limit, and always moves on",
          "[engine]") {
  EngineFixture f;
  f.make_engine().recover();
  const auto id = f.submit();
  f.engine->tick();
  // JSON escapes each of these bytes as six (\u0001): the slice must shrink.
  const std::string log = f.build_dir(id) + "/logs/a_one.log";
  const std::size_t before = test::slurp(log).size();
  { std::ofstream(log, std::ios::app) << std::string(kMaxMessageBytes / 2, '\x01') << "end\n"; }
  LogsRequest req;
  req.id = id;
  req.unit = "a_one";
  req.offset = before;
  req.max_bytes = kMaxMessageBytes / 2;
  std::string got;
  for (int i = 0; i < 10 && got.size() < kMaxMessageBytes / 2 + 4; ++i) {
    auto r = f.engine->logs(f.me, req);
    REQUIRE(r.ok);
    CHECK(r.result.dump().size() < kMaxMessageBytes);
    const auto data = r.result["data"].get<std::string>();
    REQUIRE_FALSE(data.empty());
    got += data;
    CHECK(r.result["offset"] == req.offset + data.size());
    req.offset = r.result["offset"].get<std::uint64_t>();
  }
  // Nothing lost or repeated between slices.
  CHECK(got == std::string(kMaxMessageBytes / 2, '\x01') + "end\n");

  // A usual slice (a failed unit's last 16 KiB of coloured output) comes whole.
  req.offset = before;
  req.max_bytes = 16 * 1024;
  auto r = f.engine->logs(f.me, req);
  CHECK(r.result["data"].get<std::string>() == std::string(16 * 1024, '\x01'));
  // The smallest slice still moves on, however a byte escapes.
  req.offset = before + kMaxMessageBytes / 2 + 3;  // at the "\n"
  req.max_bytes = 1;
  r = f.engine->logs(f.me, req);
  CHECK(r.result["data"] == "\n");
  CHECK(r.result["offset"] == req.offset + 1);
}

TEST_CASE("engine: a log's UTF-8 text is sent as it is, split only between characters", "[engine]") {
  EngineFixture f;
  f.make_engine().recover();
  const auto id = f.submit();
  f.engine->tick();
  const std::string log = f.build_dir(id) + "/logs/a_one.log";
  const std::size_t before = test::slurp(log).size();
  // gcc's quotes in a UTF-8 locale, a Latin letter, an emoji; then a Latin-1
  // byte and a lone continuation byte, which JSON cannot carry.
  const std::string text =
      "error: \xE2\x80\x98"
      "foo\xE2\x80\x99 caf\xC3\xA9 \xF0\x9F\x98\x80\n";
  { std::ofstream(log, std::ios::app) << text << "x\xE9y\x80z\n"; }
  LogsRequest req;
  req.id = id;
  req.unit = "a_one";
  req.offset = before;
  auto r = f.engine->logs(f.me, req);
  REQUIRE(r.ok);
  CHECK(r.result["data"] == text + "x?y?z\n");

  // A slice that ends inside the emoji stops before it; the next one starts at it.
  const std::size_t emoji = text.find("\xF0");
  req.max_bytes = emoji + 2;
  r = f.engine->logs(f.me, req);
  CHECK(r.result["data"] == text.substr(0, emoji));
  CHECK(r.result["offset"] == before + emoji);
  req.offset = before + emoji;
  req.max_bytes = 1024;
  r = f.engine->logs(f.me, req);
  CHECK(r.result["data"].get<std::string>().rfind("\xF0\x9F\x98\x80\n", 0) == 0);
  // A slice too small for one character still moves on.
  req.max_bytes = 2;
  r = f.engine->logs(f.me, req);
  CHECK(r.result["data"] == "??");
  CHECK(r.result["offset"] == before + emoji + 2);

  // The compiler flushed half a character and is still writing: following
  // the log waits for the rest, rather than sending it as '?'s.
  const std::size_t end = test::slurp(log).size();
  { std::ofstream(log, std::ios::app) << "\xE2\x80"; }
  req.offset = end;
  req.max_bytes = 1024;
  r = f.engine->logs(f.me, req);
  CHECK(r.result["data"] == "");
  CHECK(r.result["offset"] == end);
  { std::ofstream(log, std::ios::app) << "\x99\n"; }
  r = f.engine->logs(f.me, req);
  CHECK(r.result["data"] == "\xE2\x80\x99\n");
  // A log that ended inside a character ends with '?'s.
  { std::ofstream(log, std::ios::app) << "\xE2"; }
  f.launcher.exit("a_one", 0);
  req.offset = end + 4;
  r = f.engine->logs(f.me, req);
  CHECK(r.result["data"] == "?");
  CHECK(r.result["done"] == true);
}

TEST_CASE("engine: a unit that compiles past unit_time_limit is ended, paused time left out, and fails saying why",
          "[engine]") {
  EngineFixture f;
  f.options.unit_time_limit_s = 600;
  f.make_engine().recover();
  const auto id = f.submit();
  f.engine->tick();
  const int pgid = f.launcher.pgid_of("a_one");
  REQUIRE(f.unit(id, "a_one")->state == UnitState::running);
  f.clock.advance(590);
  f.engine->tick();
  // Paused for an hour by its user: no compile time, no core held.
  REQUIRE(f.engine->pause(f.me, id).ok);
  f.engine->tick();
  f.clock.advance(3600);
  f.engine->tick();
  REQUIRE(f.engine->resume(f.me, id).ok);
  f.engine->tick();
  CHECK(f.launcher.signals_to(pgid) == std::vector<int>{SIGSTOP, SIGCONT});
  f.clock.advance(5);
  f.engine->tick();
  CHECK(f.launcher.signals_to(pgid).size() == 2);
  // Past the limit in compile time: asked to end, as a cancel asks, then killed.
  f.clock.advance(10);
  f.engine->tick();
  CHECK(f.launcher.signals_to(pgid) == std::vector<int>{SIGSTOP, SIGCONT, SIGTERM, SIGCONT});
  f.clock.advance(f.options.kill_grace_s + 1);
  f.engine->tick();
  CHECK(f.launcher.signals_to(pgid).back() == SIGKILL);
  f.launcher.exit("a_one", 128 + SIGKILL, true);
  f.engine->tick();
  CHECK(f.unit(id, "a_one")->state == UnitState::failed);
  CHECK(f.launcher.launch_count("a_one") == 1);  // not rerun: it would run as long again
  CHECK_THAT(test::slurp(f.build_dir(id) + "/build.log"), Contains("it compiled longer than unit_time_limit (10m)"));
}

TEST_CASE("engine: a unit whose cluster job is pending shows so, and its wait is no compile time", "[engine]") {
  EngineFixture f;
  f.options.unit_time_limit_s = 600;
  f.make_engine().recover();
  const auto id = f.submit();
  f.engine->tick();
  const int pgid = f.launcher.pgid_of("a_one");
  f.launcher.pending.insert(pgid);
  f.engine->tick();
  StatusRequest req;
  req.id = id;
  auto a_one = [&] {
    auto r = f.engine->status(f.me, req);
    REQUIRE(r.ok);
    for (const auto& u : r.result["builds"][0]["unit_list"])
      if (u["name"] == "a_one") return u;
    FAIL("no unit a_one");
    return nlohmann::json();
  };
  CHECK(a_one()["state"] == "pending");
  CHECK(f.unit(id, "a_one")->state == UnitState::running);  // fad's part is done: it was launched
  // An hour in Slurm's queue: nothing compiled, so not past the limit.
  f.clock.advance(3600);
  f.engine->tick();
  CHECK(a_one()["elapsed_s"].get<double>() < 1);
  CHECK(f.launcher.signals_to(pgid).empty());
  // Started: compile time counts from now.
  f.launcher.pending.clear();
  f.engine->tick();
  f.clock.advance(300);
  f.engine->tick();
  CHECK(a_one()["state"] == "running");
  CHECK(a_one()["elapsed_s"].get<double>() == Approx(300).margin(1));
  f.clock.advance(310);
  f.engine->tick();
  CHECK(f.launcher.signals_to(pgid) == std::vector<int>{SIGTERM, SIGCONT});
}

TEST_CASE("engine: a listed build's counts, archs and memory match its own view", "[engine]") {
  // The listing counts units in SQL; the build's view reads each one.
  EngineFixture f;
  f.make_engine().recover();
  const auto id = f.submit({"9.0", "12.0"});
  auto same = [&](std::int64_t build) {
    const auto [listed, detailed] = f.listed_and_detailed(build);
    INFO(listed.dump() << "\n" << detailed.dump());
    CHECK(listed == detailed);
    return listed;
  };
  CHECK(same(id)["units"]["queued"] == 5);
  f.engine->tick();
  f.launcher.memory[f.launcher.pgid_of("a_one")] = 300ull << 20;
  f.launcher.memory[f.launcher.pgid_of("b_one")] = 200ull << 20;
  f.clock.advance(1);
  f.engine->tick();
  auto listed = same(id);
  CHECK(listed["units"]["running"] == 4);
  CHECK(listed["current_bytes"] == 500ull << 20);
  f.launcher.exit("a_one", 0);
  f.launcher.exit("a_two", 1);
  f.engine->tick();
  listed = same(id);
  CHECK(listed["units"]["succeeded"] == 1);
  CHECK(listed["units"]["failed"] == 1);

  // A launched build's archs are those of its compiles, each once, in order.
  LaunchRequest l;
  l.session = 9;
  l.cwd = "/w";
  l.argv = {"/opt/nvcc", "-c", "/w/a.cu"};
  l.source = "/w/a.cu";
  l.archs = {"sm_90"};
  REQUIRE(f.engine->launch(f.me, l).ok);
  l.source = "/w/b.cu";
  l.archs = {"sm_80", "sm_90"};
  auto second = f.engine->launch(f.me, l);
  REQUIRE(second.ok);
  const auto session_build = f.store->unit(second.result.at("unit_id").get<std::int64_t>())->build_id;
  listed = same(session_build);
  CHECK(listed["archs"] == nlohmann::json{"sm_90", "sm_80"});
  CHECK(listed["units"]["total"] == 2);
}

TEST_CASE("engine: status has the contract fields", "[engine]") {
  EngineFixture f;
  f.probe.snap.swap_total = 8ull << 30;
  f.probe.snap.swap_free = 4ull << 30;
  f.probe.snap.psi_some_avg10 = 0.5;
  f.make_engine().recover();
  const auto id = f.submit();
  f.engine->tick();
  f.clock.advance(42);
  f.launcher.exit("a_one", 0);

  auto r = f.engine->status(f.me, StatusRequest{});
  REQUIRE(r.ok);
  const auto& d = r.result.at("daemon");
  CHECK(d.at("version").is_string());
  CHECK(d.at("pid") == static_cast<int>(::getpid()));
  CHECK(d.at("uptime_s") == 42);
  const auto& mem = d.at("memory");
  CHECK(mem.at("total_bytes") == f.probe.snap.total);
  CHECK(mem.at("available_bytes") == f.probe.snap.available);
  CHECK(mem.at("swap_total_bytes") == 8ull << 30);
  CHECK(mem.at("swap_free_bytes") == 4ull << 30);
  CHECK(mem.at("budget_bytes").get<std::uint64_t>() > 0);
  CHECK(mem.at("committed_bytes").is_number_unsigned());
  CHECK(mem.at("cgroup_limit_bytes").is_null());
  CHECK(mem.at("psi_some_avg10") == Approx(0.5));

  const auto& builds = r.result.at("builds");
  REQUIRE(builds.size() == 1);
  const auto& b = builds[0];
  CHECK(b.at("id") == id);
  CHECK(b.at("name") == "test");
  CHECK(b.at("state") == "running");
  CHECK(b.at("archs") == std::vector<std::string>{"9.0", "12.0"});
  CHECK(b.at("created_at") == f.clock.wall_);
  CHECK(b.at("finished_at").is_null());
  CHECK(b.at("units").at("total") == 5);
  CHECK(b.at("units").at("queued") == 1);
  CHECK(b.at("units").at("running") == 3);
  CHECK(b.at("units").at("succeeded") == 1);
  CHECK(b.at("units").at("failed") == 0);
  CHECK(b.at("peak_bytes").is_number());
  CHECK(b.at("artifact").is_null());
  CHECK_FALSE(b.contains("unit_list"));

  StatusRequest one;
  one.id = id;
  r = f.engine->status(f.me, one);
  REQUIRE(r.ok);
  const auto& list = r.result.at("builds").at(0).at("unit_list");
  REQUIRE(list.size() == 5);
  for (const auto& u : list) {
    for (const char* key : {"name", "state", "archs", "attempts", "threads", "estimate_bytes", "peak_bytes",
                            "started_at", "finished_at", "wait_reason"}) {
      INFO(key);
      CHECK(u.contains(key));
    }
  }
  CHECK(list[0].at("name") == "a_one");
  CHECK(list[0].at("state") == "succeeded");
  CHECK(list[0].at("attempts") == 1);
  CHECK(list[0].at("threads") == 2);
  CHECK(list[0].at("started_at") == f.clock.wall_);
  CHECK(list[0].at("finished_at") == f.clock.wall_);
  CHECK(list[0].at("wait_reason").is_null());
  CHECK(list[1].at("state") == "running");
  CHECK(list[1].at("finished_at").is_null());
  CHECK(list[4].at("name") == "link");
  CHECK(list[4].at("state") == "queued");
  CHECK(list[4].at("started_at").is_null());
  CHECK(list[4].at("archs") == std::vector<std::string>{"9.0", "12.0"});

  one.id = id + 1;
  CHECK(f.engine->status(f.me, one).code == ErrorCode::not_found);
}

TEST_CASE("engine: under memory pressure queued units wait with a reason", "[engine]") {
  EngineFixture f;
  f.probe.snap.available = 1ull << 30;  // below the 10% reserve of 64 GiB
  f.make_engine().recover();
  const auto id = f.submit();
  f.engine->tick();
  CHECK(f.launcher.launches.empty());

  StatusRequest req;
  req.id = id;
  auto r = f.engine->status(f.me, req);
  REQUIRE(r.ok);
  for (const auto& u : r.result["builds"][0]["unit_list"]) {
    if (u["name"] == "link") continue;  // not in the queue until the compiles are done
    INFO(u["name"]);
    CHECK(u["state"] == "queued");
    REQUIRE(u["wait_reason"].is_string());
    CHECK_FALSE(u["wait_reason"].get<std::string>().empty());
  }

  // Memory comes back: everything starts and the reasons are cleared.
  f.probe.snap.available = 60ull << 30;
  f.engine->tick();
  CHECK(f.launcher.launches.size() == 4);
  for (const auto& name : kCompileUnits) CHECK(f.unit(id, name)->wait_reason.empty());
}

TEST_CASE("engine: a tiny budget runs one unit alone and says why the others wait", "[engine]") {
  EngineFixture f;
  f.options.scheduler.budget = 1;
  f.make_engine().recover();
  const auto id = f.submit();
  f.engine->tick();
  REQUIRE(f.launcher.live() == std::vector<std::string>{"a_one"});
  for (const auto& name : {"a_two", "b_one", "b_two"}) {
    INFO(name);
    CHECK_THAT(f.unit(id, name)->wait_reason, Contains("needs"));
  }
  f.launcher.exit("a_one", 0);
  f.engine->tick();
  CHECK(f.launcher.live() == std::vector<std::string>{"a_two"});
}

TEST_CASE("engine: history lists finished builds with a duration", "[engine]") {
  EngineFixture f;
  f.make_engine().recover();
  const auto id = f.submit();
  f.engine->tick();
  REQUIRE(f.engine->cancel(f.me, id).ok);
  auto r = f.engine->history(f.me, HistoryRequest{});
  REQUIRE(r.ok);
  REQUIRE(r.result["builds"].size() == 1);
  CHECK(r.result["builds"][0]["id"] == id);
  CHECK(r.result["builds"][0]["state"] == "cancelled");
  CHECK(r.result["builds"][0]["duration_s"] == 0);
}

TEST_CASE("engine: a launch's learning key stays small however long its flags, and still tells flags apart",
          "[engine]") {
  EngineFixture f;
  f.make_engine().recover();
  LaunchRequest l;
  l.session = 9;
  l.cwd = "/w";
  l.source = "/w/a.cu";
  l.archs = {"sm_90"};
  const auto flags_of = [&](const std::string& define) {
    l.argv = {"/opt/nvcc", "-c", "/w/a.cu", "-DX=" + define, "-O3"};
    auto r = f.engine->launch(f.me, l);
    REQUIRE(r.ok);
    return f.store->unit(r.result.at("unit_id").get<std::int64_t>())->flags;
  };
  CHECK(flags_of("1") == "-c -DX=1 -O3");  // real flags: kept as they are
  const auto a = flags_of(std::string(100000, 'a'));
  const auto b = flags_of(std::string(99999, 'a') + "b");  // differs only past the kept prefix
  CHECK(a.size() < 2200);
  CHECK(b.size() < 2200);
  CHECK(a != b);
  CHECK(flags_of(std::string(100000, 'a')) == a);
}

TEST_CASE("engine: the daily history trim also bounds what the running estimator holds", "[engine]") {
  EngineFixture f;
  f.make_engine().recover();
  f.submit();
  f.engine->tick();
  f.launcher.memory[f.launcher.pgid_of("a_one")] = 200ull << 20;  // measured: learned at its end
  f.clock.advance(30);
  f.engine->tick();
  f.launcher.exit("a_one", 0);
  REQUIRE(f.engine->known_observations() == 1);
  // Then a user's ever new units fill their scope past its limit (newer rows
  // than a_one's, which is now the least recently seen key there).
  const auto scope = f.store->history().back().scope;
  f.store->db().exec(
      "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < " +
      std::to_string(Engine::kMaxHistoryKeysPerScope) +
      ") INSERT INTO unit_history(key, source, content_hash, flags, archs, compiler, family, arch_count, threads, "
      "profile, scope) SELECT 'k' || i, 'x.cu', 'h', '', '90', 'V', 'x', 1, 1, '0:1048576;10', '" +
      scope + "' FROM n");
  f.clock.advance(f.options.retention_every_s);
  f.engine->tick();
  // The trim dropped a_one's row, and the estimator learned anew from what is left.
  CHECK(f.store->history().size() == Engine::kMaxHistoryKeysPerScope);
  CHECK(f.engine->known_observations() == Engine::kMaxHistoryKeysPerScope);
}

TEST_CASE("engine: a submit's planning, done once its compiler answered, is charged to the submitting user",
          "[engine]") {
  EngineFixture f;
  f.make_engine().recover();
  std::vector<uid_t> charged;
  f.engine->set_request_charge([&charged](uid_t uid, std::chrono::steady_clock::duration cost) {
    CHECK(cost >= std::chrono::steady_clock::duration::zero());
    charged.push_back(uid);
  });
  f.submit();
  CHECK(charged == std::vector<uid_t>{f.me.uid});
}

}  // namespace fad
