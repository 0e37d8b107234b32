// The engine when the world misbehaves: the database cannot be written (a full
// disk, also between two writes of one step), a launcher's compiler vanishes after a cancel, a launcher names a
// process that is not its own child, a launch names a source fadd must not open, a fad run is killed.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <sstream>

#include "common/file_read.h"
#include "common/text.h"
#include "daemon/engine.h"
#include "fakes.h"

namespace fad {
namespace {

using Catch::Contains;
using test::EngineFixture;
using test::kCompileUnits;
using test::LogCapture;
namespace fs = std::filesystem;

/// Makes every write to the database fail, as a full disk does, or lifts that.
void database_writable(EngineFixture& f, bool writable) {
  f.store->db().exec(writable ? "PRAGMA query_only = 0" : "PRAGMA query_only = 1");
}

/// Makes the writes a trigger `condition` selects fail as a full disk does
/// (the rest go through), so a fault can land between two writes; `lift` removes it.
void refuse_writes(EngineFixture& f, const std::string& condition) {
  f.store->db().exec("CREATE TEMP TRIGGER full_disk BEFORE " + condition +
                     " BEGIN SELECT RAISE(FAIL, 'database or disk is full'); END");
}
void lift(EngineFixture& f) { f.store->db().exec("DROP TRIGGER temp.full_disk"); }

LaunchRequest launch_of(const std::string& source) {
  LaunchRequest l;
  l.session = 77;
  l.cwd = "/w";
  l.argv = {"/opt/nvcc", "-c", source, "-o", "/w/out.o"};
  l.source = source;
  l.output = "/w/out.o";
  l.archs = {"sm_90"};
  return l;
}

/// This user's launcher process `pid_offset` after the test's own pid, which
/// fadd sees (offset 0: the test's own pid), started at `start_ticks`.
Caller seen_launcher(EngineFixture& f, int pid_offset, std::uint64_t start_ticks) {
  Caller c = f.me;
  c.pid = f.me.pid + pid_offset;
  f.launcher.processes[c.pid] = ProcessInfo{1, c.pid, f.me.uid, start_ticks};
  return c;
}

/// Asks fadd to launch one external compile as `who`; returns its unit id.
std::int64_t queued_launch(EngineFixture& f, const Caller& who, const LaunchRequest& l) {
  auto r = f.engine->launch(who, l);
  REQUIRE(r.ok);
  return r.result.at("unit_id").get<std::int64_t>();
}

/// Launches one external compile and lets it through admission; returns its unit id.
std::int64_t admitted_launch(EngineFixture& f, const LaunchRequest& l) {
  const auto unit = queued_launch(f, f.me, l);
  f.engine->tick();
  auto poll = f.engine->launch_poll(f.me, UnitRequest{unit});
  REQUIRE(poll.ok);
  REQUIRE(poll.result["state"] == "admitted");
  return unit;
}

/// Lets one external compile through admission and reports `pid` as its
/// compiler, a child of this client leading its own group since `start_ticks`.
std::int64_t started_launch(EngineFixture& f, const LaunchRequest& l, int pid, std::uint64_t start_ticks = 0) {
  const auto unit = admitted_launch(f, l);
  f.launcher.processes[pid] = ProcessInfo{f.me.pid, pid, f.me.uid, start_ticks};
  REQUIRE(f.engine->launch_started(f.me, LaunchStartedRequest{unit, pid}).ok);
  return unit;
}

/// Opens a fad run build as this process, known by its pid and start time (4242).
std::int64_t open_run_build(EngineFixture& f, const std::string& name) {
  f.launcher.processes[f.me.pid] = ProcessInfo{1, f.me.pid, f.me.uid, 4242};
  auto opened = f.engine->open_build(f.me, OpenBuildRequest{name, "ninja", std::nullopt});
  REQUIRE(opened.ok);
  return opened.result.at("id").get<std::int64_t>();
}

/// One tick a second for `seconds`.
void tick_for(EngineFixture& f, int seconds) {
  for (int i = 0; i < seconds; ++i) {
    f.clock.advance(1);
    f.engine->tick();
  }
}

/// fadd tells a process group from a later one of the same id only within a
/// boot it can name: without a boot id, nothing is taken back at a restart.
bool boot_id_known() { return !read_small_file("/proc/sys/kernel/random/boot_id").empty(); }

/// A launched compile (b.cu, compiler `pid` holding 1 GiB) running when
/// fadd is killed, and a new fadd started; returns its unit id.
std::int64_t taken_back_launch(EngineFixture& f, int pid) {
  f.make_engine().recover();
  const auto unit = started_launch(f, launch_of("/w/b.cu"), pid, 4100);
  f.launcher.memory[pid] = 1ull << 30;
  tick_for(f, 3);
  f.engine.reset();  // kill -9; the launcher's compile runs on
  f.launcher.forget_callbacks();
  f.launcher.adopted.clear();
  f.make_engine().recover();
  return unit;
}

}  // namespace

TEST_CASE("engine faults: a unit that ends while the database cannot be written is never lost", "[engine][faults]") {
  EngineFixture f;
  f.make_engine().recover();
  const auto id = f.submit({"9.0"});
  f.engine->tick();
  REQUIRE(f.launcher.live() == kCompileUnits);

  database_writable(f, false);
  f.launcher.exit("a_one", 0);
  f.launcher.exit("a_two", 0);
  // Not recorded yet, not forgotten: the database still says running (a crash
  // now requeues them), and fadd says why it admits nothing.
  CHECK(f.unit(id, "a_one")->state == UnitState::running);
  CHECK_THAT(f.engine->storage_problem(), Contains("cannot write the database"));
  auto status = f.engine->status(f.me, StatusRequest{});
  REQUIRE(status.ok);
  REQUIRE(status.result["daemon"]["warnings"].size() == 1);
  CHECK_THAT(status.result["daemon"]["warnings"][0].get<std::string>(), Contains("no new units start"));
  // Shown as they ended, in the listing's counts as in the build's own view.
  const auto [listed, detailed] = f.listed_and_detailed(id);
  CHECK(listed["units"]["succeeded"] == 2);
  CHECK(listed["units"]["running"] == 2);
  CHECK(listed == detailed);
  for (int i = 0; i < 3; ++i) f.engine->tick();  // retried, still failing, nothing new started
  f.launcher.exit("b_one", 0);
  f.launcher.exit("b_two", 0);
  f.engine->tick();
  CHECK_FALSE(f.launcher.find("link"));
  CHECK(f.engine->running_count() == 0);

  // Space is back: every end is recorded once, the build goes on by itself.
  CHECK(f.store->unit_attempts(id).empty());
  database_writable(f, true);
  f.engine->tick();
  CHECK(f.engine->storage_problem().empty());
  for (const auto& name : kCompileUnits) {
    INFO(name);
    CHECK(f.unit(id, name)->state == UnitState::succeeded);
  }
  CHECK(f.store->history().size() == 4);  // learned once each
  // The report's rows too, once each, in the order the units ended.
  const auto attempts = f.store->unit_attempts(id);
  REQUIRE(attempts.size() == 4);
  CHECK(attempts[0].unit_id == f.unit(id, "a_one")->id);
  CHECK(attempts[3].unit_id == f.unit(id, "b_two")->id);
  for (const auto& a : attempts) CHECK(a.outcome == "succeeded");
  f.engine->tick();
  REQUIRE(f.launcher.find("link"));
  test::write_file(f.artifact(id) + ".tmp", "ELF");
  f.launcher.exit("link", 0);
  CHECK(f.build_state(id) == BuildState::succeeded);
  CHECK(f.engine->status(f.me, StatusRequest{}).result["daemon"]["warnings"].empty());
}

TEST_CASE("engine faults: a build whose last unit ended on a full disk ended then, not when space came back",
          "[engine][faults]") {
  EngineFixture f;
  f.make_engine().recover();
  const auto id = f.submit({"9.0"});
  f.engine->tick();
  for (const auto& name : kCompileUnits) f.launcher.exit(name, 0);
  f.engine->tick();
  REQUIRE(f.launcher.find("link"));
  test::write_file(f.artifact(id) + ".tmp", "ELF");
  f.clock.wall_ = "2026-01-02T03:10:00Z";
  database_writable(f, false);
  f.launcher.exit("link", 0);
  tick_for(f, 3);
  f.clock.wall_ = "2026-01-02T04:10:00Z";  // an hour later
  database_writable(f, true);
  f.engine->tick();
  const auto build = f.store->build(id);
  REQUIRE(build);
  CHECK(build->state == BuildState::succeeded);
  CHECK(build->finished_at == std::optional<std::string>("2026-01-02T03:10:00Z"));
}

TEST_CASE("engine faults: a submit or launch while the database cannot be written is refused", "[engine][faults]") {
  EngineFixture f;
  f.make_engine().recover();
  database_writable(f, false);
  auto r = f.submit_as(f.me, SubmitRequest{{"9.0"}, "*", std::nullopt, "x"});
  CHECK_FALSE(r.ok);
  CHECK_THAT(r.message, Contains("cannot record the build"));
  auto l = f.engine->launch(f.me, launch_of("/w/a.cu"));
  CHECK_FALSE(l.ok);
  CHECK_THAT(l.message, Contains("cannot write the database"));
  database_writable(f, true);
  f.engine->tick();
  CHECK(f.engine->storage_problem().empty());
  CHECK(f.submit_as(f.me, SubmitRequest{{"9.0"}, "*", std::nullopt, "x"}).ok);
}

TEST_CASE("engine faults: a waiting launcher is told the database cannot be written", "[engine][faults]") {
  EngineFixture f;
  f.make_engine().recover();
  const auto unit = queued_launch(f, f.me, launch_of("/w/a.cu"));
  database_writable(f, false);
  f.engine->tick();
  REQUIRE_FALSE(f.engine->storage_problem().empty());
  auto poll = f.engine->launch_poll(f.me, UnitRequest{unit});
  REQUIRE(poll.ok);
  CHECK(poll.result["state"] == "queued");
  CHECK_THAT(poll.result["wait_reason"].get<std::string>(), Contains("cannot write its database"));
  database_writable(f, true);
  f.engine->tick();
  CHECK(f.engine->launch_poll(f.me, UnitRequest{unit}).result["state"] == "admitted");
}

TEST_CASE("engine faults: compiles left to their launchers by a restart are cancelled, and the build log says why",
          "[engine][faults]") {
  const bool boot_known = boot_id_known();
  EngineFixture f;
  f.make_engine().recover();
  const auto waiting = queued_launch(f, f.me, launch_of("/w/a.cu"));
  const auto running = started_launch(f, launch_of("/w/b.cu"), f.me.pid + 50, 4100);
  const auto reused = started_launch(f, launch_of("/w/d.cu"), f.me.pid + 60, 4200);
  const auto build = f.store->unit(waiting)->build_id;
  f.engine.reset();  // fadd goes away; its launchers compile without it
  f.launcher.forget_callbacks();
  f.launcher.processes[f.me.pid + 60].start_ticks = 4300;  // d.cu's compiler ended, its id was given again
  f.make_engine().recover();
  CHECK(f.store->unit(waiting)->state == UnitState::cancelled);
  // Its compiler still runs: taken back (below), where process groups can be told apart.
  CHECK(f.store->unit(running)->state == (boot_known ? UnitState::running : UnitState::cancelled));
  CHECK(f.store->unit(reused)->state == UnitState::cancelled);
  if (boot_known) {
    // A compile the crashed fadd may have frozen (pause, memory pressure) is
    // continued, never killed: its launcher runs it on, its build tool waits
    // for it. A process that only has its id now is not signalled at all.
    CHECK(f.launcher.signals_to(f.me.pid + 50) == std::vector<int>{SIGCONT});
    CHECK(f.launcher.signals_to(f.me.pid + 60).empty());
  }
  LogsRequest log;
  log.id = build;
  const auto r = f.engine->logs(f.me, log);
  REQUIRE(r.ok);
  CHECK_THAT(r.result["data"].get<std::string>(),
             Contains("fadd restarted: " + std::string(boot_known ? "2" : "3") +
                      " compile(s) it had not seen end were left to their launchers"));
  CHECK_THAT(r.result["data"].get<std::string>(), Contains("a launcher still waiting launches its compile again"));
  // A launcher still waiting that asks the new fadd learns why, and launches
  // it again; a compile cancelled by anyone else is only cancelled.
  const auto poll = f.engine->launch_poll(f.me, UnitRequest{waiting});
  REQUIRE(poll.ok);
  CHECK(poll.result["state"] == "cancelled");
  CHECK(poll.result.value("relaunch", false));
  CHECK(poll.result.value("why", "") == "fadd restarted");
  const auto other = queued_launch(f, f.me, launch_of("/w/c.cu"));
  REQUIRE(f.engine->cancel(f.me, f.store->unit(other)->build_id).ok);
  const auto cancelled = f.engine->launch_poll(f.me, UnitRequest{other});
  CHECK(cancelled.result["state"] == "cancelled");
  CHECK_FALSE(cancelled.result.contains("relaunch"));
}

TEST_CASE(
    "engine faults: a compile still running when fadd restarts is taken back: it counts in admission and its "
    "end is recorded",
    "[engine][faults]") {
  if (!boot_id_known()) {
    WARN("skipped: no boot id here, so no process group outlives a restart in fadd's eyes");
    return;
  }
  EngineFixture f;
  const int pid = f.me.pid + 50;
  const auto unit = taken_back_launch(f, pid);
  const auto learned = f.store->history().size();
  // Bug: it was recorded cancelled and unseen by the scheduler, so the new
  // fadd admitted as if its memory were free.
  REQUIRE(f.store->unit(unit)->state == UnitState::running);
  CHECK(f.launcher.signals_to(pid) == std::vector<int>{SIGCONT});
  CHECK(f.launcher.adopted.count(pid) == 0);  // only its leader would move into a cgroup
  f.engine->tick();
  const auto estimate = f.store->unit(unit)->estimate_bytes;
  REQUIRE(estimate > 0);
  const auto memory = f.engine->status(f.me, StatusRequest{}).result["daemon"]["memory"];
  CHECK(memory["committed_bytes"].get<std::uint64_t>() >= estimate);
  CHECK(memory["used_bytes"].get<std::uint64_t>() == 1ull << 30);
  // Room for one more such compile, not for two: the next waits for it.
  f.probe.snap.available -= memory["budget_bytes"].get<std::uint64_t>() - estimate * 3 / 2;
  const auto other = queued_launch(f, f.me, launch_of("/w/c.cu"));
  tick_for(f, 3);
  CHECK(f.store->unit(other)->state == UnitState::queued);
  // Its launcher reports the end to the new fadd: recorded, and the next one goes.
  f.launcher.gone.insert(pid);
  const auto done = f.engine->launch_finished(f.me, LaunchFinishedRequest{unit, 0, false});
  REQUIRE(done.ok);
  CHECK_FALSE(done.result.value("requeue", true));
  CHECK(f.store->unit(unit)->state == UnitState::succeeded);
  // What this fadd saw of it misses its start: nothing is learnt from it.
  CHECK(f.store->history().size() == learned);
  REQUIRE(f.engine->launch_poll(f.me, UnitRequest{other}).ok);
  f.engine->tick();
  CHECK(f.engine->launch_poll(f.me, UnitRequest{other}).result["state"] == "admitted");
  LogsRequest log;
  log.id = f.store->unit(unit)->build_id;
  CHECK_THAT(f.engine->logs(f.me, log).result["data"].get<std::string>(), Contains("took back out.o"));
}

TEST_CASE("engine faults: a compile taken back at start whose end nobody reports is cancelled, not failed",
          "[engine][faults]") {
  if (!boot_id_known()) {
    WARN("skipped: no boot id here, so no process group outlives a restart in fadd's eyes");
    return;
  }
  EngineFixture f;
  const int pid = f.me.pid + 50;
  const auto unit = taken_back_launch(f, pid);
  REQUIRE(f.store->unit(unit)->state == UnitState::running);
  // It ended while the new fadd was starting: its launcher found no one
  // listening and exited. Bug to avoid: recorded failed, it would have
  // failed a build its build tool may well have finished.
  f.launcher.gone.insert(pid);
  f.launcher.processes.erase(pid);
  tick_for(f, 15);
  CHECK(f.store->unit(unit)->state == UnitState::cancelled);
  LogsRequest log;
  log.id = f.store->unit(unit)->build_id;
  CHECK_THAT(f.engine->logs(f.me, log).result["data"].get<std::string>(),
             Contains("out.o ended without a report to this fadd"));
}

TEST_CASE("engine faults: a compile taken back at start whose launcher vanishes later fails, as any other",
          "[engine][faults]") {
  if (!boot_id_known()) {
    WARN("skipped: no boot id here, so no process group outlives a restart in fadd's eyes");
    return;
  }
  EngineFixture f;
  const int pid = f.me.pid + 50;
  const auto unit = taken_back_launch(f, pid);
  tick_for(f, 60);  // compiling under the new fadd for a minute
  REQUIRE(f.store->unit(unit)->state == UnitState::running);
  f.launcher.gone.insert(pid);
  f.launcher.processes.erase(pid);
  tick_for(f, 15);
  CHECK(f.store->unit(unit)->state == UnitState::failed);
}

TEST_CASE("engine faults: a compile taken back at start is held to unit_time_limit from then on", "[engine][faults]") {
  if (!boot_id_known()) {
    WARN("skipped: no boot id here, so no process group outlives a restart in fadd's eyes");
    return;
  }
  EngineFixture f;
  f.options.unit_time_limit_s = 60;
  f.make_engine().recover();
  const int pid = f.me.pid + 50;
  const auto unit = started_launch(f, launch_of("/w/b.cu"), pid, 4100);
  tick_for(f, 3);
  // The old fadd is gone for an hour (stopped, then killed): whether the
  // compile was frozen meanwhile is not known, so that hour is not held
  // against it.
  f.clock.advance(3600);
  f.engine.reset();
  f.launcher.forget_callbacks();
  f.launcher.adopted.clear();
  f.make_engine().recover();
  REQUIRE(f.store->unit(unit)->state == UnitState::running);
  tick_for(f, 55);
  CHECK(f.launcher.signals_to(pid) == std::vector<int>{SIGCONT});  // the take-back's
  tick_for(f, 10);
  CHECK(f.launcher.signals_to(pid) == std::vector<int>{SIGCONT, SIGTERM, SIGCONT});
}

TEST_CASE("engine faults: a launch session's build lives on through a restart and ends as its compiles did",
          "[engine][faults]") {
  EngineFixture f;
  f.make_engine().recover();
  const auto waiting = queued_launch(f, f.me, launch_of("/w/a.cu"));
  const auto build = f.store->unit(waiting)->build_id;
  f.engine.reset();
  f.make_engine().recover();
  // Nothing failed: its launcher compiled without fadd, and its build tool
  // goes on compiling into the same session.
  CHECK(f.store->build(build)->state == BuildState::running);
  auto again = launch_of("/w/b.cu");
  again.cached = true;
  const auto joined = f.engine->launch(f.me, again);
  REQUIRE(joined.ok);
  CHECK(joined.result.at("build_id").get<std::int64_t>() == build);
  f.engine->tick();
  f.clock.advance(31);
  f.engine->tick();
  CHECK(f.store->build(build)->state == BuildState::succeeded);
  CHECK(f.store->unit(waiting)->state == UnitState::cancelled);
}

TEST_CASE("engine faults: a compile that failed on a full disk runs again once there is room, not at once",
          "[engine][faults]") {
  // The database may still have free pages: its writes alone do not stop
  // admission, and the three attempts would be spent in a second.
  EngineFixture f;
  bool full = false;
  f.options.disk_nearly_full = [&full](const std::string&) { return full; };
  f.make_engine().recover();
  const auto id = f.submit();
  f.engine->tick();
  REQUIRE(f.launcher.launch_count("a_one") == 1);
  full = true;
  f.launcher.exit("a_one", 1);
  for (int i = 0; i < 5; ++i) {
    f.clock.advance(1);
    f.engine->tick();
  }
  CHECK(f.launcher.launch_count("a_one") == 1);
  CHECK(f.store->unit(f.store->units(id)[0].id)->state == UnitState::queued);
  const auto shown = f.engine->status(f.me, StatusRequest{id});
  REQUIRE(shown.ok);
  for (const auto& u : shown.result["builds"][0]["unit_list"])
    if (u["name"] == "a_one") CHECK_THAT(u["wait_reason"].get<std::string>(), Contains("waiting for room on the disk"));
  // Room again: it runs, and the build succeeds.
  full = false;
  f.engine->tick();
  CHECK(f.launcher.launch_count("a_one") == 2);
  f.finish_build(id);
  CHECK(f.build_state(id) == BuildState::succeeded);
}

TEST_CASE("engine faults: a unit whose start is only half written goes back to the queue", "[engine][faults]") {
  EngineFixture f;
  f.make_engine().recover();
  const auto id = f.submit({"9.0"});
  // The unit's row says running; the build's row, written next, cannot be.
  refuse_writes(f, "UPDATE ON builds");
  f.engine->tick();
  CHECK(f.launcher.launches.empty());
  CHECK(f.engine->running_count() == 0);
  CHECK_THAT(f.engine->storage_problem(), Contains("cannot write the database"));
  for (int i = 0; i < 2; ++i) f.engine->tick();
  CHECK(f.launcher.launches.empty());
  for (const auto& u : f.store->units(id)) {
    INFO(u.name);
    CHECK(u.state == UnitState::queued);  // no row shown running with nothing behind it
  }
  // Their rows cannot take the reason they wait: status says it all the same.
  const auto shown = f.engine->status(f.me, StatusRequest{id});
  REQUIRE(shown.ok);
  for (const auto& u : shown.result["builds"][0]["unit_list"]) {
    INFO(u["name"]);
    if (u["state"] == "queued") CHECK_THAT(u["wait_reason"].get<std::string>(), Contains("cannot write its database"));
  }

  lift(f);
  f.engine->tick();
  f.engine->tick();
  CHECK(f.engine->storage_problem().empty());
  REQUIRE(f.launcher.live() == kCompileUnits);
  for (const auto& name : kCompileUnits) f.launcher.exit(name, 0);
  f.engine->tick();
  REQUIRE(f.launcher.find("link"));
  test::write_file(f.artifact(id) + ".tmp", "ELF");
  f.launcher.exit("link", 0);
  CHECK(f.build_state(id) == BuildState::succeeded);
}

TEST_CASE("engine faults: a disk that lets some writes through is logged once per spell, not on every tick",
          "[engine][faults]") {
  LogCapture log;
  EngineFixture f;
  f.make_engine().recover();
  f.submit();
  // The tick's own small write goes through; starting a unit does not.
  refuse_writes(f, "UPDATE OF state ON units WHEN NEW.state = 'running'");
  tick_for(f, 120);
  CHECK(log.count("cannot write the database") == 1);
  CHECK(log.count("can be written again") == 0);
  tick_for(f, 200);  // still failing after five minutes: said again
  CHECK(log.count("cannot write the database") == 2);
  lift(f);
  tick_for(f, 15);
  CHECK(log.count("can be written again") == 1);
  CHECK(f.engine->storage_problem().empty());
}

TEST_CASE("engine faults: a database file emptied in place while fadd runs is said in status and the log",
          "[engine][faults]") {
  LogCapture log;
  EngineFixture f;
  f.make_engine().recover();
  const auto id = f.submit();
  tick_for(f, 15);
  CHECK(f.engine->status(f.me, StatusRequest{}).result["daemon"]["warnings"].empty());
  // `: > fad.db`: the same file (dev and inode unchanged), no longer a database.
  fs::resize_file(f.state + "/fad.db", 0);
  tick_for(f, 15);
  const auto warnings = f.engine->status(f.me, StatusRequest{}).result["daemon"]["warnings"];
  REQUIRE(warnings.size() == 1);
  CHECK_THAT(warnings[0].get<std::string>(), Contains("fad.db was deleted, replaced or emptied while fadd ran"));
  CHECK(log.count("was deleted, replaced or emptied") == 1);
  // Its builds still run to the end.
  f.finish_build(id);
  CHECK(f.build_state(id) == BuildState::succeeded);
}

TEST_CASE("engine faults: a database file deleted while fadd runs is said in status and the log, once",
          "[engine][faults]") {
  LogCapture log;
  EngineFixture f;
  f.make_engine().recover();
  tick_for(f, 15);
  CHECK(f.engine->status(f.me, StatusRequest{}).result["daemon"]["warnings"].empty());
  // A cleaner of old files, or an administrator starting afresh by hand.
  for (const char* part : {"/fad.db", "/fad.db-wal", "/fad.db-shm"}) fs::remove(f.state + part);
  tick_for(f, 15);
  const auto warnings = f.engine->status(f.me, StatusRequest{}).result["daemon"]["warnings"];
  REQUIRE(warnings.size() == 1);
  CHECK_THAT(warnings[0].get<std::string>(), Contains("fad.db was deleted, replaced or emptied while fadd ran"));
  tick_for(f, 60);
  CHECK(log.count("was deleted, replaced or emptied") == 1);
  // It goes on with the file it has open: a build still runs to the end.
  const auto id = f.submit();
  f.finish_build(id);
  CHECK(f.build_state(id) == BuildState::succeeded);
}

TEST_CASE("engine faults: a unit that cannot start while its failure cannot be written is failed once it can",
          "[engine][faults]") {
  EngineFixture f;
  f.options.scheduler.max_parallel_units = 1;
  f.make_engine().recover();
  const auto id = f.submit();
  refuse_writes(f, "UPDATE OF state ON units WHEN NEW.state = 'failed'");
  f.launcher.fail_next = true;
  f.engine->tick();
  CHECK(f.launcher.launches.empty());
  CHECK(f.engine->running_count() == 0);
  CHECK_THAT(f.engine->storage_problem(), Contains("cannot write the database"));
  f.engine->tick();
  CHECK(f.launcher.launches.empty());  // nothing else of the failed build starts

  lift(f);
  f.engine->tick();
  CHECK(f.engine->storage_problem().empty());
  const auto failed = f.unit(id, "a_one");
  CHECK(failed->state == UnitState::failed);
  CHECK_FALSE(failed->exit_code);  // it never ran: no exit code to show
  CHECK(f.unit(id, "a_two")->state == UnitState::cancelled);
  CHECK(f.build_state(id) == BuildState::failed);
  CHECK_THAT(test::slurp(f.build_dir(id) + "/build.log"), Contains("FAILED a_one: could not start"));
  CHECK(f.launcher.launches.empty());
}

namespace {
/// A compile admitted to this client's launcher (seen by fadd, started at
/// tick 777), which then dies (a build tool killed, a terminal closed) 5 s
/// later, before it reported a compiler; 5 s after that.
std::int64_t abandoned_admission(EngineFixture& f, const std::string& source) {
  seen_launcher(f, 0, 777);
  const auto unit = admitted_launch(f, launch_of(source));
  tick_for(f, 5);
  REQUIRE(f.engine->running_count() == 1);  // alive: its admission holds
  f.launcher.processes.erase(f.me.pid);
  tick_for(f, 5);
  return unit;
}
}  // namespace

TEST_CASE("engine faults: an admission whose launcher exited before starting its compiler is freed at once",
          "[engine][faults]") {
  EngineFixture f;
  f.make_engine().recover();
  const auto unit = abandoned_admission(f, "/w/a.cu");
  CHECK(f.engine->running_count() == 0);  // not the 15 s meant for a launcher fadd cannot see
  // Its compiler never ran: not a failure of the compile, which is no longer wanted.
  CHECK(f.store->unit(unit)->state == UnitState::cancelled);

  // A pid taken by another process since counts as gone too.
  seen_launcher(f, 0, 777);
  const auto second = admitted_launch(f, launch_of("/w/b.cu"));
  f.launcher.processes[f.me.pid].start_ticks = 900;
  tick_for(f, 5);
  CHECK(f.engine->running_count() == 0);
  CHECK(f.store->unit(second)->state == UnitState::cancelled);

  // One fadd cannot see holds its admission 15 s, then waits again, and
  // once it has not asked for 30 s it is dropped.
  f.launcher.processes.erase(f.me.pid);
  const auto third = admitted_launch(f, launch_of("/w/c.cu"));
  tick_for(f, 10);
  CHECK(f.engine->running_count() == 1);
  tick_for(f, 10);
  CHECK(f.engine->running_count() == 0);
  CHECK(f.store->unit(third)->state == UnitState::queued);
  tick_for(f, 15);
  CHECK(f.store->unit(third)->state == UnitState::cancelled);

  // One alive that only polls and never starts a compiler (stopped right
  // after asking, or a client holding a core from other users' compiles)
  // gives its admission back after 15 s and waits again.
  seen_launcher(f, 0, 777);
  const auto fourth = admitted_launch(f, launch_of("/w/d.cu"));
  tick_for(f, 10);
  CHECK(f.engine->running_count() == 1);
  tick_for(f, 10);
  CHECK(f.engine->running_count() == 0);
  CHECK(f.store->unit(fourth)->state == UnitState::queued);
}

TEST_CASE("engine faults: a launch session none of whose compiles finished ends cancelled, not succeeded",
          "[engine][faults]") {
  // Bug (from a probe): a session whose one launcher died before starting
  // its compiler closed as "succeeded" with 0 of 1 units done.
  EngineFixture f;
  f.make_engine().recover();
  const auto unit = abandoned_admission(f, "/w/a.cu");
  const auto build = f.store->unit(unit)->build_id;
  REQUIRE(f.store->unit(unit)->state == UnitState::cancelled);
  tick_for(f, 31);
  const auto closed = f.store->build(build);
  CHECK(closed->state == BuildState::cancelled);
  CHECK(closed->error == "none of its 1 compile(s) finished: their launchers left first");
  CHECK_THAT(test::slurp(f.build_dir(build) + "/build.log"),
             Contains("build cancelled: none of its 1 compile(s) finished: their launchers left first"));
}

TEST_CASE("engine faults: a user whose launchers let admissions lapse again and again waits longer each time",
          "[engine][faults]") {
  EngineFixture f;
  f.make_engine().recover();
  seen_launcher(f, 0, 777);
  const auto a = admitted_launch(f, launch_of("/w/a.cu"));
  std::vector<std::int64_t> units{a};
  std::map<std::int64_t, json> seen;
  // Its launchers poll every second and never start a compiler.
  auto poll_for = [&](int seconds) {
    for (int i = 0; i < seconds; ++i) {
      f.clock.advance(1);
      f.engine->tick();
      for (auto id : units) {
        auto poll = f.engine->launch_poll(f.me, UnitRequest{id});
        REQUIRE(poll.ok);
        seen[id] = poll.result;
      }
    }
    return seen[a].at("state").get<std::string>();
  };
  // Once: admitted again as soon as it asks (a Ctrl-Z at the wrong moment),
  // however many admissions lapsed with it: another one, ended by its
  // launcher (Ctrl-C) before its compiler started, 11 s before.
  const auto other = queued_launch(f, f.me, launch_of("/w/z.cu"));
  units.push_back(other);
  poll_for(5);
  REQUIRE(seen[other].at("state") == "admitted");
  REQUIRE(f.engine->launch_finished(f.me, LaunchFinishedRequest{other, 130, false}).ok);
  units = {a};
  poll_for(11);
  CHECK(poll_for(1) == "admitted");
  // Twice: none of the user's launched compiles is admitted for 15 s, a new
  // one neither (a client makes new ones at will).
  poll_for(16);
  const auto b = queued_launch(f, f.me, launch_of("/w/b.cu"));
  units.push_back(b);
  CHECK(poll_for(12) == "queued");
  CHECK(f.engine->running_count() == 0);
  CHECK_THAT(seen[b].value("wait_reason", ""),
             Contains("did not start their compiler when admitted (2 times within the hour); the next is admitted "
                      "after 15s"));
  // Then one at a time, until its compiler starts.
  poll_for(4);
  REQUIRE(f.engine->running_count() == 1);
  const auto first = seen[a].at("state") == "admitted" ? a : b, second = first == a ? b : a;
  CHECK(seen[second].at("state") == "queued");
  CHECK_THAT(seen[second].value("wait_reason", ""), Contains("one compile of theirs is admitted at a time"));
  f.launcher.processes[5000] = ProcessInfo{f.me.pid, 5000, f.me.uid, 0};
  REQUIRE(f.engine->launch_started(f.me, LaunchStartedRequest{first, 5000}).ok);
  poll_for(1);
  CHECK(seen[second].at("state") == "admitted");
  // Told it is admitted, it reports an end without a compiler: a lapse too
  // (the third), and the hold doubles.
  REQUIRE(f.engine->launch_finished(f.me, LaunchFinishedRequest{second, 1, false}).ok);
  const auto c = queued_launch(f, f.me, launch_of("/w/c.cu"));
  units = {c};
  poll_for(28);
  CHECK(seen[c].at("state") == "queued");
  CHECK_THAT(seen[c].value("wait_reason", ""), Contains("(3 times within the hour); the next is admitted after 30s"));
  poll_for(3);
  CHECK(seen[c].at("state") == "admitted");
  // An hour without a lapse, and it is forgotten.
  f.launcher.processes[5001] = ProcessInfo{f.me.pid, 5001, f.me.uid, 0};
  REQUIRE(f.engine->launch_started(f.me, LaunchStartedRequest{c, 5001}).ok);
  f.clock.advance(3601);
  const auto d = queued_launch(f, f.me, launch_of("/w/d.cu"));
  const auto e = queued_launch(f, f.me, launch_of("/w/e.cu"));
  units = {d, e};
  poll_for(1);
  CHECK(seen[d].at("state") == "admitted");
  CHECK(seen[e].at("state") == "admitted");
}

TEST_CASE(
    "engine faults: a waiting compile is kept while its launcher lives, however long it is silent (Ctrl-Z), "
    "and dropped within seconds once it exits",
    "[engine][faults]") {
  EngineFixture f;
  f.options.scheduler.max_parallel_units = 1;
  f.make_engine().recover();
  seen_launcher(f, 0, 777);
  admitted_launch(f, launch_of("/w/a.cu"));
  const Caller stopped = seen_launcher(f, 1, 778);
  const auto waiting = queued_launch(f, stopped, launch_of("/w/b.cu"));
  // Its build is stopped with Ctrl-Z for ten minutes: no poll at all.
  tick_for(f, 600);
  CHECK(f.store->unit(waiting)->state == UnitState::queued);
  const auto poll = f.engine->launch_poll(stopped, UnitRequest{waiting});
  REQUIRE(poll.ok);
  CHECK(poll.result["state"] == "queued");  // fg: it goes on waiting
  // Killed instead: its compile leaves the queue.
  f.launcher.processes.erase(stopped.pid);
  tick_for(f, 5);
  CHECK(f.store->unit(waiting)->state == UnitState::cancelled);
}

TEST_CASE(
    "engine faults: a launcher that exits while its compile waits, admitted at that very moment, frees the "
    "admission within seconds",
    "[engine][faults]") {
  // Ctrl-C in a ninja build: the running compiles end, and fadd admits the
  // waiting ones in the same instant, whose launchers died of the same ^C.
  EngineFixture f;
  f.options.scheduler.max_parallel_units = 1;
  f.make_engine().recover();
  seen_launcher(f, 0, 777);
  const auto first = started_launch(f, launch_of("/w/a.cu"), 5000);
  const Caller waiter = seen_launcher(f, 1, 778);
  const auto second = queued_launch(f, waiter, launch_of("/w/b.cu"));
  f.engine->tick();
  REQUIRE(f.store->unit(second)->state == UnitState::queued);
  f.launcher.processes.erase(waiter.pid);
  REQUIRE(f.engine->launch_finished(f.me, LaunchFinishedRequest{first, 130, false}).ok);
  f.engine->tick();
  REQUIRE(f.store->unit(second)->state == UnitState::running);  // admitted, never to be told
  tick_for(f, 4);
  CHECK(f.engine->running_count() == 0);
  CHECK(f.store->unit(second)->state == UnitState::cancelled);
}

TEST_CASE("engine faults: a compile rerun after the OOM killer waits as long as its launcher lives, no longer",
          "[engine][faults]") {
  EngineFixture f;
  f.make_engine().recover();
  seen_launcher(f, 0, 777);
  const auto unit = started_launch(f, launch_of("/w/a.cu"), 5000);
  f.launcher.released_oom_killed = true;
  auto done = f.engine->launch_finished(f.me, LaunchFinishedRequest{unit, 137, true});
  REQUIRE(done.ok);
  REQUIRE(done.result.at("requeue") == true);
  // Its launcher asks again (fadd knows it from this very poll), then dies.
  REQUIRE(f.engine->launch_poll(f.me, UnitRequest{unit}).ok);
  f.launcher.processes.erase(f.me.pid);
  tick_for(f, 5);
  CHECK(f.store->unit(unit)->state == UnitState::cancelled);  // not after the 30 s for one fadd cannot see
}

TEST_CASE("engine faults: a compile whose launcher passed on a Ctrl-C is cancelled, with a line in its build's log",
          "[engine][faults]") {
  EngineFixture f;
  f.make_engine().recover();
  seen_launcher(f, 0, 777);
  const auto unit = started_launch(f, launch_of("/w/a.cu"), 5000);
  LaunchFinishedRequest interrupted{unit, 130, true};
  interrupted.interrupt_signal = SIGINT;
  auto done = f.engine->launch_finished(f.me, interrupted);
  REQUIRE(done.ok);
  CHECK(done.result.at("requeue") == false);
  const auto record = f.store->unit(unit);
  CHECK(record->state == UnitState::cancelled);
  CHECK(record->exit_code == 130);
  CHECK_THAT(test::slurp(f.build_dir(record->build_id) + "/build.log"),
             Contains("cancelled out.o: its launcher got SIGINT and passed it on"));
  // The OOM killer's kill in the same instant brings no rerun: the launcher
  // is leaving, and a requeued compile would wait for nobody.
  const auto other = started_launch(f, launch_of("/w/b.cu"), 5001);
  f.launcher.released_oom_killed = true;
  LaunchFinishedRequest killed{other, 137, true};
  killed.interrupt_signal = SIGTERM;
  done = f.engine->launch_finished(f.me, killed);
  REQUIRE(done.ok);
  CHECK(done.result.at("requeue") == false);
  CHECK(f.store->unit(other)->state == UnitState::cancelled);
}

TEST_CASE("engine faults: a compiler its user stopped (Ctrl-Z) frees its core for other builds until continued",
          "[engine][faults]") {
  EngineFixture f;
  f.options.scheduler.cores = 1;
  f.make_engine().recover();
  seen_launcher(f, 0, 777);
  const auto launched = started_launch(f, launch_of("/w/a.cu"), 5000);
  const auto id = f.submit();
  f.engine->tick();
  CHECK(f.launcher.launches.empty());  // the one core is the launched compile's
  f.launcher.processes[5000].stopped = true;
  f.engine->tick();
  f.engine->tick();
  CHECK(f.launcher.launches.size() == 1);                       // its core went to the waiting build
  CHECK(f.store->unit(launched)->state == UnitState::running);  // it still holds its memory, and goes on later
  f.launcher.processes[5000].stopped = false;
  f.engine->tick();
  CHECK(f.launcher.launches.size() == 1);  // continued: the core is its again
  CHECK(f.build_state(id) == BuildState::running);
}

TEST_CASE("engine faults: a compiler that stops only itself while its children compile keeps its core and its clock",
          "[engine][faults]") {
  EngineFixture f;
  f.options.scheduler.cores = 1;
  f.options.unit_time_limit_s = 600;
  f.make_engine().recover();
  seen_launcher(f, 0, 777);
  const auto launched = started_launch(f, launch_of("/w/a.cu"), 5000);
  f.launcher.processes[5001] = ProcessInfo{5000, 5000, f.me.uid, 0};  // its cicc, compiling
  const auto id = f.submit();
  f.launcher.processes[5000].stopped = true;
  tick_for(f, 5);
  CHECK(f.launcher.launches.empty());  // the core is still the launched compile's
  CHECK(f.build_state(id) == BuildState::queued);
  // Its clock runs: past the limit, it is asked to end like any other.
  f.clock.advance(600);
  f.engine->tick();
  CHECK(f.launcher.signals_to(5000) == std::vector<int>{SIGTERM, SIGCONT});
  CHECK(f.store->unit(launched)->state == UnitState::running);
}

TEST_CASE("engine faults: time fadd itself was stopped counts against no launcher it cannot see", "[engine][faults]") {
  EngineFixture f;
  f.options.scheduler.max_parallel_units = 1;
  f.make_engine().recover();
  admitted_launch(f, launch_of("/w/a.cu"));  // fadd cannot see this client's process
  const auto waiting = queued_launch(f, f.me, launch_of("/w/b.cu"));
  tick_for(f, 5);
  // SIGSTOP for 40 s: the next tick comes that much later.
  f.clock.advance(40);
  f.engine->tick();
  CHECK(f.store->unit(waiting)->state == UnitState::queued);
  // After that, its own silence counts: 30 s of it and the launcher is gone.
  tick_for(f, 20);
  CHECK(f.store->unit(waiting)->state == UnitState::queued);
  tick_for(f, 15);
  CHECK(f.store->unit(waiting)->state == UnitState::cancelled);
  // It may only have been slow to get through (fadd busy): asking at last,
  // it is told to launch its compile again, not that it was cancelled.
  const auto poll = f.engine->launch_poll(f.me, UnitRequest{waiting});
  REQUIRE(poll.ok);
  CHECK(poll.result.value("relaunch", false));
  CHECK(poll.result.value("why", "") == "its launcher did not ask for 30 s");
}

TEST_CASE("engine faults: a compile that ended waits for its live launcher's report, not for a dead one's",
          "[engine][faults]") {
  EngineFixture f;
  f.make_engine().recover();
  f.launcher.processes[f.me.pid] = ProcessInfo{1, f.me.pid, f.me.uid, 77};  // the launcher
  const auto unit = started_launch(f, launch_of("/w/a.cu"), 31338);
  // Its compiler ended; the launcher, alive, cannot get through (fadd busy).
  f.launcher.gone.insert(31338);
  tick_for(f, 60);
  CHECK(f.store->unit(unit)->state == UnitState::running);
  REQUIRE(f.engine->launch_finished(f.me, LaunchFinishedRequest{unit, 0, false}).ok);
  CHECK(f.store->unit(unit)->state == UnitState::succeeded);  // what it was, not "vanished"

  // A launcher that died with its compiler reports nothing: failed within seconds.
  const auto other = started_launch(f, launch_of("/w/b.cu"), 31339);
  f.launcher.gone.insert(31339);
  f.launcher.processes.erase(f.me.pid);
  tick_for(f, 12);
  CHECK(f.store->unit(other)->state == UnitState::failed);
  // How it ended is not known: no exit code is made up for it.
  CHECK_FALSE(f.store->unit(other)->exit_code.has_value());
  const auto build = f.store->unit(other)->build_id;
  CHECK_THAT(test::slurp(f.build_dir(build) + "/build.log"), Contains("its launcher did not report how it ended"));
}

TEST_CASE("engine faults: a compile that ended frees its core and memory while its report is late",
          "[engine][faults]") {
  EngineFixture f;
  f.options.scheduler.max_parallel_units = 1;
  f.make_engine().recover();
  f.launcher.processes[f.me.pid] = ProcessInfo{1, f.me.pid, f.me.uid, 77};  // the launcher
  const auto unit = started_launch(f, launch_of("/w/a.cu"), 31338);
  const auto id = f.submit();
  tick_for(f, 3);
  CHECK(f.launcher.launches.empty());  // the one slot is the launched compile's
  f.launcher.gone.insert(31338);       // it ended; its launcher cannot get through yet
  tick_for(f, 3);
  CHECK(f.launcher.launches.size() == 1);  // not 150 s later
  CHECK(f.build_state(id) == BuildState::running);
  REQUIRE(f.engine->launch_finished(f.me, LaunchFinishedRequest{unit, 0, false}).ok);
  CHECK(f.store->unit(unit)->state == UnitState::succeeded);
  // Ended: what it left running in its cgroup is killed.
  REQUIRE(f.launcher.released.size() == 1);
  CHECK(f.launcher.released[0].second == ProcessLauncher::Leftovers::kill);
}

TEST_CASE(
    "engine faults: a clean stop leaves launched compiles running, continues frozen ones, ends at once, and the next "
    "start takes them back",
    "[engine][faults]") {
  EngineFixture f;
  f.make_engine().recover();
  const auto unit = started_launch(f, launch_of("/w/a.cu"), 4100);
  const auto build = f.store->unit(unit)->build_id;
  REQUIRE(f.engine->pause(f.me, build).ok);
  CHECK(f.launcher.signals_to(4100) == std::vector<int>{SIGSTOP});
  f.engine->begin_shutdown();
  // Never terminated: stopped, it would fail its build tool's build.
  CHECK(f.launcher.signals_to(4100) == std::vector<int>{SIGSTOP, SIGCONT});
  CHECK(f.engine->idle());
  // Its cgroup keeps it: only a compile that ended has its leftovers killed.
  using Leftovers = ProcessLauncher::Leftovers;
  CHECK(f.launcher.released == std::vector<std::pair<int, Leftovers>>{{4100, Leftovers::keep}});
  // The next start takes it back while it runs, as after a crash (where
  // process groups can be told apart), else records it left to its launcher.
  f.engine.reset();
  f.make_engine().recover();
  const bool boot_known = boot_id_known();
  CHECK(f.store->unit(unit)->state == (boot_known ? UnitState::running : UnitState::cancelled));
  if (boot_known) {
    // Its build is still paused: continued by the start, frozen again.
    CHECK(f.launcher.signals_to(4100) == std::vector<int>{SIGSTOP, SIGCONT, SIGCONT, SIGSTOP});
    CHECK(f.build_state(build) == BuildState::paused);
    REQUIRE(f.engine->resume(f.me, build).ok);
    CHECK(f.launcher.signals_to(4100).back() == SIGCONT);
  }
}

TEST_CASE("engine faults: a launcher killed while its compiler runs has the compiler ended, the compile cancelled",
          "[engine][faults]") {
  // Bug: after a kill -9 of a build (a CI job's timeout), its compilers, in
  // process groups of their own, compiled on for as long as they took,
  // holding memory and cores no one waited for.
  EngineFixture f;
  f.make_engine().recover();
  seen_launcher(f, 0, 777);
  const int pid = 4200;
  const auto unit = started_launch(f, launch_of("/w/a.cu"), pid, 1000);
  const auto build = f.store->unit(unit)->build_id;
  tick_for(f, 5);
  CHECK(f.launcher.signals_to(pid).empty());  // its launcher lives
  f.launcher.processes.erase(f.me.pid);       // killed; the compiler runs on
  tick_for(f, 1);
  CHECK(f.launcher.signals_to(pid).empty());  // not at the first look
  tick_for(f, 3);
  CHECK(f.launcher.signals_to(pid) == std::vector<int>{SIGTERM});
  f.launcher.gone.insert(pid);
  tick_for(f, 1);  // no grace for a report from a launcher known gone
  CHECK(f.engine->running_count() == 0);
  CHECK(f.store->unit(unit)->state == UnitState::cancelled);
  CHECK_THAT(test::slurp(f.build_dir(build) + "/build.log"),
             Contains(": its launcher exited while it compiled (killed?), so nothing waited for it (cancelled)"));

  // A launcher fadd cannot see (another pid namespace) is never taken for gone.
  const int other = 4300;
  const auto unseen = started_launch(f, launch_of("/w/b.cu"), other, 1000);
  tick_for(f, 10);
  CHECK(f.launcher.signals_to(other).empty());
  CHECK(f.store->unit(unseen)->state == UnitState::running);

  // A fad run build closed while one of its compiles runs (its command
  // exited, or was killed with its launchers): ended, and the log says so.
  const auto run = open_run_build(f, "closing");
  auto l = launch_of("/w/c.cu");
  l.build_id = run;
  const int third = 4400;
  const auto compiling = started_launch(f, l, third, 1000);
  REQUIRE(f.engine->close_build(f.me, CloseBuildRequest{run, 137}).ok);
  CHECK(f.launcher.signals_to(third) == std::vector<int>{SIGTERM});
  CHECK_THAT(test::slurp(f.build_dir(run) + "/build.log"),
             Contains(": its build closed while it compiled (cancelled)"));
  // Asked at once (fad run's summary), before its compiler has exited, the
  // compile shows and counts as it will be written.
  const auto shown = f.engine->status(f.me, StatusRequest{run}).result["builds"][0];
  REQUIRE(f.store->unit(compiling)->state == UnitState::running);
  CHECK(shown.at("unit_list").at(0).at("state") == "cancelled");
  CHECK(shown.at("units").at("cancelled") == 1);
  CHECK(shown.at("units").at("running") == 0);
  const auto listed = f.engine->status(f.me, StatusRequest{}).result.at("builds");
  for (const auto& b : listed)
    if (b.at("id") == run) CHECK(b.at("units").at("cancelled") == 1);
  f.launcher.gone.insert(third);
  tick_for(f, 5);
  CHECK(f.store->unit(compiling)->state == UnitState::cancelled);

  // One admitted whose compiler had not started: its log line says so.
  const auto second_run = open_run_build(f, "closing before a start");
  auto waiting = launch_of("/w/d.cu");
  waiting.build_id = second_run;
  const auto admitted = admitted_launch(f, waiting);
  REQUIRE(f.engine->close_build(f.me, CloseBuildRequest{second_run, 130}).ok);
  CHECK_THAT(test::slurp(f.build_dir(second_run) + "/build.log"),
             Contains("ended out.o: its build closed before its compiler started (cancelled)"));
  tick_for(f, 1);
  CHECK(f.store->unit(admitted)->state == UnitState::cancelled);
}

TEST_CASE("engine faults: a cancelled external unit whose launcher vanished leaves, and shutdown ends",
          "[engine][faults]") {
  EngineFixture f;
  f.make_engine().recover();
  const int pid = 31337;
  const auto unit = started_launch(f, launch_of("/w/a.cu"), pid);
  const auto build = f.store->unit(unit)->build_id;
  REQUIRE(f.engine->cancel(f.me, build).ok);
  CHECK(f.launcher.signals_to(pid) == std::vector<int>{SIGTERM});
  // The launcher and its compiler are gone; nobody reports the end.
  f.launcher.gone.insert(pid);
  for (int i = 0; i < 20; ++i) {
    f.clock.advance(1);
    f.engine->tick();
  }
  CHECK(f.engine->running_count() == 0);
  CHECK(f.store->unit(unit)->state == UnitState::cancelled);
  // One SIGKILL after the grace at most, never one per tick.
  CHECK(f.launcher.signals_to(pid).size() <= 2);
  f.engine->begin_shutdown();
  CHECK(f.engine->idle());
}

TEST_CASE("engine faults: a launched compiler's process-group id, reused by another user's process, is never signalled",
          "[engine][faults]") {
  EngineFixture f;
  f.make_engine().recover();
  const int pid = 4100;
  const auto unit = started_launch(f, launch_of("/w/a.cu"), pid, 1000);
  const auto build = f.store->unit(unit)->build_id;
  // The launcher's compiler ends and is reaped by the launcher (which says
  // nothing); the kernel gives the id to another user's new group leader.
  f.launcher.processes[pid] = ProcessInfo{1, pid, f.me.uid + 1, 5000};
  REQUIRE(f.engine->pause(f.me, build).ok);
  REQUIRE(f.engine->resume(f.me, build).ok);
  REQUIRE(f.engine->cancel(f.me, build).ok);
  tick_for(f, 20);
  CHECK(f.launcher.signals_to(pid).empty());
  // fadd took the group for gone: the unit ended, nothing waits for it.
  CHECK(f.engine->running_count() == 0);
  CHECK(f.store->unit(unit)->state == UnitState::cancelled);

  // The same while running: its compiler counts as gone, not as alive for ever.
  const auto second = started_launch(f, launch_of("/w/b.cu"), pid, 6000);
  f.launcher.processes[pid] = ProcessInfo{1, pid, f.me.uid + 1, 7000};
  tick_for(f, 20);
  CHECK(f.engine->running_count() == 0);
  CHECK(f.store->unit(second)->state == UnitState::failed);
  CHECK(f.launcher.signals_to(pid).empty());
}

TEST_CASE("engine faults: launch_started adopts only the caller's own child leading its group", "[engine][faults]") {
  EngineFixture f;
  f.make_engine().recover();
  const auto unit = admitted_launch(f, launch_of("/w/a.cu"));
  f.launcher.processes[500] = ProcessInfo{f.me.pid, 500, f.me.uid + 1};  // another user's
  f.launcher.processes[501] = ProcessInfo{4242, 501, f.me.uid};          // not the caller's child
  f.launcher.processes[502] = ProcessInfo{f.me.pid, 1, f.me.uid};        // in someone else's group
  auto r = f.engine->launch_started(f.me, LaunchStartedRequest{unit, 500});
  CHECK_FALSE(r.ok);
  CHECK_THAT(r.message, Contains("process 500 belongs to"));
  CHECK_THAT(f.engine->launch_started(f.me, LaunchStartedRequest{unit, 501}).message,
             Contains("not a child of the calling process"));
  CHECK_THAT(f.engine->launch_started(f.me, LaunchStartedRequest{unit, 502}).message,
             Contains("does not lead its process group"));
  CHECK_THAT(f.engine->launch_started(f.me, LaunchStartedRequest{unit, 503}).message,
             Contains("there is no process 503"));
  CHECK(f.launcher.adopted.empty());
  // Another user cannot touch the unit at all.
  const Caller other{f.me.uid + 1, f.me.gid, f.me.pid};
  CHECK_THAT(f.engine->launch_started(other, LaunchStartedRequest{unit, 500}).message, Contains("belongs to"));
  CHECK_THAT(f.engine->launch_finished(other, LaunchFinishedRequest{unit, 0, false}).message, Contains("belongs to"));
  CHECK_THAT(f.engine->launch_poll(other, UnitRequest{unit}).message, Contains("belongs to"));
  f.launcher.processes[600] = ProcessInfo{f.me.pid, 600, f.me.uid};
  CHECK(f.engine->launch_started(f.me, LaunchStartedRequest{unit, 600}).ok);
  CHECK(f.launcher.adopted.count(600));
}

TEST_CASE("engine faults: a launch never opens the source it names", "[engine][faults]") {
  EngineFixture f;
  f.make_engine().recover();
  // A FIFO: opening it would block the daemon until someone writes.
  const std::string fifo = f.tmp / "source.cu";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  auto l = launch_of(fifo);
  l.content_hash = "00ff00ff00ff00ff";
  l.compiler_version = "Build cuda_13.0.r13.0/compiler.test";
  auto r = f.engine->launch(f.me, l);
  REQUIRE(r.ok);
  auto u = f.store->unit(r.result.at("unit_id").get<std::int64_t>());
  CHECK(u->content_hash == "00ff00ff00ff00ff");
  CHECK(u->compiler == "Build cuda_13.0.r13.0/compiler.test");
  CHECK(f.toolchain_lookups == 0);  // nor runs the compiler
  // An older launcher sends neither: known by its arguments.
  auto old = f.engine->launch(f.me, launch_of(f.tmp / "other.cu"));
  REQUIRE(old.ok);
  auto v = f.store->unit(old.result.at("unit_id").get<std::int64_t>());
  CHECK(v->content_hash.empty());
  CHECK(v->compiler == "/opt/nvcc");
}

TEST_CASE(
    "engine faults: a fad run build its fad run closes after a passed-on signal is cancelled, unless it succeeded",
    "[engine][faults]") {
  EngineFixture f;
  f.make_engine().recover();
  const auto interrupted = open_run_build(f, "interrupted");
  auto l = launch_of("/w/a.cu");
  l.build_id = interrupted;
  const auto waiting = queued_launch(f, f.me, l);
  REQUIRE(f.engine->close_build(f.me, CloseBuildRequest{interrupted, 130, SIGINT}).ok);
  CHECK(f.build_state(interrupted) == BuildState::cancelled);
  CHECK(f.store->build(interrupted)->error == "fad run got SIGINT (exit code 130)");
  CHECK(f.store->unit(waiting)->state == UnitState::cancelled);
  CHECK_THAT(test::slurp(f.build_dir(interrupted) + "/build.log"),
             Contains("build cancelled: fad run got SIGINT (exit code 130)"));

  // A command that caught the signal and finished: succeeded.
  const auto finished = open_run_build(f, "finished anyway");
  REQUIRE(f.engine->close_build(f.me, CloseBuildRequest{finished, 0, SIGTERM}).ok);
  CHECK(f.build_state(finished) == BuildState::succeeded);
  // Without a signal, a non-zero exit is a failure, as before.
  const auto broken = open_run_build(f, "broken");
  REQUIRE(f.engine->close_build(f.me, CloseBuildRequest{broken, 130}).ok);
  CHECK(f.build_state(broken) == BuildState::failed);
  CHECK(f.store->build(broken)->error == "command exited with code 130");
}

TEST_CASE("engine faults: a fad run build whose fad run was killed closes once its compiles are done",
          "[engine][faults]") {
  EngineFixture f;
  f.make_engine().recover();
  const int opener = f.me.pid;
  const auto build = open_run_build(f, "run");
  auto quiet = [&f](int seconds) { tick_for(f, seconds); };
  // The opener is read from /proc only once the build has been quiet a while.
  const int reads = f.launcher.process_info_calls;
  quiet(29);
  CHECK(f.launcher.process_info_calls == reads);
  // A long quiet spell (a link, a configure step) while fad run lives: open.
  quiet(300);
  CHECK(f.build_state(build) == BuildState::running);

  // A compile of it runs when fad run is killed: its command (ninja) and
  // the compile's launcher live on.
  auto l = launch_of("/w/a.cu");
  l.build_id = build;
  const Caller launcher = seen_launcher(f, 1, 900);
  const auto unit = queued_launch(f, launcher, l);
  f.engine->tick();
  REQUIRE(f.engine->launch_poll(launcher, UnitRequest{unit}).result["state"] == "admitted");
  f.launcher.processes[600] = ProcessInfo{launcher.pid, 600, f.me.uid, 0};
  REQUIRE(f.engine->launch_started(launcher, LaunchStartedRequest{unit, 600}).ok);
  f.launcher.processes.erase(opener);
  quiet(120);
  CHECK(f.build_state(build) == BuildState::running);
  REQUIRE(f.engine->launch_finished(f.me, LaunchFinishedRequest{unit, 0, false}).ok);
  CHECK(f.store->unit(unit)->state == UnitState::succeeded);
  quiet(10);
  CHECK(f.build_state(build) == BuildState::running);
  // Then a quiet spell, and nobody will ever report the command's exit.
  quiet(30);
  REQUIRE(f.build_state(build) == BuildState::failed);
  CHECK_THAT(f.store->build(build)->error, Contains("fad run (pid " + std::to_string(opener) + ") ended"));
}

TEST_CASE("engine faults: a killed fad run's build whose compiles only waited closes 30 s after they left",
          "[engine][faults]") {
  // Bug: the quiet spell counted from when the compile was queued, so a
  // build whose compiles waited 20 s closed 10 s after they left.
  EngineFixture f;
  f.probe.snap.available = 64ull << 20;  // nothing fits: the compile waits
  f.make_engine().recover();
  const int opener = f.me.pid;
  const auto build = open_run_build(f, "run");
  auto l = launch_of("/w/a.cu");
  l.build_id = build;
  const Caller launcher = seen_launcher(f, 1, 900);
  const auto unit = queued_launch(f, launcher, l);
  for (int s = 0; s < 20; ++s) {
    tick_for(f, 1);
    REQUIRE(f.engine->launch_poll(launcher, UnitRequest{unit}).result["state"] == "queued");
  }
  // fad run and its command's launchers killed together (kill -9 of the group).
  f.launcher.processes.erase(opener);
  f.launcher.processes.erase(launcher.pid);
  tick_for(f, 5);
  REQUIRE(f.store->unit(unit)->state == UnitState::cancelled);
  tick_for(f, 24);
  CHECK(f.build_state(build) == BuildState::running);
  tick_for(f, 5);
  REQUIRE(f.build_state(build) == BuildState::failed);
  CHECK_THAT(f.store->build(build)->error, Contains("fad run (pid " + std::to_string(opener) + ") ended"));
}

TEST_CASE("engine faults: a fad run fadd cannot see closes after an hour with nothing compiled", "[engine][faults]") {
  // From another pid namespace SO_PEERCRED gives no pid: nothing to watch.
  EngineFixture f;
  f.make_engine().recover();
  Caller unseen = f.me;
  unseen.pid = 0;
  auto opened = f.engine->open_build(unseen, OpenBuildRequest{"run", "ninja", std::nullopt});
  REQUIRE(opened.ok);
  const auto build = opened.result.at("id").get<std::int64_t>();
  REQUIRE_FALSE(f.store->build(build)->opener);
  tick_for(f, 40);
  CHECK(f.build_state(build) == BuildState::running);
  // A compile 50 minutes in starts the hour again.
  f.clock.advance(3000);
  f.engine->tick();
  auto l = launch_of("/w/a.cu");
  l.build_id = build;
  const auto unit = started_launch(f, l, 600);
  REQUIRE(f.engine->launch_finished(f.me, LaunchFinishedRequest{unit, 0, false}).ok);
  f.clock.advance(3000);
  f.engine->tick();
  CHECK(f.build_state(build) == BuildState::running);
  f.clock.advance(700);
  f.engine->tick();
  REQUIRE(f.build_state(build) == BuildState::failed);
  CHECK_THAT(f.store->build(build)->error, Contains("nothing compiled for 1h") && Contains("another pid namespace"));
}

TEST_CASE("engine faults: a fad run build outlives fadd, but not a pid reused by another process", "[engine][faults]") {
  EngineFixture f;
  f.make_engine().recover();
  const int opener = f.me.pid;
  const auto build = open_run_build(f, "run");
  // fadd restarts: the opener is known from the database.
  f.make_engine().recover();
  tick_for(f, 60);
  CHECK(f.build_state(build) == BuildState::running);
  REQUIRE(f.engine->close_build(f.me, CloseBuildRequest{build, 0}).ok);
  CHECK(f.build_state(build) == BuildState::succeeded);

  // fad run killed while fadd was down, its pid since given to another process.
  const auto second = open_run_build(f, "run 2");
  f.launcher.processes[opener].start_ticks = 9999;
  f.make_engine().recover();
  tick_for(f, 40);
  CHECK(f.build_state(second) == BuildState::failed);

  // A zombie has exited: its parent just has not reaped it yet.
  const auto zombie = open_run_build(f, "run 3");
  f.launcher.processes[opener].zombie = true;
  tick_for(f, 40);
  CHECK(f.build_state(zombie) == BuildState::failed);
}

TEST_CASE("engine faults: the reserve file is deleted by the first failed write and made again once there is room",
          "[engine][faults]") {
  EngineFixture f;
  bool full = false;
  f.options.disk_nearly_full = [&full](const std::string&) { return full; };
  f.options.disk_reserve_bytes = 1 << 20;
  f.options.scheduler.cores = 1;  // fewer cores than compiles: the rest would wait for cores
  f.make_engine().recover();
  const auto reserve = fs::path(f.state) / "reserve";
  f.engine->tick();
  REQUIRE(fs::file_size(reserve) == (1u << 20));

  full = true;
  database_writable(f, false);
  // Its failed write gives the reserve back.
  CHECK_FALSE(f.submit_as(f.me, SubmitRequest{{"9.0"}, "*", std::nullopt, "x"}).ok);
  CHECK_FALSE(fs::exists(reserve));
  database_writable(f, true);
  f.clock.advance(120);
  f.engine->tick();
  CHECK_FALSE(fs::exists(reserve));  // writes go through, but the disk is still nearly full
  // Its room is kept for recording what runs: nothing new starts meanwhile.
  const auto id = f.submit();
  f.engine->tick();
  CHECK(f.launcher.launches.empty());
  // Every compile says what it waits for. Bug: the one the scheduler chose
  // said so, the others "all 1 cores busy" for a core nothing used, and fad
  // status warned of nothing.
  for (const auto& unit : f.store->units(id))
    if (unit.name != "link") CHECK_THAT(unit.wait_reason, Contains("fadd's reserve there is in use"));
  const auto status = f.engine->status(f.me, StatusRequest{}).result;
  CHECK(status["daemon"]["memory"]["committed_bytes"] == 0);
  REQUIRE(status["daemon"]["warnings"].size() == 1);
  CHECK_THAT(
      status["daemon"]["warnings"][0].get<std::string>(),
      Contains("fadd spent its reserve file there to record what finished, and starts no unit until it has room"));
  full = false;
  f.clock.advance(1);
  f.engine->tick();
  CHECK(fs::file_size(reserve) == (1u << 20));
  f.engine->tick();
  CHECK_FALSE(f.launcher.launches.empty());
  CHECK(f.engine->status(f.me, StatusRequest{}).result["daemon"]["warnings"].empty());

  // Turned off, the file an earlier fadd kept is given back.
  f.options.disk_reserve_bytes = 0;
  f.make_engine().recover();
  CHECK_FALSE(fs::exists(reserve));
}

TEST_CASE("engine faults: a pause or resume the database cannot take acts at once and is written once it can",
          "[engine][faults]") {
  // A build filling the state disk must be pausable (its compilers frozen
  // stop writing). Bug: the pause was refused until the disk had room.
  EngineFixture f;
  f.make_engine().recover();
  const auto id = f.submit();
  f.engine->tick();
  REQUIRE(f.launcher.launches.size() == 4);
  const auto stops = [&] {
    return std::count_if(f.launcher.signals.begin(), f.launcher.signals.end(),
                         [](const auto& s) { return s.second == SIGSTOP; });
  };
  const auto conts = [&] {
    return std::count_if(f.launcher.signals.begin(), f.launcher.signals.end(),
                         [](const auto& s) { return s.second == SIGCONT; });
  };
  const auto shown = [&] {
    return f.engine->status(f.me, StatusRequest{id}).result["builds"][0]["state"].get<std::string>();
  };
  refuse_writes(f, "UPDATE ON builds");
  auto r = f.engine->pause(f.me, id);
  REQUIRE(r.ok);
  CHECK(r.result["state"] == "paused");
  CHECK(r.result["recorded"] == false);
  CHECK(stops() == 4);                              // frozen at once
  CHECK(f.build_state(id) == BuildState::running);  // the database could not take it yet
  CHECK(shown() == "paused");                       // shown as its compilers are
  CHECK(f.engine->unwritten_count() == 1);
  CHECK_FALSE(f.engine->pause(f.me, id).ok);  // already paused
  f.engine->tick();
  CHECK(f.build_state(id) == BuildState::running);
  lift(f);
  f.engine->tick();
  CHECK(f.build_state(id) == BuildState::paused);
  CHECK(f.engine->unwritten_count() == 0);
  CHECK_THAT(test::slurp(f.build_dir(id) + "/build.log"), Contains("build paused"));

  // A resume likewise: the compilers go on at once, the record follows.
  refuse_writes(f, "UPDATE ON builds");
  r = f.engine->resume(f.me, id);
  REQUIRE(r.ok);
  CHECK(r.result["recorded"] == false);
  CHECK(conts() == 4);
  CHECK(f.build_state(id) == BuildState::paused);
  CHECK(shown() == "queued");
  lift(f);
  f.engine->tick();
  CHECK(f.build_state(id) == BuildState::running);
  CHECK(f.engine->unwritten_count() == 0);

  // A pause taken back before it was written needs no write at all.
  refuse_writes(f, "UPDATE ON builds");
  REQUIRE(f.engine->pause(f.me, id).ok);
  CHECK(stops() == 8);
  r = f.engine->resume(f.me, id);
  REQUIRE(r.ok);
  CHECK_FALSE(r.result.contains("recorded"));
  CHECK(conts() == 8);
  CHECK(f.engine->unwritten_count() == 0);
  CHECK(shown() == "running");

  // One not written when fadd stops is lost: the build is as last recorded.
  REQUIRE(f.engine->pause(f.me, id).ok);
  lift(f);
  f.make_engine().recover();
  CHECK(f.build_state(id) == BuildState::running);
  CHECK(f.engine->unwritten_count() == 0);

  // A cancel ends a pause not written yet: the cancel alone is written.
  refuse_writes(f, "UPDATE ON builds");
  REQUIRE_FALSE(f.engine->pause(f.me, id).result.value("recorded", true));
  lift(f);
  REQUIRE(f.engine->cancel(f.me, id).ok);
  CHECK(f.engine->unwritten_count() == 0);
  f.engine->tick();
  CHECK(f.build_state(id) == BuildState::cancelled);
  for (const auto& u : f.store->units(id)) CHECK(u.state == UnitState::cancelled);
}

TEST_CASE("engine faults: a cancel the database cannot take stops the compilers, and is written before their ends",
          "[engine][faults]") {
  // A build whose compilers fill the disk must still be stoppable. Bug
  // before that: cancel stopped the compilers and failed to record the build
  // cancelled, so their ends went in as cancelled in a running build, whose
  // link then waited for ever.
  EngineFixture f;
  f.make_engine().recover();
  const auto id = f.submit();
  f.engine->tick();
  REQUIRE(f.launcher.launches.size() == 4);
  const auto other = f.submit();  // queued behind it
  refuse_writes(f, "UPDATE ON builds");
  const auto r = f.engine->cancel(f.me, id);
  REQUIRE(r.ok);
  CHECK(r.result["state"] == "cancelled");
  CHECK(r.result["recorded"] == false);
  CHECK(f.launcher.signals.size() == 4);            // every compiler asked to stop
  CHECK(f.build_state(id) == BuildState::running);  // the database could not take it yet
  CHECK(f.engine->unwritten_count() == 1);
  // Shown as asked, as a pause is (bug: still "running" until written), and
  // no longer paused or resumed as if it ran.
  const auto shown = f.engine->status(f.me, StatusRequest{}).result["builds"];
  REQUIRE(shown.size() == 2);
  CHECK(shown[0]["state"] == "cancelled");
  CHECK(shown[0]["error"] == "cancelled by user");
  CHECK(shown[0]["units"]["cancelled"] == 5);  // its units too, not "queued" and "running"
  CHECK(shown[0]["units"]["queued"] == 0);
  CHECK(shown[0]["units"]["running"] == 0);
  const auto one = f.engine->status(f.me, StatusRequest{id}).result["builds"][0];
  CHECK(one["state"] == "cancelled");
  for (const auto& u : one["unit_list"]) CHECK(u["state"] == "cancelled");
  const auto pause = f.engine->pause(f.me, id);
  CHECK_FALSE(pause.ok);
  CHECK(pause.message ==
        "build " + std::to_string(id) + " was cancelled: only a running or queued build can be paused");
  CHECK_FALSE(f.engine->resume(f.me, id).ok);
  // They end; the units' rows could be written, but wait for the build's.
  for (const auto& name : kCompileUnits) f.launcher.exit(name, 128 + SIGTERM);
  f.engine->tick();
  for (const auto& u : f.store->units(id)) CHECK((u.state == UnitState::running || u.kind == UnitKind::link));
  CHECK(f.launcher.launches.size() == 4);  // nothing started meanwhile, of this build or another
  CHECK_FALSE(f.launcher.find("link"));
  lift(f);
  f.engine->tick();
  CHECK(f.build_state(id) == BuildState::cancelled);
  for (const auto& u : f.store->units(id)) CHECK(u.state == UnitState::cancelled);
  CHECK(f.engine->unwritten_count() == 0);
  CHECK(test::slurp(f.build_dir(id) + "/build.log").find("build cancelled") != std::string::npos);
  // The other build runs on, and this one's link never starts.
  CHECK(f.launcher.launches.size() == 8);
  for (const auto& l : f.launcher.launches) CHECK(l.spec.unit_id != f.unit(id, "link")->id);
  CHECK(f.build_state(other) == BuildState::running);
}

TEST_CASE("engine faults: a database another program holds locked keeps the reserve: the disk is not full",
          "[engine][faults]") {
  EngineFixture f;
  f.options.disk_nearly_full = [](const std::string&) { return false; };
  f.options.disk_reserve_bytes = 1 << 20;
  f.make_engine().recover();
  const auto reserve = fs::path(f.state) / "reserve";
  f.engine->tick();
  REQUIRE(fs::file_size(reserve) == (1u << 20));
  f.store->db().exec(
      "CREATE TEMP TRIGGER locked BEFORE INSERT ON builds BEGIN SELECT RAISE(FAIL, 'database is locked'); END");
  CHECK_FALSE(f.submit_as(f.me, SubmitRequest{{"9.0"}, "*", std::nullopt, "x"}).ok);
  CHECK(fs::file_size(reserve) == (1u << 20));
  // A full disk does give it back.
  f.store->db().exec("DROP TRIGGER temp.locked");
  refuse_writes(f, "INSERT ON builds");
  CHECK_FALSE(f.submit_as(f.me, SubmitRequest{{"9.0"}, "*", std::nullopt, "x"}).ok);
  CHECK_FALSE(fs::exists(reserve));
}

TEST_CASE("engine faults: a compile that fails while another program holds the database locked fails",
          "[engine][faults]") {
  // Bug: any trouble writing the database counted as a full disk, so a
  // compile that failed on its merits during a lock ran again, "failed on a
  // full disk".
  EngineFixture f;
  f.options.disk_nearly_full = [](const std::string&) { return false; };
  f.make_engine().recover();
  const auto id = f.submit();
  f.engine->tick();
  REQUIRE(f.launcher.launch_count("a_one") == 1);
  f.store->db().exec(
      "CREATE TEMP TRIGGER locked BEFORE INSERT ON builds BEGIN SELECT RAISE(FAIL, 'database is locked'); END");
  REQUIRE_FALSE(f.submit_as(f.me, SubmitRequest{{"9.0"}, "*", std::nullopt, "x"}).ok);
  REQUIRE_FALSE(f.engine->storage_problem().empty());
  f.launcher.exit("a_one", 1);
  CHECK(f.unit(id, "a_one")->state == UnitState::failed);
  CHECK_THAT(test::slurp(f.build_dir(id) + "/build.log"), !Contains("full disk"));
  f.store->db().exec("DROP TRIGGER temp.locked");
}

TEST_CASE("engine faults: flags long enough to be digested are cut on a character, so history still exports",
          "[engine][faults]") {
  // Bug: the learning key's flags were cut at a byte, halving an accented
  // character; every later `fad history export` then failed on the bad UTF-8.
  EngineFixture f;
  f.make_engine().recover();
  f.launcher.processes[f.me.pid] = ProcessInfo{1, f.me.pid, f.me.uid, 77};
  auto l = launch_of("/w/a.cu");
  // "-c " and "-DX=" put the two bytes of "é" across byte 1024 of the flags.
  l.argv.insert(l.argv.begin() + 2, "-DX=" + std::string(1023 - 3 - 4, 'a') + "\xc3\xa9" + std::string(1500, 'b'));
  const auto unit = started_launch(f, l, 31338);
  f.launcher.memory[31338] = 300ull << 20;
  tick_for(f, 5);
  f.launcher.gone.insert(31338);
  REQUIRE(f.engine->launch_finished(f.me, LaunchFinishedRequest{unit, 0, false}).ok);
  const auto history = f.store->history();
  REQUIRE(history.size() == 1);
  CHECK(history[0].flags.find("sha256:") != std::string::npos);  // digested
  CHECK(valid_utf8(history[0].flags));
  const auto exported = f.engine->history_export(f.me, HistoryExportRequest{});
  REQUIRE(exported.ok);
  CHECK(exported.result["profiles"].size() == 1);
}

TEST_CASE("engine faults: history export leaves out a profile its import would refuse, so the file still imports",
          "[engine][faults]") {
  // Bug: a launch's flags (or compiler version) with a tab or a bidi
  // override were recorded as they came; the export wrote them, and import,
  // all or nothing, refused the whole file.
  EngineFixture f;
  f.make_engine().recover();
  f.launcher.processes[f.me.pid] = ProcessInfo{1, f.me.pid, f.me.uid, 77};
  // The last is a small wrapper's: under 1 MiB, as fadd measured it, and
  // still carried (a file that drops what was measured looks like lost history).
  const std::vector<std::string> defines{"-DX=plain", "-DX=a\tb", "-DX=\xe2\x80\xae", "-DX=small"};
  for (std::size_t i = 0; i < defines.size(); ++i) {
    auto l = launch_of("/w/a" + std::to_string(i) + ".cu");
    l.argv.insert(l.argv.begin() + 2, defines[i]);
    const int pid = 31400 + static_cast<int>(i);
    const auto unit = started_launch(f, l, pid);
    f.launcher.memory[pid] = i == 3 ? 700ull << 10 : 300ull << 20;
    tick_for(f, 5);
    f.launcher.gone.insert(pid);
    REQUIRE(f.engine->launch_finished(f.me, LaunchFinishedRequest{unit, 0, false}).ok);
  }
  REQUIRE(f.store->history().size() == 4);
  const auto exported = f.engine->history_export(f.me, HistoryExportRequest{});
  REQUIRE(exported.ok);
  const json& profiles = exported.result["profiles"];
  REQUIRE(profiles.size() == 2);
  CHECK(profiles[0]["flags"].get<std::string>().find("-DX=plain") != std::string::npos);
  CHECK(profiles[1]["flags"].get<std::string>().find("-DX=small") != std::string::npos);
  CHECK(history_profile_from_json(profiles[0]));
  CHECK(history_profile_from_json(profiles[1]));
  CHECK(exported.result["left_out"] == 2);  // counted, for the user to be told
  // and the first one named, with import's own reason
  CHECK(exported.result["left_out_reason"] ==
        "/w/a1.cu: field \"flags\" must be printable text (no control characters)");
}

}  // namespace fad
