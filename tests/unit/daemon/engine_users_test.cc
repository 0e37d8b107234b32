// The engine with several users: who may act on which build, as whom a root
// fadd runs compiles, what a non-root fadd refuses, and fair share between
// users. Callers are made up (uids 4001, 4002): the engine only sees what
// SO_PEERCRED would have told it.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

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

std::int64_t submit_as(EngineFixture& f, const Caller& c) {
  auto r = f.submit_as(c, one_arch());
  REQUIRE(r.ok);
  return r.result.at("id").get<std::int64_t>();
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
  LaunchRequest l;
  l.session = 5;
  l.cwd = "/";
  l.argv = {"/bin/true", "-c", "x.cu"};
  l.source = "/x.cu";
  CHECK_THAT(f.engine->launch(kBob, l).message, Contains("cannot compile for 4002"));
  CHECK_THAT(f.engine->open_build(kBob, OpenBuildRequest{"n", "make", std::nullopt}).message,
             Contains("cannot compile for 4002"));
  // Its own user compiles, as itself (no credential change).
  const auto id = submit_as(f, kAlice);
  f.engine->tick();
  REQUIRE_FALSE(f.launcher.launches.empty());
  CHECK_FALSE(f.launcher.launches[0].spec.run_as);
  CHECK(f.store->build(id)->uid == std::optional<std::int64_t>(4001));
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

}  // namespace fad
