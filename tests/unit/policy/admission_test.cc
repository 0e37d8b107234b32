// Admission: per-build budgets owned by the scheduler, paused units, longest
// first within a build, probes of unknown families, nvcc thread choice and
// forecasts.
#include <catch2/catch.hpp>

#include "policy/scheduler.h"
#include "scheduler_harness.h"

namespace fad {
namespace {

using namespace fad::test;

std::vector<std::int64_t> started(const SchedulePlan& plan) {
  std::vector<std::int64_t> out;
  for (const auto& d : plan.decisions)
    if (d.kind == Decision::Kind::start) out.push_back(d.unit);
  return out;
}

TEST_CASE("Scheduler: a build's budget caps its units, and dropped units count nowhere") {
  Harness h;
  h.config.budget = 20 * kGiB;
  // Build 1 has a 5 GiB budget and three 2 GiB units; build 2 has none.
  for (int i = 1; i <= 3; ++i) h.enqueue(i, key("b1_" + std::to_string(i)), ManifestPrior{2 * kGiB, 100}, 1);
  h.enqueue(4, key("b2"), ManifestPrior{2 * kGiB, 100}, 2);
  Scheduler s(h.config, h.estimator);
  h.memory.available = 60 * kGiB;
  auto plan = s.decide(0, h.memory, h.queue, h.running, {{1, 5 * kGiB}});
  // Two of build 1 fit its budget (4 GiB), the third would make 6 GiB; build 2's unit runs beside them.
  CHECK(started(plan) == std::vector<std::int64_t>{1, 2, 4});
  CHECK(plan.wait_reasons.at(3) == "build budget 5.0 GiB reached (4.0 GiB in use, needs 2.0 GiB)");
  // What the plan commits is what it starts: the refused unit is not in it.
  CHECK(plan.committed == 6 * kGiB);

  SECTION("a build's first unit runs even if it alone exceeds the budget") {
    Harness big;
    big.config.budget = 20 * kGiB;
    big.enqueue(1, key("huge"), ManifestPrior{8 * kGiB, 100}, 1);
    big.enqueue(2, key("next"), ManifestPrior{kGiB, 100}, 1);
    big.memory.available = 60 * kGiB;
    plan = Scheduler(big.config, big.estimator).decide(0, big.memory, big.queue, big.running, {{1, 5 * kGiB}});
    CHECK(started(plan) == std::vector<std::int64_t>{1});
    CHECK_THAT(plan.wait_reasons.at(2), Catch::StartsWith("build budget 5.0 GiB reached"));
  }
  SECTION("a unit held back by its build's budget reserves nothing: later builds go on") {
    Harness tight;
    tight.config.budget = 10 * kGiB;
    tight.running = {running_unit(9, 0, 4 * kGiB)};
    tight.running[0].build_id = 1;
    tight.enqueue(1, key("b1"), ManifestPrior{3 * kGiB, 100}, 1);
    tight.enqueue(2, key("b2"), ManifestPrior{5 * kGiB, 100}, 2);
    tight.memory.available = 60 * kGiB;
    plan =
        Scheduler(tight.config, tight.estimator).decide(0, tight.memory, tight.queue, tight.running, {{1, 5 * kGiB}});
    CHECK(started(plan) == std::vector<std::int64_t>{2});
  }
}

TEST_CASE("Scheduler: a paused build holds its memory but neither cores nor other builds back") {
  // Bug: paused units were handed over as suspended, and suspended units must
  // resume before anything new starts, so a paused build blocked every other
  // build and kept its cores.
  Harness h;
  h.config.cores = 4;
  h.config.budget = 16 * kGiB;
  h.running = {running_unit(1, 0, 6 * kGiB), running_unit(2, 1, 6 * kGiB)};
  for (auto& r : h.running) {
    r.paused = true;
    r.threads = 2;
    r.build_id = 1;
  }
  h.enqueue(3, key("other"), ManifestPrior{3 * kGiB, 60}, 2);
  h.enqueue(4, key("other2"), ManifestPrior{3 * kGiB, 60}, 2);
  h.memory.available = 40 * kGiB;
  auto plan = Scheduler(h.config, h.estimator).decide(10, h.memory, h.queue, h.running);
  // 12 GiB held by the paused units leave 4 GiB: one 3 GiB unit; the 4 cores are free.
  CHECK(started(plan) == std::vector<std::int64_t>{3});
  CHECK_THAT(plan.wait_reasons.at(4), Catch::Contains("paused builds hold 12.0 GiB"));
  CHECK(plan.committed == 15 * kGiB);

  SECTION("paused units are never resumed, suspended or stopped by the scheduler") {
    h.memory.available = 0;  // pressure
    h.running.push_back(running_unit(5, 2, 4 * kGiB));
    h.running.push_back(running_unit(6, 3, 4 * kGiB));
    for (double now : {20.0, 40.0, 60.0}) {
      plan = Scheduler(h.config, h.estimator).decide(now, h.memory, h.queue, h.running);
      for (const auto& d : plan.decisions) CHECK((d.unit != 1 && d.unit != 2));
    }
  }
}

TEST_CASE("Scheduler: longest predicted first within a build, each build keeping its places") {
  Harness h;
  h.config.cores = 1;  // one unit at a time: the order is the start order
  h.config.max_parallel_units = 1;
  // Queue as given: build 1, build 2, build 1, build 2.
  h.enqueue(1, key("b1_short"), ManifestPrior{kGiB, 10}, 1);
  h.enqueue(2, key("b2_short"), ManifestPrior{kGiB, 10}, 2);
  h.enqueue(3, key("b1_long"), ManifestPrior{kGiB, 300}, 1);
  h.enqueue(4, key("b2_long"), ManifestPrior{kGiB, 300}, 2);
  std::vector<std::int64_t> order;
  for (double now = 0; now < 1000 && order.size() < 4; now += 1)
    for (auto id : started(h.step(now))) order.push_back(id);
  // First: build 1's place 1 gets its long unit. Then the queue as given is
  // b1_short, b2_short, b2_long: build 1's place is first, build 2's long unit
  // takes build 2's first place.
  CHECK(order == std::vector<std::int64_t>{3, 1, 4, 2});
}

TEST_CASE("Scheduler: in a cold build the first unit of each unknown family goes first") {
  Harness h;
  h.config.cores = 2;
  h.config.max_parallel_units = 2;
  // Two families of three, nothing known: the probes are a1 and b1, not a1 and a2.
  for (const char* f : {"a", "b"})
    for (int i = 1; i <= 3; ++i) {
      UnitKey k = key(std::string(f) + std::to_string(i));
      k.family = f;
      h.enqueue(static_cast<std::int64_t>(f[0]) * 10 + i, k);
    }
  auto plan = h.step(0);
  CHECK(started(plan) == std::vector<std::int64_t>{971, 981});
}

TEST_CASE("Scheduler: a multi-arch unit waits to compile its archs at once when that finishes sooner") {
  Harness h;
  h.config.budget = 10 * kGiB;
  auto two = key("two", 2);
  h.estimator.learn({two, 2, Profile::flat(6 * kGiB, 100)});
  // 5 GiB held for 20 more seconds: 2 threads (6 GiB) start in 20 s and end
  // at 120 s; 1 thread (4 GiB, two turns, 200 s) fits now but ends at 200 s.
  h.running = {running_unit(9, 0, 5 * kGiB, 20)};
  h.enqueue(1, two);
  auto plan = h.step(0);
  CHECK(started(plan).empty());
  CHECK_THAT(plan.wait_reasons.at(1), Catch::StartsWith("waits ~20 s to compile its 2 archs at once (2 threads)"));
  plan = h.step(20);
  REQUIRE(started(plan) == std::vector<std::int64_t>{1});
  CHECK(plan.decisions[0].threads == 2);

  SECTION("but not when all archs at once would start too late") {
    Harness late;
    late.config.budget = 10 * kGiB;
    late.estimator.learn({two, 2, Profile::flat(6 * kGiB, 100)});
    late.running = {running_unit(9, 0, 5 * kGiB, 150)};
    late.enqueue(1, two);
    plan = late.step(0);
    REQUIRE(started(plan) == std::vector<std::int64_t>{1});
    CHECK(plan.decisions[0].threads == 1);
  }
}

TEST_CASE("Scheduler: the build's tail waits for a second core rather than compile its archs in turns") {
  Harness h;
  h.config.cores = 2;
  h.config.budget = 32 * kGiB;
  auto two = key("two", 2);
  h.estimator.learn({two, 2, Profile::flat(6 * kGiB, 100)});
  // One core is busy for 20 more seconds. At 1 thread the unit would run 200 s
  // and be the tail; on both cores from 20 s on it ends at 120 s.
  h.running = {running_unit(9, 0, kGiB, 20)};
  h.enqueue(1, two);
  SECTION("alone in the queue, it waits") {
    auto plan = h.step(0);
    CHECK(started(plan).empty());
    CHECK_THAT(plan.wait_reasons.at(1), Catch::StartsWith("waits ~20 s to compile its 2 archs at once (2 threads)"));
    h.running.clear();
    plan = h.step(20);
    REQUIRE(started(plan) == std::vector<std::int64_t>{1});
    CHECK(plan.decisions[0].threads == 2);
  }
  SECTION("with units behind it that would use the core, it starts now on one") {
    h.estimator.learn({key("one"), 1, Profile::flat(kGiB, 100)});
    for (std::int64_t id = 2; id <= 4; ++id) h.enqueue(id, key("one"));
    auto plan = h.step(0);
    REQUIRE(started(plan) == std::vector<std::int64_t>{1});
    CHECK(plan.decisions[0].threads == 1);
  }
}

TEST_CASE("Scheduler: every queued unit has a forecast, started units carry their estimate's source") {
  Harness h;
  h.config.budget = 10 * kGiB;
  h.estimator.learn({key("known"), 1, Profile::flat(4 * kGiB, 200)});
  h.enqueue(1, key("known"));
  h.enqueue(2, key("unknown"));
  h.enqueue(3, key("later"), ManifestPrior{kGiB / 2, 50});
  auto plan = h.step(0);
  REQUIRE(plan.forecasts.size() == 3);
  CHECK(plan.forecasts.at(1).source == EstimateSource::exact);
  CHECK(plan.forecasts.at(1).duration_s == 200);
  CHECK(plan.forecasts.at(1).peak_bytes == 4 * kGiB);
  CHECK(plan.forecasts.at(2).source == EstimateSource::prior);
  CHECK(plan.forecasts.at(3).source == EstimateSource::manifest);
  CHECK(plan.forecasts.at(3).duration_s == 50);
  // The unknown family is probed first, then longest first; all fit.
  REQUIRE(started(plan) == std::vector<std::int64_t>{2, 1, 3});
  CHECK(plan.decisions[0].source == EstimateSource::prior);
  CHECK(plan.decisions[0].guess);
  CHECK(plan.decisions[1].source == EstimateSource::exact);
  CHECK_FALSE(plan.decisions[1].imported);
  CHECK(plan.decisions[2].source == EstimateSource::manifest);
}

TEST_CASE("Scheduler: longest first by the time a unit cannot be made shorter than, at its most threads") {
  // A two-arch unit takes 600 s at one thread (its archs in turns) and about
  // 300 s at two; a one-arch unit takes 400 s however many it gets.
  auto first_started = [](int cores) {
    Harness h;
    h.config.cores = cores;
    h.config.budget = 40 * kGiB;
    h.estimator.learn({key("two_archs", 2), 1, Profile::flat(2 * kGiB, 600)});
    h.estimator.learn({key("one_arch"), 1, Profile::flat(2 * kGiB, 400)});
    h.enqueue(1, key("two_archs", 2));
    h.enqueue(2, key("one_arch"));
    auto plan = h.step(0);
    CHECK(plan.forecasts.at(1).duration_s == 600);  // forecasts stay at the fewest threads
    REQUIRE_FALSE(started(plan).empty());
    return started(plan).front();
  };
  // The one-arch unit is the build's tail: it starts first.
  CHECK(first_started(4) == 2);
  // On one core the two-arch unit cannot have two threads: it ranks by its 600 s.
  CHECK(first_started(1) == 1);
}

}  // namespace
}  // namespace fad
