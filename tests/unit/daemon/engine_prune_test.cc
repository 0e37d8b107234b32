// Retention over the real Engine and Store: which builds lose their outputs
// and logs, what stays (rows, the estimator's history), and fadd applying its
// configured retention by itself once a day.
#include <limits>

#include <catch2/catch.hpp>

#include "daemon/engine.h"
#include "fakes.h"

namespace fad {
namespace {

using Catch::Contains;
using test::EngineFixture;
using test::kCompileUnits;
namespace fs = std::filesystem;

constexpr std::int64_t kDay = 86400;

/// Submits a build (as `who`, by default the test's own user) and runs it to
/// success at the clock's wall time.
std::int64_t run_to_success(EngineFixture& f, std::optional<Caller> who = std::nullopt) {
  std::int64_t id = 0;
  if (who) {
    SubmitRequest req;
    req.archs = {"9.0", "12.0"};
    req.kernels = "*";
    req.name = "test";
    auto r = f.submit_as(*who, req);
    REQUIRE(r.ok);
    id = r.result.at("id").get<std::int64_t>();
  } else {
    id = f.submit();
  }
  f.finish_build(id);
  REQUIRE(f.build_state(id) == BuildState::succeeded);
  return id;
}

/// `count` builds of `who` that succeed on the first days of 2026, one a day.
std::vector<std::int64_t> daily_builds(EngineFixture& f, const Caller& who, int count) {
  std::vector<std::int64_t> ids;
  for (int day = 1; day <= count; ++day) {
    f.clock.wall_ = "2026-01-0" + std::to_string(day) + "T00:00:00Z";
    ids.push_back(run_to_success(f, who));
  }
  return ids;
}

/// The next once-a-minute look of the keep limits.
void look(EngineFixture& f) {
  f.clock.advance(Engine::kKeepCheckEveryS + 1);
  f.engine->tick();
}

std::vector<std::int64_t> ids_of(const Response& r) {
  std::vector<std::int64_t> ids;
  for (const auto& b : r.result.at("builds")) ids.push_back(b.at("id").get<std::int64_t>());
  return ids;
}

Response prune(EngineFixture& f, std::optional<std::int64_t> age, bool dry_run = false) {
  PruneRequest req;
  req.older_than_s = age;
  req.dry_run = dry_run;
  std::optional<Response> answer;
  f.engine->prune(f.me, req, [&answer](Response r) { answer = std::move(r); });
  if (!answer) throw std::logic_error("prune did not answer (the inline tree remover answers at once)");
  return *answer;
}

}  // namespace

TEST_CASE("prune: old finished builds lose outputs and logs but keep their rows, and learning survives", "[prune]") {
  EngineFixture f;
  f.make_engine().recover();
  f.clock.wall_ = "2026-01-01T00:00:00Z";
  const auto old_ok = run_to_success(f);
  f.clock.wall_ = "2026-01-20T00:00:00Z";
  const auto recent_cancelled = f.submit();
  REQUIRE(f.engine->cancel(f.me, recent_cancelled).ok);
  const auto active = f.submit();
  f.clock.wall_ = "2026-02-05T00:00:00Z";
  const std::size_t learned = f.store->history().size();
  REQUIRE(learned == 5);  // four compiles and the link
  REQUIRE(fs::exists(f.artifact(old_ok)));

  // An age older than the clock (999999999999w): nothing is that old.
  auto ancient = prune(f, std::numeric_limits<std::int64_t>::max(), true);
  REQUIRE(ancient.ok);
  CHECK(ids_of(ancient).empty());
  CHECK(ids_of(prune(f, 60LL * 365 * kDay, true)).empty());

  // A dry run lists, deletes nothing.
  auto dry = prune(f, 30 * kDay, true);
  REQUIRE(dry.ok);
  CHECK(ids_of(dry) == std::vector<std::int64_t>{old_ok});
  CHECK(dry.result.at("dry_run") == true);
  CHECK(dry.result.at("bytes").get<std::uint64_t>() > 0);
  CHECK(fs::exists(f.build_dir(old_ok)));
  CHECK_FALSE(f.store->build(old_ok)->pruned_at.has_value());
  for (const auto& u : f.store->units(old_ok)) CHECK_FALSE(u.argv.empty());

  const auto attempts = f.store->unit_attempts(old_ok).size();
  f.store->add_unit_event(UnitEvent{f.store->units(old_ok).front().id, 1.0, "paused", "by the user"});
  REQUIRE(f.store->unit_events(old_ok).size() == 1);
  const auto others = f.store->unit_events(recent_cancelled).size() + f.store->unit_events(active).size();
  auto done = prune(f, 30 * kDay);
  REQUIRE(done.ok);
  // Its memory curves and events went with it (unit rows stay).
  CHECK(attempts > 0);
  CHECK(f.store->unit_attempts(old_ok).empty());
  CHECK(f.store->unit_events(old_ok).empty());
  CHECK(f.store->unit_events(recent_cancelled).size() + f.store->unit_events(active).size() == others);
  CHECK(ids_of(done) == std::vector<std::int64_t>{old_ok});
  CHECK(done.result.at("bytes") == dry.result.at("bytes"));
  CHECK_FALSE(fs::exists(f.build_dir(old_ok)));
  auto b = f.store->build(old_ok);
  REQUIRE(b);  // the record stays, marked
  CHECK(b->state == BuildState::succeeded);
  CHECK(b->pruned_at == std::optional<std::string>("2026-02-05T00:00:00Z"));
  CHECK(f.store->units(old_ok).size() == 5);
  // Nor do their command lines: nothing can run or retry them any more.
  for (const auto& u : f.store->units(old_ok)) CHECK(u.argv.empty());
  for (const auto& u : f.store->units(active)) CHECK_FALSE(u.argv.empty());
  CHECK(f.store->history().size() == learned);  // the estimator keeps what it learned
  CHECK(f.store->finished_builds(10).size() == 2);

  // What users see of a pruned build.
  StatusRequest sreq;
  sreq.id = old_ok;
  auto status = f.engine->status(f.me, sreq);
  CHECK(status.result.at("builds").at(0).at("pruned_at") == "2026-02-05T00:00:00Z");
  CHECK(status.result.at("builds").at(0).at("artifact").is_null());
  // Its units' logs went with it: no path to a deleted file.
  const auto& pruned_units = status.result.at("builds").at(0).at("unit_list");
  REQUIRE(pruned_units.size() == 5);
  for (const auto& u : pruned_units) CHECK(u.at("log").is_null());
  sreq.id = recent_cancelled;
  const auto kept = f.engine->status(f.me, sreq);  // named: the loop below reads into it
  for (const auto& u : kept.result.at("builds").at(0).at("unit_list")) CHECK(u.at("log").is_string());
  LogsRequest lreq;
  lreq.id = old_ok;
  auto logs = f.engine->logs(f.me, lreq);
  CHECK_FALSE(logs.ok);
  CHECK_THAT(logs.message, Contains("pruned"));

  // Pruning again finds nothing new; an age of 0 takes every finished build
  // but never the active one.
  CHECK(ids_of(prune(f, 30 * kDay)).empty());
  CHECK(ids_of(prune(f, 0)) == std::vector<std::int64_t>{recent_cancelled});
  // A pruned build's objects are gone: retrying it could not link.
  auto retry = f.engine->retry(f.me, recent_cancelled);
  CHECK_FALSE(retry.ok);
  CHECK_THAT(retry.message, Contains("pruned"));
  CHECK(f.store->build(active)->state == BuildState::queued);
  CHECK(fs::exists(f.build_dir(active) + "/build.log"));
  CHECK_FALSE(f.store->build(active)->pruned_at.has_value());
}

TEST_CASE("prune: a cancelled build still stopping its compilers waits for the next prune", "[prune]") {
  EngineFixture f;
  f.make_engine().recover();
  f.clock.wall_ = "2026-01-01T00:00:00Z";
  const auto id = f.submit();
  f.engine->tick();
  REQUIRE(f.engine->cancel(f.me, id).ok);
  REQUIRE(f.engine->running_count() == 4);  // SIGTERM sent, not exited yet
  f.clock.wall_ = "2026-03-01T00:00:00Z";
  CHECK(ids_of(prune(f, kDay)).empty());
  CHECK(fs::exists(f.build_dir(id)));
  for (const auto& name : kCompileUnits) f.launcher.exit(name, -1, true);
  CHECK(ids_of(prune(f, kDay)) == std::vector<std::int64_t>{id});
}

TEST_CASE("prune: without an age and with retention 'never' it is a usage error", "[prune]") {
  EngineFixture f;
  f.make_engine().recover();
  auto r = prune(f, std::nullopt);
  CHECK_FALSE(r.ok);
  CHECK(r.code == ErrorCode::usage);
  CHECK_THAT(r.message, Contains("--older-than"));
}

TEST_CASE("retention: fadd applies the configured age at its first tick, then once a day", "[prune]") {
  EngineFixture f;
  f.options.retention_s = 10 * kDay;
  f.make_engine().recover();
  f.clock.wall_ = "2026-01-01T00:00:00Z";
  const auto first = run_to_success(f);
  f.clock.wall_ = "2026-01-05T00:00:00Z";
  const auto second = run_to_success(f);

  // A restarted fadd (new engine) prunes at its first tick.
  f.clock.wall_ = "2026-01-12T00:00:00Z";
  f.launcher.forget_callbacks();
  f.make_engine().recover();
  f.engine->tick();
  CHECK(f.store->build(first)->pruned_at.has_value());
  CHECK_FALSE(f.store->build(second)->pruned_at.has_value());
  // An hour later the second build is old enough, but a day has not passed.
  f.clock.wall_ = "2026-01-16T00:00:00Z";
  f.clock.advance(3600);
  f.engine->tick();
  CHECK_FALSE(f.store->build(second)->pruned_at.has_value());
  CHECK(fs::exists(f.build_dir(second)));
  f.clock.advance(kDay);
  f.engine->tick();
  CHECK(f.store->build(second)->pruned_at == std::optional<std::string>("2026-01-16T00:00:00Z"));
  CHECK_FALSE(fs::exists(f.build_dir(second)));
  // Without --older-than, prune uses the configured retention.
  CHECK(prune(f, std::nullopt).result.at("older_than_s") == 10 * kDay);
}

TEST_CASE("keep_builds_per_user: each user's finished builds past their newest N are pruned within a minute",
          "[prune]") {
  // A loop of submits the compile cache finishes in seconds writes a
  // library's objects each time; the retention's age alone does not bound it.
  EngineFixture f;
  f.options.keep_builds_per_user = 2;
  f.make_engine().recover();
  const Caller alice{4001, 4001, 111};
  const std::vector<std::int64_t> hers = daily_builds(f, alice, 4);
  const auto mine = run_to_success(f);
  const auto active = f.submit();  // still queued: never counted
  f.clock.advance(Engine::kKeepCheckEveryS + 1);
  f.engine->tick();
  for (int i = 0; i < 4; ++i) {
    INFO("build " << hers[i]);
    CHECK(f.store->build(hers[i])->pruned_at.has_value() == (i < 2));
    CHECK(fs::exists(f.build_dir(hers[i])) == (i >= 2));
  }
  CHECK_FALSE(f.store->build(mine)->pruned_at.has_value());
  CHECK(fs::exists(f.artifact(hers[3])));
  // One more of hers: the oldest kept one goes at the next look, not before.
  f.clock.wall_ = "2026-01-05T00:00:00Z";
  const auto fifth = run_to_success(f, alice);
  f.engine->tick();
  CHECK_FALSE(f.store->build(hers[2])->pruned_at.has_value());
  f.clock.advance(Engine::kKeepCheckEveryS + 1);
  f.engine->tick();
  CHECK(f.store->build(hers[2])->pruned_at.has_value());
  CHECK_FALSE(f.store->build(hers[3])->pruned_at.has_value());
  CHECK_FALSE(f.store->build(fifth)->pruned_at.has_value());
  CHECK(f.build_state(active) != BuildState::succeeded);
}

TEST_CASE("keep_builds_per_user: after the clock stepped back, the newest builds are the last ones made", "[prune]") {
  // Bug (from a probe): builds were ranked by their finish time's text, so
  // once the clock stepped back a day every new build ranked oldest: its
  // library was pruned within a minute, while older builds kept theirs.
  EngineFixture f;
  f.options.keep_builds_per_user = 2;
  f.make_engine().recover();
  const Caller alice{4001, 4001, 111};
  const std::vector<std::int64_t> hers = daily_builds(f, alice, 2);
  f.clock.wall_ = "2025-12-01T00:00:00Z";  // stepped back, before both
  const auto newest = run_to_success(f, alice);
  f.clock.advance(Engine::kKeepCheckEveryS + 1);
  f.engine->tick();
  CHECK(f.store->build(hers[0])->pruned_at.has_value());
  CHECK_FALSE(f.store->build(hers[1])->pruned_at.has_value());
  CHECK_FALSE(f.store->build(newest)->pruned_at.has_value());
  CHECK(fs::exists(f.artifact(newest)));

  // Nor by id (from a re-probe): a long build that finishes after a quicker
  // one submitted later finished last, and keeps its library.
  const auto quick = run_to_success(f, alice);
  f.store->set_build_state(newest, BuildState::succeeded, "2025-12-01T00:10:00Z");  // its end, written now
  look(f);
  CHECK(f.store->build(hers[1])->pruned_at.has_value());
  CHECK_FALSE(f.store->build(quick)->pruned_at.has_value());
  CHECK_FALSE(f.store->build(newest)->pruned_at.has_value());
}

TEST_CASE("keep_records_per_user: one record dated in the future waits, the older ones behind it still go", "[prune]") {
  // Bug (from a re-probe): the pass stopped at the first record under an
  // hour old, taking the rest for newer; one recorded in the future (the
  // clock has stepped back since) held every deletion of its user back.
  EngineFixture f;
  f.options.keep_builds_per_user = 0;
  f.options.keep_records_per_user = 1;
  f.make_engine().recover();
  const Caller alice{4001, 4001, 111};
  const std::vector<std::int64_t> hers = daily_builds(f, alice, 3);
  f.store->db().exec("UPDATE builds SET finished_at = '2027-06-01T00:00:00Z' WHERE id = " + std::to_string(hers[0]));
  f.clock.wall_ = "2026-01-05T00:00:00Z";
  look(f);
  look(f);
  CHECK(f.store->build(hers[0]));        // under an hour old, by its date
  CHECK_FALSE(f.store->build(hers[1]));  // older, past the newest 1: deleted all the same
  CHECK(f.store->build(hers[2]));
}

TEST_CASE(
    "keep_records_per_user: records past each user's newest N are deleted after their files, never within "
    "the hour",
    "[prune]") {
  // A pruned build's rows stay (about 5 KB each): a user's loop of builds
  // would otherwise grow the database without bound.
  EngineFixture f;
  f.options.keep_builds_per_user = 0;  // no limit on files: the records' limit prunes them itself
  f.options.keep_records_per_user = 2;
  f.make_engine().recover();
  const Caller alice{4001, 4001, 111};
  const std::vector<std::int64_t> hers = daily_builds(f, alice, 4);
  const auto mine = run_to_success(f);
  const std::size_t learned = f.store->history().size();
  // First look: the two oldest lose their files; their records stay until
  // the prune's mark is written.
  look(f);
  for (int i = 0; i < 2; ++i) {
    INFO("build " << hers[i]);
    REQUIRE(f.store->build(hers[i]));
    CHECK(f.store->build(hers[i])->pruned_at.has_value());
    CHECK_FALSE(fs::exists(f.build_dir(hers[i])));
  }
  // Next look: their rows go, units included; the rest and the estimator's
  // history stay.
  look(f);
  for (int i = 0; i < 4; ++i) {
    INFO("build " << hers[i]);
    CHECK(f.store->build(hers[i]).has_value() == (i >= 2));
    CHECK(f.store->units(hers[i]).empty() == (i < 2));
  }
  CHECK(fs::exists(f.artifact(hers[2])));
  CHECK(fs::exists(f.artifact(hers[3])));
  REQUIRE(f.store->build(mine));
  CHECK_FALSE(f.store->build(mine)->pruned_at.has_value());
  CHECK(f.store->history().size() == learned);
  // Asked for, a deleted build is not one that never was.
  const Response gone = f.engine->report(f.me, hers[0]);
  CHECK_FALSE(gone.ok);
  CHECK(gone.message == "no build " + std::to_string(hers[0]) +
                            " (its record was deleted: fadd keeps those of each user's newest 2 finished builds, "
                            "keep_records_per_user)");
  CHECK(f.engine->report(f.me, 999).message == "no build 999");

  // Builds that finished within the hour stay, past the limit or not: the
  // hourly allowances are counted from them after a restart.
  f.clock.wall_ = "2026-01-06T00:00:00Z";
  const auto a = run_to_success(f, alice);
  f.clock.wall_ = "2026-01-06T00:10:00Z";
  const auto b = run_to_success(f, alice);
  f.clock.wall_ = "2026-01-06T00:59:00Z";
  look(f);
  look(f);
  CHECK_FALSE(f.store->build(hers[2]));  // days old: pruned, then deleted
  CHECK_FALSE(f.store->build(hers[3]));
  REQUIRE(f.store->build(a));
  REQUIRE(f.store->build(b));
  CHECK_FALSE(f.store->build(a)->pruned_at.has_value());
  f.clock.wall_ = "2026-01-06T01:11:00Z";
  const auto c = run_to_success(f, alice);
  look(f);
  look(f);
  CHECK_FALSE(f.store->build(a));
  CHECK(f.store->build(b));
  CHECK(f.store->build(c));
  // A deleted build's number is never given again.
  CHECK(run_to_success(f, alice) > c);
}

TEST_CASE("keep limits: an idle fadd ranks its builds again only once one finishes, or a recent record has aged",
          "[prune]") {
  // Both passes rank every finished build (0.1 s at 30,000): once a minute
  // for ever on an idle server is waste, but a record past the limit that
  // was too recent to delete must still go once it is old enough.
  EngineFixture f;
  f.options.keep_builds_per_user = 1;
  f.options.keep_records_per_user = 2;
  f.make_engine().recover();
  const Caller alice{4001, 4001, 111};
  const std::vector<std::int64_t> hers = daily_builds(f, alice, 2);
  look(f);
  look(f);  // a pass that pruned looks once more, in case a prune failed
  REQUIRE(f.store->build(hers[0])->pruned_at.has_value());
  REQUIRE_FALSE(f.store->build(hers[1])->pruned_at.has_value());

  // An older finished build of hers written behind fadd's back (as a restored
  // database might be) is past both limits, but nothing finished since the
  // last look: fadd does not rank again.
  BuildRecord old;
  old.name = "behind";
  old.archs = {"9.0"};
  old.nvcc = "/nvcc";
  old.created_at = "2025-12-01T00:00:00Z";
  old.uid = alice.uid;
  const auto behind = f.store->create_build(old, {});
  f.store->db().exec("UPDATE builds SET state = 'succeeded', finished_at = '2025-12-01T00:00:00Z' WHERE id = " +
                     std::to_string(behind));
  look(f);
  look(f);
  REQUIRE(f.store->build(behind));
  CHECK_FALSE(f.store->build(behind)->pruned_at.has_value());

  // A build that finishes makes both passes look again.
  f.clock.wall_ = "2026-01-03T00:00:00Z";
  const auto third = run_to_success(f, alice);
  look(f);
  look(f);
  CHECK_FALSE(f.store->build(behind));   // pruned, then deleted
  CHECK_FALSE(f.store->build(hers[0]));  // past the newest 2 records
  REQUIRE(f.store->build(hers[1]));
  CHECK(f.store->build(hers[1])->pruned_at.has_value());
  CHECK_FALSE(f.store->build(third)->pruned_at.has_value());

  // A record pushed past the limit within its hour stays; once the hour is
  // over it goes, with no build finishing meanwhile.
  f.clock.wall_ = "2026-01-06T00:00:00Z";
  const auto a = run_to_success(f, alice);
  f.clock.wall_ = "2026-01-06T00:10:00Z";
  run_to_success(f, alice);
  f.clock.wall_ = "2026-01-06T00:20:00Z";
  run_to_success(f, alice);
  f.clock.wall_ = "2026-01-06T00:21:00Z";
  look(f);
  look(f);
  CHECK_FALSE(f.store->build(third));
  REQUIRE(f.store->build(a));
  f.clock.wall_ = "2026-01-06T00:50:00Z";
  f.clock.advance(28 * 60);
  f.engine->tick();
  look(f);
  REQUIRE(f.store->build(a));
  f.clock.wall_ = "2026-01-06T01:02:00Z";
  f.clock.advance(10 * 60);
  f.engine->tick();
  look(f);
  CHECK_FALSE(f.store->build(a));
}

}  // namespace fad

