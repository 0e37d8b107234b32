// The engine with several users: who may act on which build, as whom a root
// fadd runs compiles, what a non-root fadd refuses, and fair share between
// users. Callers are made up (uids 4001, 4002): the engine only sees what
// SO_PEERCRED would have told it.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "common/json_fields.h"
#include "daemon/engine.h"
#include "fakes.h"

namespace fad {
namespace {

using Catch::Contains;
using test::EngineFixture;

const Caller kAlice{4001, 4001, 111};
const Caller kBob{4002, 4002, 222};
const Caller kRoot{0, 0, 1};

SubmitRequest one_arch() {
  SubmitRequest req;
  req.archs = {"9.0"};
  req.name = "t";
  return req;
}

// A launcher's report of a cache hit: recorded, nothing to admit.
LaunchRequest cache_hit(int session, int i) {
  LaunchRequest l;
  l.session = session;
  l.cwd = "/w";
  l.source = "/w/k" + std::to_string(i) + ".cu";
  l.argv = {"/bin/true", "-c", l.source};
  l.cached = true;
  return l;
}

std::int64_t submit_as(EngineFixture& f, const Caller& c) {
  auto r = f.submit_as(c, one_arch());
  REQUIRE(r.ok);
  return r.result.at("id").get<std::int64_t>();
}

/// The messages a `fad launch` and a `fad run` of `c` are answered with.
std::pair<std::string, std::string> launch_and_run_answers(EngineFixture& f, const Caller& c) {
  LaunchRequest l;
  l.session = 5;
  l.cwd = "/";
  l.argv = {"/bin/true", "-c", "x.cu"};
  l.source = "/x.cu";
  return {f.engine->launch(c, l).message, f.engine->open_build(c, OpenBuildRequest{"n", "make", std::nullopt}).message};
}

}  // namespace

TEST_CASE("engine users: only the owner or root may cancel, pause, resume, retry or read logs", "[engine][users]") {
  EngineFixture f;
  f.options.daemon_uid = 0;
  f.make_engine().recover();
  const auto id = submit_as(f, kAlice);
  CHECK(f.store->build(id)->uid == std::optional<std::int64_t>(4001));
  f.engine->tick();

  auto r = f.engine->cancel(kBob, id);
  CHECK_FALSE(r.ok);
  CHECK(r.code == ErrorCode::failed);
  CHECK(r.message == "build " + std::to_string(id) + " belongs to 4001; only 4001 or root may cancel it");
  CHECK_THAT(f.engine->pause(kBob, id).message, Contains("may pause it"));
  CHECK_THAT(f.engine->resume(kBob, id).message, Contains("may resume it"));
  CHECK_THAT(f.engine->retry(kBob, id).message, Contains("may retry it"));
  CHECK_THAT(f.engine->logs(kBob, LogsRequest{id, std::nullopt, 0, 1024}).message, Contains("may read the logs of it"));
  CHECK(f.build_state(id) == BuildState::running);
  CHECK(f.launcher.signals.empty());

  // Everyone sees the build and whose it is.
  auto status = f.engine->status(kBob, StatusRequest{});
  REQUIRE(status.ok);
  CHECK(status.result["builds"][0]["uid"] == 4001);
  CHECK(status.result["builds"][0]["user"] == "4001");  // no passwd entry: the number

  // The owner may; so may root.
  CHECK(f.engine->pause(kAlice, id).ok);
  CHECK(f.engine->resume(kAlice, id).ok);
  CHECK(f.engine->logs(kAlice, LogsRequest{id, std::nullopt, 0, 1024}).ok);
  CHECK(f.engine->cancel(kRoot, id).ok);
}

TEST_CASE("engine users: compiles run with the groups the submitter's process held, not the database's",
          "[engine][users]") {
  EngineFixture f;
  f.options.daemon_uid = 0;
  f.make_engine().recover();
  // Alice's process holds 5000 and 6000 (the kernel said so at connect);
  // the group database knows nothing of uid 4001.
  Caller alice = kAlice;
  alice.groups = std::vector<gid_t>{5000, 4001, 6000};
  const auto id = submit_as(f, alice);
  CHECK(f.store->build(id)->groups == std::vector<std::int64_t>{4001, 5000, 6000});  // kept for a restart
  f.engine->tick();
  REQUIRE(f.launcher.launches.size() == 4);
  for (const auto& l : f.launcher.launches) {
    REQUIRE(l.spec.run_as);
    CHECK(l.spec.run_as->gid == 4001u);
    CHECK(l.spec.run_as->groups == std::vector<gid_t>{4001, 5000, 6000});
  }
  // A process that dropped its supplementary groups gets none back.
  Caller dropped = kBob;
  dropped.groups = std::vector<gid_t>{};
  const auto bobs = submit_as(f, dropped);
  CHECK(f.store->build(bobs)->groups == std::vector<std::int64_t>{4002});
}

TEST_CASE("engine users: only root or fadd's own user may stop fadd", "[engine][users]") {
  EngineFixture f;
  f.options.daemon_uid = 4001;
  f.make_engine().recover();
  CHECK(f.engine->shutdown(kAlice).ok);
  CHECK(f.engine->shutdown(kRoot).ok);
  auto r = f.engine->shutdown(kBob);
  CHECK_FALSE(r.ok);
  CHECK(r.message == "only root or 4001 (who runs this fadd) may stop it");
}

TEST_CASE("engine users: a user's TMPDIR is theirs, and what their killed compilers left is deleted in their turn",
          "[engine][users]") {
  // Given to the tree remover as root's, it would go ahead of every other
  // user's prune: a user whose compilers leave big trees could hold them up.
  EngineFixture f;
  f.options.daemon_uid = 0;
  f.make_engine().recover();
  std::vector<std::uint32_t> owners;
  f.engine->set_tree_remover([&owners](std::vector<std::string> dirs, bool count_only, std::string spill,
                                       std::uint32_t owner, std::function<void(std::vector<TreeResult>)> done) {
    owners.push_back(owner);
    inline_tree_remover()(std::move(dirs), count_only, std::move(spill), owner, std::move(done));
  });
  const auto id = submit_as(f, kAlice);
  f.engine->tick();
  REQUIRE(f.launcher.launches.size() == 4);
  const auto spec = f.launcher.launches[0].spec;
  struct stat st {};
  REQUIRE(::lstat(spec.temp_dir.c_str(), &st) == 0);
  CHECK(st.st_uid == 4001u);
  std::ofstream(spec.temp_dir + "/tmpxft_1.ii") << "left by a killed nvcc";
  REQUIRE(f.engine->cancel(kAlice, id).ok);
  f.launcher.exit(f.store->unit(spec.unit_id)->name, 128 + SIGTERM, true);
  CHECK(owners == std::vector<std::uint32_t>{4001});
  CHECK_FALSE(std::filesystem::exists(spec.temp_dir));
}

TEST_CASE("engine users: a root fadd probes and compiles as the build's owner", "[engine][users]") {
  EngineFixture f;
  f.options.daemon_uid = 0;
  f.make_engine().recover();
  const auto id = submit_as(f, kAlice);
  REQUIRE(f.toolchain_queries.size() == 1);
  CHECK(f.toolchain_queries[0] == std::pair<std::string, long>{"nvcc", 4001});
  f.engine->tick();
  REQUIRE(f.launcher.launches.size() == 4);
  for (const auto& l : f.launcher.launches) {
    REQUIRE(l.spec.run_as);
    CHECK(l.spec.run_as->uid == 4001u);
    CHECK(l.spec.run_as->gid == 4001u);
    CHECK(l.spec.run_as->groups == std::vector<gid_t>{4001});
  }
  // Root's own builds run as root.
  const auto mine = submit_as(f, kRoot);
  CHECK(f.toolchain_queries.back().second == -1);
  f.engine->tick();
  int roots = 0;
  for (const auto& l : f.launcher.launches)
    if (l.spec.log_path.rfind(f.build_dir(mine) + "/", 0) == 0) {
      ++roots;
      CHECK_FALSE(l.spec.run_as);
    }
  CHECK(roots == 4);
  // The owner's files belong to the owner; the directories fadd writes in stay root's.
  if (::geteuid() == 0) {
    struct stat st {};
    REQUIRE(::stat((f.build_dir(id) + "/logs/a_one.log").c_str(), &st) == 0);
    CHECK(st.st_uid == 4001u);
    CHECK((st.st_mode & 0777) == 0600);
    REQUIRE(::stat((f.build_dir(id) + "/obj").c_str(), &st) == 0);
    CHECK(st.st_uid == 4001u);
    REQUIRE(::stat((f.build_dir(id) + "/logs").c_str(), &st) == 0);
    CHECK(st.st_uid == 0u);
    CHECK((st.st_mode & 0777) == 0711);
    REQUIRE(::stat((f.build_dir(id) + "/build.log").c_str(), &st) == 0);
    CHECK(st.st_uid == 4001u);
  }
}

TEST_CASE("engine users: a fadd that is not root compiles for its own user only", "[engine][users]") {
  EngineFixture f;
  f.options.daemon_uid = 4001;
  f.make_engine().recover();
  auto r = f.submit_as(kBob, one_arch());
  CHECK_FALSE(r.ok);
  CHECK(r.code == ErrorCode::failed);
  CHECK(r.message ==
        "this fadd runs as 4001 and cannot compile for 4002; start your own with 'fad daemon start', or ask for a "
        "system fadd run by root");
  CHECK(f.toolchain_lookups == 0);  // nothing of Bob's was run
  const auto [launch, run] = launch_and_run_answers(f, kBob);
  CHECK_THAT(launch, Contains("cannot compile for 4002"));
  CHECK_THAT(run, Contains("cannot compile for 4002"));
  // Its own user compiles, as itself (no credential change).
  const auto id = submit_as(f, kAlice);
  f.engine->tick();
  REQUIRE_FALSE(f.launcher.launches.empty());
  CHECK_FALSE(f.launcher.launches[0].spec.run_as);
  CHECK(f.store->build(id)->uid == std::optional<std::int64_t>(4001));
}

TEST_CASE("engine users: a root fadd whose executor cannot drop rights compiles for root only", "[engine][users]") {
  // Slurm steps run with fadd's rights, in fadd's allocation: a user's
  // compiler there would run as root.
  EngineFixture f;
  f.options.daemon_uid = 0;
  f.launcher.can_drop_rights = false;
  f.make_engine().recover();
  auto r = f.submit_as(kAlice, one_arch());
  CHECK_FALSE(r.ok);
  CHECK(r.code == ErrorCode::failed);
  CHECK(r.message ==
        "this fadd runs as root with executor slurm, whose steps run with fadd's rights and in its allocation, so it "
        "cannot compile for 4001; start your own with 'fad daemon start'");
  CHECK(f.toolchain_lookups == 0);
  const auto [launch, run] = launch_and_run_answers(f, kAlice);
  CHECK_THAT(launch, Contains("cannot compile for 4001"));
  CHECK_THAT(run, Contains("cannot compile for 4001"));
  // Root's own builds run, with root's rights as always.
  submit_as(f, kRoot);
  f.engine->tick();
  REQUIRE_FALSE(f.launcher.launches.empty());
  CHECK_FALSE(f.launcher.launches[0].spec.run_as);
}

TEST_CASE("engine users: another user's build is not retried where its compiles cannot run as that user",
          "[engine][users]") {
  // Alice's build ran under the local executor; fadd restarted with Slurm's.
  EngineFixture f;
  f.options.daemon_uid = 0;
  f.make_engine().recover();
  const auto id = submit_as(f, kAlice);
  REQUIRE(f.engine->cancel(kAlice, id).ok);
  f.launcher.can_drop_rights = false;
  for (const Caller& who : {kAlice, kRoot}) {
    auto r = f.engine->retry(who, id);
    CHECK_FALSE(r.ok);
    CHECK_THAT(r.message, Contains("cannot compile for 4001"));
  }
  CHECK(f.build_state(id) == BuildState::cancelled);
}

TEST_CASE("engine users: fair share offers the next unit to the user holding less", "[engine][users]") {
  EngineFixture f;
  f.options.daemon_uid = 0;
  f.options.scheduler.max_parallel_units = 3;
  f.make_engine().recover();
  const auto alice = submit_as(f, kAlice);
  SubmitRequest all = one_arch();
  const auto bob = f.submit_as(kBob, all).result.at("id").get<std::int64_t>();
  f.engine->tick();
  // Oldest first would run three of Alice's units; fair share runs Bob's beside hers.
  int alices = 0, bobs = 0;
  for (const auto& l : f.launcher.launches) (l.spec.run_as->uid == 4001u ? alices : bobs)++;
  CHECK(alices == 2);
  CHECK(bobs == 1);
  (void)alice;
  (void)bob;
}

TEST_CASE("engine users: with one unit at a time, users take turns, not the oldest build to its end",
          "[engine][users]") {
  EngineFixture f;
  f.options.daemon_uid = 0;
  f.options.scheduler.max_parallel_units = 1;
  f.make_engine().recover();
  submit_as(f, kBob);  // the older build: all its units would go first
  f.engine->tick();
  submit_as(f, kAlice);
  std::vector<uid_t> order;
  for (int i = 0; i < 6 && f.launcher.live().size() == 1; ++i) {
    const auto& last = f.launcher.launches.back();
    order.push_back(last.spec.run_as->uid);
    f.launcher.exit(f.launcher.live()[0], 0);
    f.clock.advance(1);
    f.engine->tick();
  }
  REQUIRE(order.size() >= 4);
  CHECK(order[0] == 4002u);
  CHECK(order[1] == 4001u);  // Alice's turn, though Bob's build is older
  CHECK(order[2] == 4002u);
  CHECK(order[3] == 4001u);
}

}  // namespace fad

