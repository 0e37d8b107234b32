// What the engine keeps for `fad report` and live status, over the fakes:
// attempts with their samples and outcomes, suspend/pause events, running
// units' memory and elapsed time, queued units' estimates, the idle budget,
// queue and run time in history, and the report request itself.
#include <catch2/catch.hpp>

#include <signal.h>

#include "common/time_text.h"
#include "daemon/engine.h"
#include "daemon/report_view.h"
#include "fakes.h"

namespace fad {
namespace {

using Catch::Contains;
using test::EngineFixture;

const json* unit_named(const json& status, const std::string& name) {
  for (const auto& u : status.at("builds").at(0).at("unit_list"))
    if (u.at("name") == name) return &u;
  return nullptr;
}

json build_status(EngineFixture& f, std::int64_t id) {
  StatusRequest req;
  req.id = id;
  auto r = f.engine->status(f.me, req);
  REQUIRE(r.ok);
  return r.result;
}

double epoch(const std::string& wall) { return *parse_rfc3339(wall); }

}  // namespace

TEST_CASE("engine: running units show memory now, peak so far and elapsed, queued ones an estimate", "[engine]") {
  EngineFixture f;
  f.options.scheduler.max_parallel_units = 1;
  f.make_engine().recover();
  const auto id = f.submit();
  f.engine->tick();
  const int pgid = f.launcher.pgid_of("a_one");
  f.launcher.memory[pgid] = 3ull << 30;
  f.clock.advance(2);
  f.engine->tick();
  f.launcher.memory[pgid] = 1ull << 30;
  f.clock.advance(3);
  f.engine->tick();

  const json s = build_status(f, id);
  const json* a = unit_named(s, "a_one");
  REQUIRE(a);
  CHECK(a->at("state") == "running");
  CHECK(a->at("current_bytes") == 1ull << 30);
  CHECK(a->at("peak_bytes") == 3ull << 30);  // live, before anything is stored
  CHECK(a->at("elapsed_s").get<double>() == Approx(5));
  CHECK(s.at("builds")[0].at("current_bytes") == 1ull << 30);
  CHECK(s.at("daemon").at("memory").at("used_bytes") == 1ull << 30);

  // Queued: the manifest's prior (100 MiB for one arch) scaled to the two
  // archs at the threads the scheduler would start with, and where it came from.
  const json* b = unit_named(s, "b_one");
  REQUIRE(b);
  CHECK(b->at("state") == "queued");
  CHECK(b->at("current_bytes").is_null());
  CHECK(b->at("elapsed_s").is_null());
  CHECK(b->at("estimate_bytes").get<std::uint64_t>() > 0);
  CHECK(b->at("estimate_source") == "manifest");
  CHECK_THAT(b->at("wait_reason").get<std::string>(), Contains("max_parallel_units"));

  // After a_one finished, its family has a measurement: the source says so
  // (a running sibling's live growth, where one runs, refines it further).
  f.launcher.exit("a_one", 0);
  const json after = build_status(f, id);
  const std::string source = unit_named(after, "a_two")->at("estimate_source");
  CHECK((source == "family" || source == "running_sibling"));
  CHECK(unit_named(after, "a_one")->at("current_bytes").is_null());
  CHECK(unit_named(after, "a_one")->at("peak_bytes") == 3ull << 30);
}

TEST_CASE("engine: units of a paused build show paused, queued ones say the build is paused", "[engine]") {
  EngineFixture f;
  f.options.scheduler.max_parallel_units = 2;
  f.make_engine().recover();
  const auto id = f.submit();
  f.engine->tick();
  REQUIRE(f.engine->pause(f.me, id).ok);
  const json s = build_status(f, id);
  CHECK(unit_named(s, "a_one")->at("state") == "paused");
  CHECK(unit_named(s, "a_two")->at("state") == "paused");
  CHECK_THAT(unit_named(s, "b_one")->at("wait_reason").get<std::string>(),
             Contains("build paused ('fad resume " + std::to_string(id) + "')"));
  REQUIRE(f.engine->resume(f.me, id).ok);
  CHECK(unit_named(build_status(f, id), "a_one")->at("state") == "running");
}

TEST_CASE("engine: a unit suspended under memory pressure shows suspended, and the events are kept", "[engine]") {
  EngineFixture f;
  f.options.scheduler.max_parallel_units = 2;
  f.make_engine().recover();
  const auto id = f.submit();
  f.engine->tick();
  f.clock.advance(1);
  // Below the reserve (6.4 GiB) but above half of it, where fad would
  // requeue instead: the newest unit is frozen.
  f.probe.snap.available = 4ull << 30;
  f.engine->tick();
  const json s = build_status(f, id);
  int suspended = 0;
  for (const char* name : {"a_one", "a_two"}) suspended += unit_named(s, name)->at("state") == "suspended";
  CHECK(suspended == 1);
  f.probe.snap.available = 60ull << 30;
  f.clock.advance(1);
  f.engine->tick();
  const auto events = f.store->unit_events(id);
  REQUIRE(events.size() == 2);
  CHECK(events[0].kind == "suspend");
  CHECK_THAT(events[0].detail, Contains("memory pressure"));
  CHECK(events[1].kind == "resume");
  CHECK(events[1].at - events[0].at == Approx(1));
}

TEST_CASE("engine: every attempt is kept with its samples, span and outcome", "[engine]") {
  EngineFixture f;
  f.options.scheduler.max_parallel_units = 2;
  f.make_engine().recover();
  const auto id = f.submit();
  const double t0 = epoch(f.clock.wall_);
  f.engine->tick();
  const int pgid = f.launcher.pgid_of("a_one");
  for (int i = 1; i <= 300; ++i) {  // more samples than an attempt keeps
    f.launcher.memory[pgid] = std::uint64_t(i) << 20;
    f.clock.advance(0.5);
    f.engine->tick();
  }
  // OOM-killed: requeued and rerun; then it succeeds.
  f.launcher.exit_with("a_one", ExitInfo{137, true, 400ull << 20, true});
  f.engine->tick();
  f.clock.advance(2);
  f.launcher.exit("a_one", 0);
  f.launcher.exit("a_two", 1);  // fails

  const auto attempts = f.store->unit_attempts(id);
  REQUIRE(attempts.size() == 3);
  CHECK(attempts[0].outcome == "oom");
  CHECK(attempts[0].attempt == 1);
  CHECK(attempts[0].started_at == Approx(t0));
  CHECK(attempts[0].ended_at == Approx(t0 + 150));
  CHECK(attempts[0].peak_bytes == 400ull << 20);
  auto profile = Profile::parse(attempts[0].points);
  REQUIRE(profile);
  CHECK(profile->points.size() <= 120);
  CHECK(profile->points.size() >= 60);
  // Thinning keeps the highest sample (300 MiB), lifted to the peak its cgroup saw.
  CHECK(profile->peak() == 400ull << 20);
  CHECK(attempts[1].outcome == "succeeded");
  CHECK(attempts[1].attempt == 2);
  CHECK(attempts[1].ended_at - attempts[1].started_at == Approx(2));
  // Shorter than one sample: drawn at its (cgroup) peak, here 0, so no point.
  CHECK(attempts[2].outcome == "failed");
}

TEST_CASE("engine: an idle daemon reports the budget it would use", "[engine]") {
  EngineFixture f;
  f.make_engine().recover();
  f.engine->tick();
  auto r = f.engine->status(f.me, StatusRequest{});
  REQUIRE(r.ok);
  // 60 GiB available less the 10% reserve of 64 GiB.
  const auto budget = r.result.at("daemon").at("memory").at("budget_bytes").get<std::uint64_t>();
  CHECK(budget > 50ull << 30);
  CHECK(budget < 60ull << 30);
  CHECK(r.result.at("daemon").at("memory").at("committed_bytes") == 0);
}

TEST_CASE("engine: history separates time in the queue from time running", "[engine]") {
  EngineFixture f;
  f.make_engine().recover();
  f.clock.wall_ = "2026-01-02T03:00:00Z";
  const auto id = f.submit();
  f.clock.wall_ = "2026-01-02T03:04:47Z";  // waited behind others for 4m 47s
  f.engine->tick();
  f.clock.wall_ = "2026-01-02T03:04:49Z";
  for (const auto& name : test::kCompileUnits) f.launcher.exit(name, 0);
  f.engine->tick();
  test::write_file(f.artifact(id) + ".tmp", "ELF");
  f.launcher.exit("link", 0);
  REQUIRE(f.build_state(id) == BuildState::succeeded);
  auto r = f.engine->history(f.me, HistoryRequest{});
  REQUIRE(r.ok);
  const auto& b = r.result.at("builds").at(0);
  CHECK(b.at("duration_s") == 289);
  CHECK(b.at("queue_s") == 287);
  CHECK(b.at("run_s") == 2);
  CHECK(b.at("started_at") == "2026-01-02T03:04:47Z");

  // A fad run build's command runs from its opening, compiling or not.
  f.clock.wall_ = "2026-01-02T03:10:00Z";
  auto opened = f.engine->open_build(f.me, OpenBuildRequest{"ext", "make", std::nullopt});
  const auto ext = opened.result.at("id").get<std::int64_t>();
  f.clock.wall_ = "2026-01-02T03:10:30Z";  // make: nothing to be done
  REQUIRE(f.engine->close_build(f.me, CloseBuildRequest{ext, 0}).ok);
  r = f.engine->history(f.me, HistoryRequest{});
  const auto& run = r.result.at("builds").at(0);
  REQUIRE(run.at("id") == ext);
  CHECK(run.at("queue_s") == 0);
  CHECK(run.at("run_s") == 30);
  CHECK(run.at("started_at") == "2026-01-02T03:10:00Z");
}

TEST_CASE("engine: retry says how many failed and how many cancelled units it requeued", "[engine]") {
  EngineFixture f;
  f.options.scheduler.max_parallel_units = 1;
  f.make_engine().recover();
  const auto id = f.submit();
  f.engine->tick();
  f.launcher.memory[f.launcher.pgid_of("a_one")] = 3ull << 30;
  f.clock.advance(1);
  f.engine->tick();
  f.launcher.exit("a_one", 2);  // fails; the three queued compiles and the link are cancelled
  REQUIRE(f.build_state(id) == BuildState::failed);
  auto r = f.engine->retry(f.me, id);
  REQUIRE(r.ok);
  CHECK(r.result.at("requeued") == 5);
  CHECK(r.result.at("requeued_failed") == 1);
  CHECK(r.result.at("requeued_cancelled") == 4);

  // Running again, a_one shows this attempt's peak, not the failed one's.
  f.engine->tick();
  const int again = f.launcher.pgid_of("a_one");
  f.launcher.memory[again] = 50ull << 20;
  f.clock.advance(1);
  f.engine->tick();
  const json status = build_status(f, id);
  const json* rerun = unit_named(status, "a_one");
  REQUIRE(rerun);
  CHECK(rerun->at("state") == "running");
  CHECK(rerun->at("peak_bytes") == 50ull << 20);

  // A fad run build's compiles belong to launchers that have ended: no retry.
  auto opened = f.engine->open_build(f.me, OpenBuildRequest{"ext", "ninja", std::nullopt});
  const auto ext = opened.result.at("id").get<std::int64_t>();
  REQUIRE(f.engine->close_build(f.me, CloseBuildRequest{ext, 1}).ok);
  REQUIRE(f.build_state(ext) == BuildState::failed);
  auto refused = f.engine->retry(f.me, ext);
  CHECK_FALSE(refused.ok);
  CHECK(refused.message == "build " + std::to_string(ext) +
                               " holds the compiles of a fad run or fad launch command; run that command again");
  CHECK(f.build_state(ext) == BuildState::failed);
}

TEST_CASE("engine: a fad run build is running from the start and its archs are its compiles'", "[engine]") {
  EngineFixture f;
  f.make_engine().recover();
  auto opened = f.engine->open_build(f.me, OpenBuildRequest{"ext", "ninja", std::nullopt});
  REQUIRE(opened.ok);
  const auto id = opened.result.at("id").get<std::int64_t>();
  CHECK(f.build_state(id) == BuildState::running);
  for (const auto& [src, arch] : {std::pair{"x.cu", "sm_90"}, std::pair{"y.cu", "sm_80"}, std::pair{"z.cu", "sm_90"}}) {
    LaunchRequest req;
    req.build_id = id;
    req.cwd = f.tmp.str();
    req.argv = {"/opt/fake/nvcc", "-c", src};
    req.source = f.tmp / src;
    test::write_file(req.source, "__global__ void k() {}\n");
    req.archs = {arch};
    REQUIRE(f.engine->launch(f.me, req).ok);
  }
  const json s = build_status(f, id);
  CHECK(s.at("builds")[0].at("archs") == std::vector<std::string>{"sm_90", "sm_80"});
  CHECK(s.at("builds")[0].at("units").at("total") == 3);
  // Their arrival is when they started waiting, for the report.
  CHECK(f.store->unit_events(id).size() == 3);
  CHECK(f.store->unit_events(id)[0].kind == "queued");
}

TEST_CASE("engine: the report request returns the build, attempts with samples, events and machine samples",
          "[engine]") {
  EngineFixture f;
  f.options.scheduler.max_parallel_units = 2;
  f.options.sample_every = 1;
  f.make_engine().recover();
  const auto id = f.submit();
  f.engine->tick();
  f.launcher.memory[f.launcher.pgid_of("a_one")] = 200ull << 20;
  f.clock.advance(1);
  f.engine->tick();
  f.launcher.exit("a_one", 0);

  auto r = f.engine->report(f.me, id);
  REQUIRE(r.ok);
  const json& d = r.result;
  CHECK(d.at("build").at("id") == id);
  CHECK_FALSE(d.at("build").contains("unit_list"));
  // fad status's build object: whose build it is, too.
  const auto status = f.engine->status(f.me, StatusRequest{id});
  CHECK(d.at("build").at("uid") == status.result.at("builds")[0].at("uid"));
  CHECK(d.at("build").at("user") == status.result.at("builds")[0].at("user"));
  REQUIRE(d.at("units").size() == 5);
  const json& a_one = d.at("units")[0];
  CHECK(a_one.at("name") == "a_one");
  REQUIRE(a_one.at("attempt_list").size() == 1);
  const json& attempt = a_one.at("attempt_list")[0];
  CHECK(attempt.at("outcome") == "succeeded");
  CHECK(attempt.at("end").is_number());
  CHECK(attempt.at("t").size() == attempt.at("bytes").size());
  CHECK(attempt.at("bytes").at(0) == 200ull << 20);
  // A running unit's attempt is live: no end yet, outcome "running".
  const json& a_two = d.at("units")[1];
  REQUIRE(a_two.at("attempt_list").size() == 1);
  CHECK(a_two.at("attempt_list")[0].at("outcome") == "running");
  CHECK(a_two.at("attempt_list")[0].at("end").is_null());
  CHECK(d.at("units")[2].at("attempt_list").empty());  // still queued
  CHECK(d.at("machine").at("t").size() == 2);          // one sample per tick here
  CHECK(d.at("machine").at("capacity_bytes")[0].get<std::uint64_t>() > 0);
  CHECK(d.at("budget_bytes").is_null());  // "auto"
  CHECK(d.at("now").get<double>() == Approx(epoch(f.clock.wall_) + 1));

  CHECK(f.engine->report(f.me, id + 1).code == ErrorCode::not_found);
}

TEST_CASE("engine: the report draws memory_budget for a build that runs, not for one that ended under another",
          "[engine]") {
  EngineFixture f;
  f.options.scheduler.budget = 6ull << 30;
  f.make_engine().recover();
  const auto id = f.submit();
  f.engine->tick();
  CHECK(f.engine->report(f.me, id).result.at("budget_bytes") == 6ull << 30);
  REQUIRE(f.engine->cancel(f.me, id).ok);
  f.engine->tick();
  const auto after = f.engine->report(f.me, id);
  REQUIRE(after.ok);
  CHECK(after.result.at("build").at("state") == "cancelled");
  CHECK(after.result.at("budget_bytes").is_null());
}

namespace {

// A build of `n` units (unit0, unit1, ...), each with one finished attempt of
// `points` samples whose middle one is the peak.
ReportInput report_input(int n, int points) {
  ReportInput in;
  in.build.id = 1;
  in.build.created_at = "2026-01-01T00:00:00Z";
  for (int u = 0; u < n; ++u) {
    UnitRecord rec;
    rec.id = u + 1;
    rec.name = "unit" + std::to_string(u);
    rec.state = UnitState::succeeded;
    in.units.push_back(rec);
    Profile p;
    for (int i = 0; i < points; ++i) p.points.emplace_back(i, (i == points / 2 ? 9000 : 100) + u);
    p.duration_s = points;
    in.attempts.push_back({rec.id, 1, 0, static_cast<double>(points), "succeeded", 1, 1, 1, p.serialize()});
  }
  return in;
}

// The size one unit row takes of the report's unit budget.
std::size_t row_bytes(json unit) {
  unit.erase("attempt_list");  // the budget is on the rows as in fad status
  unit.erase("events");
  return unit.dump().size() + 1;
}

}  // namespace

TEST_CASE("report_json: thins the samples to its budget, keeping two points per attempt", "[engine]") {
  ReportInput in = report_input(10, 100);
  for (int i = 0; i < 50; ++i)
    in.machine.push_back(MemorySample{format_rfc3339(1767225600 + i), 64, 60, 1, 1, 1, {}, 9});
  const json d = report_json(in, 200, 10);
  std::size_t points = 0;
  for (const auto& u : d.at("units")) {
    const auto& a = u.at("attempt_list").at(0);
    points += a.at("t").size();
    CHECK(a.at("t").size() >= 2);
    std::uint64_t top = 0;
    for (const auto& b : a.at("bytes")) top = std::max(top, b.get<std::uint64_t>());
    CHECK(top >= 9000);  // the peak survives thinning
  }
  CHECK(points <= 200);
  CHECK(d.at("machine").at("t").size() <= 10);
  CHECK(d.at("machine").at("t").size() >= 5);
}

TEST_CASE("report_json: units past the byte budget are counted, not built, their attempts with them", "[engine]") {
  const ReportInput in = report_input(100, 10);
  const json whole = report_json(in, 10000, 10);
  CHECK(whole.at("units").size() == 100);
  CHECK_FALSE(whole.contains("units_left_out"));

  const json part = report_json(in, 10000, 10, row_bytes(whole.at("units")[0]) * 10);
  const auto sent = part.at("units").size();
  CHECK(sent >= 5);
  CHECK(sent <= 10);
  CHECK(sent + part.at("units_left_out").get<std::size_t>() == 100);
  CHECK(part.at("units").back().at("name") == "unit" + std::to_string(sent - 1));  // in order
  CHECK(part.at("units")[0].at("attempt_list").size() == 1);
  CHECK(part.at("build").at("units").at("total") == 100);  // the counts are whole
}

TEST_CASE("report_json: events are bounded over the report, each unit keeping its latest", "[engine]") {
  ReportInput in = report_input(10, 2);
  // Unit 1 was paused and resumed in a loop; unit 2 has three events.
  for (std::size_t i = 0; i < 3 * kReportEvents; ++i)
    in.events.push_back({1, static_cast<double>(i), i % 2 ? "unpause" : "pause", ""});
  for (int i = 0; i < 3; ++i) in.events.push_back({2, 1000.0 + i, "suspend", "memory pressure"});
  const json d = report_json(in, 10000, 10);
  const json& busy = d.at("units")[0].at("events");
  CHECK(busy.size() <= kReportEvents);
  CHECK(busy.size() >= kReportEvents / 2);
  CHECK(busy.size() + d.at("units")[0].at("events_left_out").get<std::size_t>() == 3 * kReportEvents);
  CHECK(busy.back().at("at").get<double>() == Approx(3 * kReportEvents - 1));  // the latest kept
  const json& calm = d.at("units")[1].at("events");
  CHECK(calm.size() == 2);  // its share of three, but never fewer than two
  CHECK(calm.back().at("at").get<double>() == Approx(1002));
  CHECK(d.at("units")[2].at("events").empty());
  CHECK_FALSE(d.at("units")[2].contains("events_left_out"));

  ReportInput few = report_input(2, 2);
  few.events.push_back({1, 5, "suspend", "memory pressure"});
  const json f = report_json(few, 10000, 10);
  CHECK(f.at("units")[0].at("events").size() == 1);
  CHECK_FALSE(f.at("units")[0].contains("events_left_out"));
}

TEST_CASE("report_json: the event bound holds however many units have events", "[engine]") {
  // 3,000 units with three events each: two each would be 6,000.
  ReportInput in = report_input(3000, 2);
  for (int u = 1; u <= 3000; ++u)
    for (int i = 0; i < 3; ++i) in.events.push_back({u, 100.0 * u + i, "suspend", "memory pressure"});
  const json d = report_json(in, 1000000, 10);
  std::size_t sent = 0, left_out = 0;
  REQUIRE(d.at("units").size() == 3000);
  for (std::size_t i = 0; i < 3000; ++i) {
    const auto& unit = d.at("units")[i];
    const auto& events = unit.at("events");
    REQUIRE_FALSE(events.empty());
    const double latest = 100.0 * static_cast<double>(i + 1) + 2;   // unit i has id i + 1
    CHECK(events.back().at("at").get<double>() == Approx(latest));  // each unit's latest kept
    sent += events.size();
    left_out += unit.value("events_left_out", std::size_t{0});
  }
  CHECK(sent <= kReportEvents);
  CHECK(sent >= kReportEvents - 1);  // the bound is used, not wasted
  CHECK(sent + left_out == 9000);

  // More units with events than the bound: some units' are left out, counted.
  ReportInput many = report_input(5000, 2);
  for (int u = 1; u <= 5000; ++u) many.events.push_back({u, static_cast<double>(u), "suspend", ""});
  const json m = report_json(many, 1000000, 10);
  std::size_t kept = 0, counted = 0;
  for (const auto& unit : m.at("units")) {
    kept += unit.at("events").size();
    counted += unit.value("events_left_out", std::size_t{0});
  }
  CHECK(kept == kReportEvents);
  CHECK(kept + counted == 5000);
}

TEST_CASE("report_json: a queued unit's estimate is made only for the rows sent", "[engine]") {
  // An estimate costs the estimator a lookup: a build of tens of thousands
  // of queued units must not pay for the rows it leaves out.
  ReportInput in = report_input(100, 2);
  for (auto& u : in.units) u.state = UnitState::queued;
  std::size_t asked = 0;
  in.queued = [&](const UnitRecord& u) {
    ++asked;
    LiveUnit l;
    l.estimate_bytes = 1000 + u.id;
    return std::optional<LiveUnit>(l);
  };
  const json whole = report_json(in, 10000, 10);
  CHECK(asked == 100);
  CHECK(whole.at("units")[3].at("estimate_bytes") == 1004);

  asked = 0;
  const json part = report_json(in, 10000, 10, row_bytes(whole.at("units")[0]) * 10);
  const auto sent = part.at("units").size();
  CHECK(sent >= 5);
  CHECK(asked >= sent);
  CHECK(asked <= sent + 1);  // the first row that did not fit was made to find that out
  CHECK(part.at("units").back().at("estimate_bytes") == 1000 + sent);
}

}  // namespace fad