namespace fad {
namespace {

/// A tree remover that holds its jobs until the test runs them, as the
/// worker thread would while the event loop goes on.
struct HeldRemover {
  struct Job {
    std::vector<std::string> dirs;
    bool count_only;
    std::string spill;
    std::uint32_t owner;
    std::function<void(std::vector<TreeResult>)> done;
  };
  std::vector<Job> jobs;
  TreeRemover remover() {
    return [this](std::vector<std::string> dirs, bool count_only, std::string spill, std::uint32_t owner,
                  std::function<void(std::vector<TreeResult>)> done) {
      jobs.push_back(Job{std::move(dirs), count_only, std::move(spill), owner, std::move(done)});
    };
  }
  void run_all() {
    auto pending = std::move(jobs);
    jobs.clear();
    for (auto& j : pending) inline_tree_remover()(j.dirs, j.count_only, j.spill, j.owner, j.done);
  }
};

TEST_CASE("prune: the build is marked and its tree moved aside at once, deleted off the loop, then answered",
          "[prune]") {
  EngineFixture f;
  f.make_engine().recover();
  HeldRemover held;
  f.engine->set_tree_remover(held.remover());
  REQUIRE(held.jobs.empty());  // an empty trash: nothing to sweep
  f.clock.wall_ = "2026-01-01T00:00:00Z";
  const auto id = run_to_success(f);
  f.clock.wall_ = "2026-02-05T00:00:00Z";

  std::optional<Response> answer;
  PruneRequest req;
  req.older_than_s = 30 * kDay;
  f.engine->prune(f.me, req, [&](Response r) { answer = std::move(r); });
  CHECK_FALSE(answer);  // not before the tree is gone
  REQUIRE(held.jobs.size() == 1);
  REQUIRE(held.jobs[0].dirs.size() == 1);
  const std::string in_trash = held.jobs[0].dirs[0];
  CHECK(fs::path(in_trash).parent_path() == fs::path(f.state) / "trash");
  CHECK(fs::exists(in_trash + "/build.log"));
  CHECK_FALSE(fs::exists(f.build_dir(id)));
  CHECK(f.store->build(id)->pruned_at.has_value());
  // Meanwhile fadd goes on, and a second prune does not take the build
  // again; with nothing to delete it answers at once, not behind the first.
  f.engine->tick();
  std::optional<Response> second;
  f.engine->prune(f.me, req, [&](Response r) { second = std::move(r); });
  REQUIRE(second);
  CHECK(ids_of(*second).empty());
  CHECK(held.jobs.size() == 1);
  held.run_all();
  REQUIRE(answer);
  REQUIRE(answer->ok);
  CHECK(ids_of(*answer) == std::vector<std::int64_t>{id});
  CHECK(answer->result.at("bytes").get<std::uint64_t>() > 0);
  CHECK_FALSE(fs::exists(in_trash));
}

TEST_CASE("prune: what a stopped fadd left in the trash is deleted when the next one starts", "[prune]") {
  EngineFixture f;
  test::write_file(fs::path(f.state) / "trash" / "7-1" / "obj" / "a.o", "half deleted");
  f.make_engine();
  HeldRemover held;
  f.engine->set_tree_remover(held.remover());
  REQUIRE(held.jobs.size() == 1);
  CHECK(held.jobs[0].dirs == std::vector<std::string>{f.state + "/trash/7-1"});
  CHECK_FALSE(held.jobs[0].count_only);
  held.run_all();
  CHECK(fs::is_empty(fs::path(f.state) / "trash"));
}

TEST_CASE("prune: a full disk at the mark still frees the trees, and the marks are written once it can", "[prune]") {
  EngineFixture f;
  f.make_engine().recover();
  f.clock.wall_ = "2026-01-01T00:00:00Z";
  const auto id = run_to_success(f);
  const auto second = run_to_success(f);
  f.clock.wall_ = "2026-02-05T00:00:00Z";
  f.store->db().exec(
      "CREATE TEMP TRIGGER full_disk BEFORE UPDATE OF pruned_at ON builds"
      " BEGIN SELECT RAISE(FAIL, 'database or disk is full'); END");

  // A full disk is when a prune is needed: it deletes what it was asked to.
  auto r = prune(f, 30 * kDay);
  REQUIRE(r.ok);
  CHECK(ids_of(r) == std::vector<std::int64_t>{id, second});
  CHECK_FALSE(fs::exists(f.build_dir(id)));
  CHECK_FALSE(fs::exists(f.build_dir(second)));
  CHECK(fs::is_empty(fs::path(f.state) / "trash"));
  CHECK_FALSE(f.store->build(id)->pruned_at.has_value());  // not written yet

  // Meanwhile fadd shows them pruned, and another prune does not count them again.
  StatusRequest sreq;
  sreq.id = id;
  CHECK(f.engine->status(f.me, sreq).result.at("builds").at(0).at("pruned_at") == "2026-02-05T00:00:00Z");
  LogsRequest lreq;
  lreq.id = second;
  auto logs = f.engine->logs(f.me, lreq);
  CHECK_FALSE(logs.ok);
  CHECK_THAT(logs.message, Contains("pruned on 2026-02-05"));
  CHECK(ids_of(prune(f, 30 * kDay)).empty());
  f.engine->tick();
  CHECK_FALSE(f.store->build(id)->pruned_at.has_value());  // still full

  f.store->db().exec("DROP TRIGGER temp.full_disk");
  f.engine->tick();
  CHECK(f.store->build(id)->pruned_at == "2026-02-05T00:00:00Z");
  CHECK(f.store->build(second)->pruned_at == "2026-02-05T00:00:00Z");
  CHECK(f.store->units(id).at(0).argv.empty());  // the rest of the mark too
  CHECK(ids_of(prune(f, 30 * kDay)).empty());
}

TEST_CASE("prune: a user has one prune at the tree remover at a time, root and the retention any number", "[prune]") {
  EngineFixture f;
  f.options.daemon_uid = 0;
  f.make_engine().recover();
  HeldRemover held;
  f.engine->set_tree_remover(held.remover());
  const Caller alice{4001, 4001, 111};
  f.clock.wall_ = "2026-01-01T00:00:00Z";
  run_to_success(f, alice);
  run_to_success(f, Caller{0, 0, 1});
  f.clock.wall_ = "2026-02-05T00:00:00Z";
  PruneRequest dry;
  dry.older_than_s = 30 * kDay;
  dry.dry_run = true;
  std::vector<Response> answers;
  const auto keep = [&](Response r) { answers.push_back(std::move(r)); };

  // A dry run counts her tree on the worker; a second one meanwhile is
  // refused at once, not queued behind it.
  f.engine->prune(alice, dry, keep);
  REQUIRE(held.jobs.size() == 1);
  CHECK(held.jobs[0].owner == 4001);  // the worker takes turns by owner
  f.engine->prune(alice, dry, keep);
  REQUIRE(answers.size() == 1);
  CHECK_FALSE(answers[0].ok);
  CHECK(answers[0].message ==
        "a prune of yours is still deleting or counting its builds' files; try again once it has answered");
  CHECK(held.jobs.size() == 1);
  // Root is not held to one.
  f.engine->prune(Caller{0, 0, 1}, dry, keep);
  f.engine->prune(Caller{0, 0, 1}, dry, keep);
  REQUIRE(held.jobs.size() == 3);
  CHECK(held.jobs[2].owner == 0);
  held.run_all();
  REQUIRE(answers.size() == 4);
  for (std::size_t i = 1; i < 4; ++i) CHECK(answers[i].ok);
  // Answered: her next prune goes through.
  f.engine->prune(alice, dry, keep);
  CHECK(held.jobs.size() == 1);
  held.run_all();
  REQUIRE(answers.size() == 5);
  CHECK(answers[4].ok);
}

TEST_CASE(
    "prune: build directories no build of the database owns are moved aside at start, kept, so a new build "
    "never finds an old one's files",
    "[prune]") {
  // fad.db deleted, emptied or replaced while builds existed: numbers start again at 1.
  test::EngineFixture f;
  test::write_file(f.build_dir(1) + "/logs/a_one.log", "another user's old log");
  test::write_file(f.build_dir(7) + "/lib/libfad_test.so", "old");
  test::write_file(f.state + "/builds/notes.txt", "not a build's");
  std::vector<std::string> handed;
  f.make_engine().set_tree_remover([&](std::vector<std::string> dirs, bool, std::string, std::uint32_t,
                                       std::function<void(std::vector<TreeResult>)> done) {
    handed.insert(handed.end(), dirs.begin(), dirs.end());
    done({});
  });
  f.engine->recover();
  CHECK_FALSE(fs::exists(f.build_dir(1)));
  CHECK_FALSE(fs::exists(f.build_dir(7)));
  CHECK(fs::exists(f.state + "/builds/notes.txt"));
  CHECK(handed.empty());  // nothing deleted: a restored database may own them still
  std::vector<std::string> kept;
  for (const auto& e : fs::directory_iterator(f.state + "/orphaned")) kept.push_back(e.path().filename().string());
  std::sort(kept.begin(), kept.end());
  REQUIRE(kept.size() == 2);
  CHECK(kept[0].rfind("1-", 0) == 0);
  CHECK(kept[1].rfind("7-", 0) == 0);
  CHECK(test::slurp(f.state + "/orphaned/" + kept[0] + "/logs/a_one.log") == "another user's old log");
  CHECK((fs::status(f.state + "/orphaned").permissions() & fs::perms::all) == fs::perms::owner_all);

  const auto id = run_to_success(f);
  REQUIRE(id == 1);
  CHECK(test::slurp(f.build_dir(1) + "/logs/a_one.log").find("another user's old log") == std::string::npos);
  // A directory whose build the database has stays.
  f.make_engine().recover();
  CHECK(fs::exists(f.build_dir(1)));
}

}  // namespace
}  // namespace fad