namespace fad {

TEST_CASE("engine users: one user's thousands of builds cannot make the listing too long for everyone",
          "[engine][users]") {
  EngineFixture f;
  f.options.daemon_uid = 0;           // a system fadd: every user may open builds
  f.options.max_builds_per_user = 0;  // no limit: what the listing does with thousands
  f.options.max_builds_per_user_per_hour = 0;
  f.make_engine().recover();
  const std::string name(kMaxBuildNameBytes, 'x');
  std::vector<std::int64_t> ids;
  for (int i = 0; i < 1500; ++i) {
    auto opened = f.engine->open_build(kBob, OpenBuildRequest{name, "make", std::nullopt});
    REQUIRE(opened.ok);
    ids.push_back(opened.result.at("id").get<std::int64_t>());
  }
  auto fits = [](const Response& r) { return encode_ok(r.result).size() < kMaxMessageBytes; };
  const auto status = f.engine->status(kAlice, StatusRequest{});
  REQUIRE(status.ok);
  CHECK(fits(status));
  const auto& listed = status.result.at("builds");
  const auto left_out = status.result.at("builds_left_out").get<std::size_t>();
  CHECK(listed.size() > 100);
  CHECK(listed.size() + left_out == ids.size());
  // Oldest first, as a queue: the newest are the ones counted, not sent.
  CHECK(listed.front().at("id") == ids.front());
  // One build is always there to see.
  StatusRequest one;
  one.id = ids.back();
  CHECK(f.engine->status(kAlice, one).result.at("builds").size() == 1);

  for (auto id : ids) REQUIRE(f.engine->close_build(kBob, CloseBuildRequest{id, 0}).ok);
  HistoryRequest all;
  all.limit = 10000;
  const auto history = f.engine->history(kAlice, all);
  REQUIRE(history.ok);
  CHECK(fits(history));
  CHECK(history.result.at("builds").size() + history.result.at("builds_left_out").get<std::size_t>() == ids.size());
  CHECK(history.result.at("builds").at(0).at("id") == ids.back());  // newest first
  // A listing that fits says nothing was left out.
  HistoryRequest few;
  few.limit = 5;
  CHECK_FALSE(f.engine->history(kAlice, few).result.contains("builds_left_out"));
}

TEST_CASE("engine users: what one user's launches showed steers only that user's estimates, also after a restart",
          "[engine][users]") {
  EngineFixture f;
  f.options.daemon_uid = 0;
  f.make_engine().recover();
  // The key of a unit everyone builds, and a caller free to claim it.
  auto launch_as = [&f](const Caller& c) {
    LaunchRequest l;
    l.session = c.uid;
    l.cwd = "/w";
    l.argv = {"/opt/cuda/bin/nvcc", "-c", "/w/fwd.cu", "-o", "/w/fwd.o"};
    l.source = "/w/fwd.cu";
    l.output = "/w/fwd.o";
    l.archs = {"9.0"};
    l.content_hash = "0123abcd";
    l.compiler_version = "Cuda compilation tools, release 13.0, V13.0.88";
    auto r = f.engine->launch(c, l);
    REQUIRE(r.ok);
    const auto unit = r.result.at("unit_id").get<std::int64_t>();
    f.engine->tick();
    REQUIRE(f.engine->launch_poll(c, UnitRequest{unit}).result.at("state") == "admitted");
    return unit;
  };
  // Bob's "compiler" holds 1 MiB for three seconds, three times over.
  for (int i = 0; i < 3; ++i) {
    const auto unit = launch_as(kBob);
    const int pid = 700 + i;
    f.launcher.processes[pid] = ProcessInfo{kBob.pid, pid, kBob.uid};
    REQUIRE(f.engine->launch_started(kBob, LaunchStartedRequest{unit, pid}).ok);
    f.launcher.memory[pid] = 1 << 20;
    for (int t = 0; t < 3; ++t) {
      f.clock.advance(1);
      f.engine->tick();
    }
    REQUIRE(f.engine->launch_finished(kBob, LaunchFinishedRequest{unit, 0, false}).ok);
    REQUIRE(f.store->unit(unit)->state == UnitState::succeeded);
    CHECK(f.store->unit(unit)->scope == "uid:4002");
  }
  for (int restarted = 0; restarted < 2; ++restarted) {
    INFO("after a restart: " << restarted);
    CHECK(f.store->unit(launch_as(kAlice))->estimate_source == "prior");
    CHECK(f.store->unit(launch_as(kRoot))->estimate_source == "prior");
    CHECK(f.store->unit(launch_as(kBob))->estimate_source == "exact");  // Bob's own, for Bob
    f.make_engine().recover();
  }
  // An export carries only what everyone may learn from.
  CHECK(f.engine->history_export(kRoot, HistoryExportRequest{}).result.at("profiles").empty());
}

TEST_CASE("engine users: one user may have max_builds_per_user builds open, others are not held back",
          "[engine][users]") {
  EngineFixture f;
  f.options.daemon_uid = 0;
  f.options.max_builds_per_user = 3;
  f.make_engine().recover();
  const auto first = submit_as(f, kBob);
  submit_as(f, kBob);
  const auto run = f.engine->open_build(kBob, OpenBuildRequest{"run", "make", std::nullopt});
  REQUIRE(run.ok);
  // A fourth, by any route, is refused with what to do.
  const auto fourth = f.submit_as(kBob, one_arch());
  CHECK_FALSE(fourth.ok);
  CHECK(fourth.code == ErrorCode::failed);
  CHECK(fourth.message ==
        "4002 has 3 builds queued, running or paused, the most one user may have (max_builds_per_user = 3); try "
        "again once one has ended");
  CHECK(f.engine->open_build(kBob, OpenBuildRequest{"n", "make", std::nullopt}).message == fourth.message);
  LaunchRequest l;
  l.session = 77;
  l.cwd = "/w";
  l.argv = {"/bin/true", "-c", "/w/x.cu"};
  l.source = "/w/x.cu";
  CHECK(f.engine->launch(kBob, l).message == fourth.message);  // a launch would open a session build
  CHECK(f.store->open_builds_of(kBob.uid) == 3);
  // Compiles into a build already open still go in.
  l.build_id = run.result.at("id").get<std::int64_t>();
  CHECK(f.engine->launch(kBob, l).ok);
  // Alice is not held back by Bob's builds.
  submit_as(f, kAlice);
  // A build that ended frees its place.
  REQUIRE(f.engine->cancel(kBob, first).ok);
  const auto again = f.submit_as(kBob, one_arch());
  REQUIRE(again.ok);
  CHECK_FALSE(f.submit_as(kBob, one_arch()).ok);
  // A retry reopens a build: it counts as one more.
  CHECK(f.engine->retry(kBob, first).message == fourth.message);
  REQUIRE(f.engine->cancel(kBob, again.result.at("id").get<std::int64_t>()).ok);
  CHECK(f.engine->retry(kBob, first).ok);
  CHECK(f.store->open_builds_of(kBob.uid) == 3);
}

TEST_CASE("engine users: one user's compiles waiting for admission are bounded, others' are not", "[engine][users]") {
  EngineFixture f;
  f.options.daemon_uid = 0;
  f.make_engine().recover();
  auto launch_of = [](int i) {
    LaunchRequest l;
    l.session = 9;
    l.cwd = "/w";
    l.source = "/w/k" + std::to_string(i) + ".cu";
    l.argv = {"/bin/true", "-c", l.source};
    return l;
  };
  int accepted = 0;
  Response refused;
  for (int i = 0; i < 600; ++i) {
    auto r = f.engine->launch(kBob, launch_of(i));
    if (!r.ok) {
      refused = r;
      break;
    }
    ++accepted;
  }
  CHECK(accepted == 512);
  CHECK(refused.code == ErrorCode::failed);
  CHECK(refused.message == "4002 has 512 compiles waiting for admission, the most one user may have");
  CHECK(f.engine->launch(kAlice, launch_of(0)).ok);
  // A cache hit waits for nothing: it is recorded whatever the count.
  auto hit = launch_of(1000);
  hit.cached = true;
  CHECK(f.engine->launch(kBob, hit).ok);
}

TEST_CASE("engine users: a launch build records compiles up to its cap, then they run without fadd",
          "[engine][users]") {
  // A command that compiles without end (here cache hits, which wait for
  // nothing) must not grow the database without bound.
  EngineFixture f;
  f.options.max_units_per_launch_build = 5;
  f.make_engine().recover();
  std::int64_t build = 0;
  for (int i = 0; i < 5; ++i) {
    auto r = f.engine->launch(f.me, cache_hit(3, i));
    REQUIRE(r.ok);
    build = r.result.at("build_id").get<std::int64_t>();
  }
  auto over = f.engine->launch(f.me, cache_hit(3, 5));
  CHECK_FALSE(over.ok);
  CHECK(over.code == ErrorCode::failed);
  CHECK(over.message == "build " + std::to_string(build) +
                            " has recorded 5 compiles, the most one build may; this one runs without fadd");
  auto queued = cache_hit(3, 6);
  queued.cached = false;
  CHECK_FALSE(f.engine->launch(f.me, queued).ok);
  CHECK(f.store->units(build).size() == 5);
  // Another session's build has its own count.
  CHECK(f.engine->launch(f.me, cache_hit(4, 0)).ok);
}

TEST_CASE("engine users: a user's launchers record max_launches_per_user_per_hour compiles, then run without fadd",
          "[engine][users]") {
  // Session builds close after 30 quiet seconds and the next launch opens
  // another, so the per-build cap alone would let a loop of cache hits fill
  // the state disk.
  EngineFixture f;
  f.options.max_launches_per_user_per_hour = 3;
  f.make_engine().recover();
  for (int i = 0; i < 3; ++i) REQUIRE(f.engine->launch(kAlice, cache_hit(i, i)).ok);
  const auto builds_before = f.store->status_builds(100).size();
  auto over = f.engine->launch(kAlice, cache_hit(9, 3));
  CHECK_FALSE(over.ok);
  CHECK(over.code == ErrorCode::failed);
  CHECK(over.message ==
        "4001's launchers have recorded the most compiles one user may in an hour "
        "(max_launches_per_user_per_hour = 3); this one runs without fadd, the next may be recorded in 20m");
  // Refused before a session build was opened for it; a waiting launch too.
  CHECK(f.store->status_builds(100).size() == builds_before);
  // A restart (which a user could provoke) does not hand out a fresh hour.
  f.make_engine().recover();
  CHECK(f.engine->launch(kAlice, cache_hit(9, 3)).message == over.message);
  auto queued = cache_hit(0, 4);
  queued.cached = false;
  CHECK_FALSE(f.engine->launch(kAlice, queued).ok);
  // Others are not held back; root is not limited.
  CHECK(f.engine->launch(kBob, cache_hit(0, 5)).ok);
  for (int i = 0; i < 5; ++i) CHECK(f.engine->launch(kRoot, cache_hit(0, 10 + i)).ok);
  f.clock.advance(1200);
  CHECK(f.engine->launch(kAlice, cache_hit(0, 6)).ok);
  CHECK_FALSE(f.engine->launch(kAlice, cache_hit(0, 7)).ok);
}

TEST_CASE("engine users: a user opens max_builds_per_user_per_hour builds, then is refused until the bucket refills",
          "[engine][users]") {
  // Submit and cancel at once: max_builds_per_user never binds, and each
  // build is a row and a directory for good.
  EngineFixture f;
  f.options.max_builds_per_user_per_hour = 3;
  f.make_engine().recover();
  for (int i = 0; i < 3; ++i) REQUIRE(f.engine->cancel(kAlice, submit_as(f, kAlice)).ok);
  const auto builds_before = f.store->status_builds(100).size();
  const std::string refused =
      "4001 has opened the most builds one user may in an hour (max_builds_per_user_per_hour = 3); try again in 20m";
  auto submit = f.submit_as(kAlice, one_arch());
  CHECK_FALSE(submit.ok);
  CHECK(submit.message == refused);
  auto run = f.engine->open_build(kAlice, OpenBuildRequest{"", "make", std::nullopt});
  CHECK_FALSE(run.ok);
  CHECK(run.message == refused);
  CHECK(f.engine->retry(kAlice, 1).message == refused);
  auto launch = cache_hit(5, 0);
  CHECK(f.engine->launch(kAlice, launch).message == refused);  // its session build would be a new one
  CHECK(f.store->status_builds(100).size() == builds_before);
  // A restart (which a user could provoke) does not hand out a fresh hour.
  f.make_engine().recover();
  CHECK(f.submit_as(kAlice, one_arch()).message == refused);
  // Others are not held back; root is not limited.
  submit_as(f, kBob);
  for (int i = 0; i < 4; ++i) submit_as(f, kRoot);
  f.clock.advance(1200);
  submit_as(f, kAlice);
  CHECK_FALSE(f.submit_as(kAlice, one_arch()).ok);
}

TEST_CASE("engine users: after the clock stepped back, a restart holds a user as long as it says, no longer",
          "[engine][users]") {
  // Bug (from a probe): builds recorded at times the clock has since stepped
  // back from were restored as opened in the future: the user's bucket never
  // refilled until the clock got there (2 h here), while fadd said "20m".
  EngineFixture f;
  f.options.max_builds_per_user_per_hour = 3;
  f.clock.wall_ = "2026-01-01T12:00:00Z";
  f.make_engine().recover();
  for (int i = 0; i < 3; ++i) REQUIRE(f.engine->cancel(kAlice, submit_as(f, kAlice)).ok);
  f.clock.wall_ = "2026-01-01T10:00:00Z";
  f.make_engine().recover();
  CHECK(f.submit_as(kAlice, one_arch()).message ==
        "4001 has opened the most builds one user may in an hour (max_builds_per_user_per_hour = 3); try again in 20m");
  f.clock.advance(1200);
  CHECK(f.submit_as(kAlice, one_arch()).ok);
}

TEST_CASE("engine users: a launch's arguments are recorded up to 16 KiB, the rest counted", "[engine][users]") {
  EngineFixture f;
  f.make_engine().recover();
  LaunchRequest l;
  l.session = 1;
  l.cwd = "/w";
  l.source = "/w/a.cu";
  l.argv = {"/opt/nvcc", "-c", "/w/a.cu"};
  for (int i = 0; i < 120; ++i) l.argv.push_back("-DX" + std::to_string(i) + "=" + std::string(1000, 'x'));
  l.cached = true;
  auto launched = f.engine->launch(kAlice, l);
  REQUIRE(launched.ok);
  const auto unit = f.store->unit(launched.result.at("unit_id").get<std::int64_t>());
  REQUIRE(unit);
  std::size_t bytes = 0;
  for (const auto& a : unit->argv) bytes += a.size() + 1;
  CHECK(bytes < 17 * 1024);
  CHECK(unit->argv.size() == 3 + 16 + 1);
  CHECK(unit->argv.back() == "...(104 more argument(s), 102.3 KiB, not recorded)");
  CHECK(test::slurp(unit->log_path).size() < 17 * 1024);
  // What fadd learns by is not cut: the same call with another last define
  // is another unit.
  auto other = l;
  other.argv.back() += "y";
  auto second = f.engine->launch(kAlice, other);
  REQUIRE(second.ok);
  CHECK(f.store->unit(second.result.at("unit_id").get<std::int64_t>())->key != unit->key);
  // One argument alone past the bound keeps its start.
  auto huge = l;
  huge.argv = {"/opt/nvcc" + std::string(100000, 'z'), "-c", "/w/a.cu"};
  auto third = f.engine->launch(kAlice, huge);
  REQUIRE(third.ok);
  const auto cut = f.store->unit(third.result.at("unit_id").get<std::int64_t>())->argv;
  REQUIRE(cut.size() == 2);
  CHECK(cut[0].size() == 8 * 1024 + 3);
  CHECK(cut[1] == "...(2 more argument(s), 11 B, not recorded)");
}

TEST_CASE("engine users: a root fadd learns from a user's bundled builds for that user only", "[engine][users]") {
  EngineFixture f;
  f.options.daemon_uid = 0;
  f.make_engine().recover();
  // They run as Alice, who may ptrace or stop them: her word, like a launch.
  for (const auto& u : f.store->units(submit_as(f, kAlice))) CHECK(u.scope == "uid:4001");
  for (const auto& u : f.store->units(submit_as(f, kRoot))) CHECK(u.scope.empty());
  // A fadd of Alice's own: everything it runs is hers, and shared.
  EngineFixture own;
  own.options.daemon_uid = 4001;
  own.make_engine().recover();
  for (const auto& u : own.store->units(submit_as(own, kAlice))) CHECK(u.scope.empty());
}

TEST_CASE("engine users: a fad run command and a launch's arguments reach logs and names without control characters",
          "[engine][users]") {
  EngineFixture f;
  f.make_engine().recover();
  auto opened =
      f.engine->open_build(f.me, OpenBuildRequest{"", "make \x1b[2J\x1b]0;pwned\x07\nfake row", std::nullopt});
  REQUIRE(opened.ok);
  const auto id = opened.result.at("id").get<std::int64_t>();
  const auto build = f.store->build(id);
  CHECK(build->name == "make ?[2J?]0;pwned??fake row");
  CHECK(build->command == build->name);
  LaunchRequest l;
  l.build_id = id;
  l.cwd = "/w\x1b[31m";
  l.source = "/w/a.cu";
  l.argv = {"/opt/nvcc", "-c", "/w/a.cu", "-DX=\n$ forged"};
  auto launched = f.engine->launch(f.me, l);
  REQUIRE(launched.ok);
  const auto log = test::slurp(f.build_dir(id) + "/build.log") +
                   test::slurp(f.store->unit(launched.result.at("unit_id").get<std::int64_t>())->log_path);
  CHECK(log.find('\x1b') == std::string::npos);
  CHECK(log.find('\x07') == std::string::npos);
  CHECK(log.find("\n$ forged") == std::string::npos);
  CHECK(log.find("-DX=?$ forged") != std::string::npos);

  // A unit named after an output path with escapes and a bidi override: the
  // lines fadd writes of its life (cached, started, finished) carry none.
  LaunchRequest named = l;
  named.source = "/w/b.cu";
  named.output =
      "/w/A\xe2\x80\xae"
      "B\xc2\x9b"
      "C\x1b]0;T\x07.o";
  named.argv = {"/opt/nvcc", "-c", "/w/b.cu", "-o", named.output};
  named.cached = true;
  const auto named_launch = f.engine->launch(f.me, named);
  REQUIRE(named_launch.ok);
  // The name itself: fadd's own log and every listing show it too.
  CHECK(f.store->unit(named_launch.result.at("unit_id").get<std::int64_t>())->name == "A?B?C?]0;T?.o");
  const auto again = test::slurp(f.build_dir(id) + "/build.log");
  INFO(again);
  CHECK(again.find("cached ") != std::string::npos);
  CHECK(again.find('\x1b') == std::string::npos);
  CHECK(again.find('\x07') == std::string::npos);
  CHECK(again.find("\xe2\x80\xae") == std::string::npos);
  CHECK(again.find("\xc2\x9b") == std::string::npos);
}

TEST_CASE("engine users: a build of thousands of units still fits one status answer and one report",
          "[engine][users]") {
  EngineFixture f;
  f.make_engine().recover();
  const std::string name(kMaxFileNameBytes - 6, 'u');
  std::int64_t build = 0;
  const int total = 2000;
  for (int i = 0; i < total; ++i) {
    LaunchRequest l;
    l.session = 5;
    l.cwd = "/w";
    l.source = "/w/" + name + std::to_string(i) + ".cu";
    l.output = "/w/" + name + std::to_string(i) + ".o";
    l.argv = {"/opt/nvcc", "-c", l.source};
    l.cached = true;  // cache hits wait for nothing: no cap on how many
    auto r = f.engine->launch(f.me, l);
    REQUIRE(r.ok);
    build = r.result.at("build_id").get<std::int64_t>();
  }
  StatusRequest one;
  one.id = build;
  const auto status = f.engine->status(f.me, one);
  REQUIRE(status.ok);
  CHECK(encode_ok(status.result).size() < kMaxMessageBytes);
  const auto& b = status.result.at("builds").at(0);
  const auto listed = b.at("unit_list").size();
  CHECK(listed > 100);
  CHECK(listed + b.at("units_left_out").get<std::size_t>() == static_cast<std::size_t>(total));
  CHECK(b.at("units").at("total") == total);  // the counts are whole

  const auto report = f.engine->report(f.me, build);
  REQUIRE(report.ok);
  CHECK(encode_ok(report.result).size() < kMaxMessageBytes);
  const auto reported = report.result.at("units").size();
  CHECK(reported > 100);
  CHECK(reported + report.result.at("units_left_out").get<std::size_t>() == static_cast<std::size_t>(total));
  CHECK(report.result.at("build").at("units").at("total") == total);
}

}  // namespace fad
