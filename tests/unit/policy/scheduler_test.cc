// Scheduler: fake time and fake memory drive decide(); a small harness carries
// its decisions out the way the daemon would and tracks true memory.
#include "policy/scheduler.h"

#include <algorithm>
#include <catch2/catch.hpp>

#include "policy/schedule_steps.h"
#include "scheduler_harness.h"

namespace fad {
namespace {

using namespace fad::test;

TEST_CASE("Scheduler staggers spikes and packs plateaus") {
  Harness h;
  h.config.budget = 6 * kGiB;
  for (int i = 1; i <= 4; ++i) {
    h.estimator.learn({key("u" + std::to_string(i)), 1, spike_then_plateau()});
    h.enqueue(i, key("u" + std::to_string(i)));
  }
  std::size_t most_running = 0;
  for (double now = 0; now <= 400; now += 5) {
    auto plan = h.step(now);
    CHECK(plan.capacity == 6 * kGiB);
    CHECK(plan.committed <= 6 * kGiB);
    CHECK(h.usage() <= 6 * kGiB);  // true memory: no overlapping spikes
    most_running = std::max(most_running, h.running.size());
    if (now == 0) {
      CHECK(plan.decisions.size() == 1);
      CHECK(plan.wait_reasons.at(2).rfind("needs 4.0 GiB, 2.0 GiB free", 0) == 0);
    }
  }
  // Each waits until the previous spike is past, not until it finishes. Both
  // predictions are widened for timeline drift (2.5% of 300 s each side), so
  // the spike ends 7.5 s later and the next starts 7.5 s earlier: 67.5 s apart,
  // the first 5 s tick after is 70.
  CHECK(h.started_at.at(1) == 0);
  CHECK(h.started_at.at(2) == 70);
  CHECK(h.started_at.at(3) == 140);
  CHECK(h.started_at.at(4) == 210);
  CHECK(most_running == 4);  // four plateaus side by side
}

TEST_CASE("Scheduler: a unit known only by the flat prior gets a 25% margin beside another guess") {
  Harness h;
  h.config.budget = 11 * kGiB;
  h.enqueue(1, key("guess_a"));  // no history, no manifest prior: the 5 GiB guess
  h.enqueue(2, key("guess_b"));
  h.enqueue(3, key("measured"), ManifestPrior{5 * kGiB, 60});  // done before the first guess
  auto plan = h.step(0);
  // The first guess runs at 5 GiB; the second would need 6.25 GiB beside it
  // (11.25 > 11); a measured 5 GiB unit fits and is backfilled.
  REQUIRE(plan.decisions.size() == 2);
  CHECK(plan.decisions[0].unit == 1);
  CHECK(plan.decisions[0].estimate_bytes == 5 * kGiB);
  CHECK(plan.decisions[1].unit == 3);
  CHECK(plan.wait_reasons.at(2).rfind("needs 6.2 GiB", 0) == 0);

  // With room for the margin, the second guess runs beside the first.
  Harness roomy;
  roomy.config.budget = 12 * kGiB;
  roomy.enqueue(1, key("guess_a"));
  roomy.enqueue(2, key("guess_b"));
  plan = roomy.step(0);
  REQUIRE(plan.decisions.size() == 2);
  CHECK(plan.decisions[1].estimate_bytes == 5 * kGiB + 5 * kGiB / 4);
  CHECK(plan.decisions[0].guess);
  CHECK(plan.decisions[1].guess);

  // Beside measured units only, a guess needs no margin.
  Harness measured;
  measured.config.budget = 10 * kGiB;
  measured.enqueue(1, key("measured"), ManifestPrior{5 * kGiB, 300}, 1);  // an older build: it goes first
  measured.enqueue(2, key("guess"), std::nullopt, 2);
  plan = measured.step(0);
  REQUIRE(plan.decisions.size() == 2);
  CHECK_FALSE(plan.decisions[0].guess);
  CHECK(plan.decisions[1].estimate_bytes == 5 * kGiB);
}

TEST_CASE("Scheduler: a unit bigger than the budget runs alone") {
  Harness h;
  h.config.budget = 3 * kGiB;
  h.enqueue(1, key("big"));  // never seen: 5 GiB prior
  h.enqueue(2, key("small"), ManifestPrior{kGiB, 10});
  auto plan = h.step(0);
  REQUIRE(plan.decisions.size() == 1);
  CHECK(plan.decisions[0].unit == 1);
  CHECK(plan.decisions[0].reason == "runs alone: needs 5.0 GiB, budget 3.0 GiB");
  CHECK(plan.decisions[0].estimate_bytes == 5 * kGiB);
  // While it runs, nothing joins it: fad's usage alone exceeds the capacity.
  plan = h.step(10);
  CHECK(plan.decisions.empty());
  // Not the machine's pressure: fad's own budget, on a machine that may be idle.
  CHECK(plan.wait_reasons.at(2) == "fad's running units use 5.0 GiB, over its 3.0 GiB budget: waiting for them to end");
  // Once it finishes, the small unit starts.
  plan = h.step(200);
  REQUIRE(find(plan, Decision::Kind::start));
  CHECK(find(plan, Decision::Kind::start)->unit == 2);
}

TEST_CASE("Scheduler: a hold starts nothing, gives every queued unit its reason, and memory is still watched") {
  // Bug: the daemon held back the starts the scheduler planned (a full
  // disk); the other units said "all 1 cores busy" for a core nothing used.
  Harness h;
  h.config.cores = 1;
  for (int i = 1; i <= 3; ++i) h.enqueue(i, key("u" + std::to_string(i)), ManifestPrior{kGiB, 10});
  Scheduler s(h.config, h.estimator);
  const std::string hold = "waiting for room on the disk of /state (fadd's reserve there is in use)";
  auto plan = s.decide(0, h.memory, h.queue, h.running, {}, hold);
  CHECK(plan.decisions.empty());
  REQUIRE(plan.wait_reasons.size() == 3);
  for (const auto& [id, reason] : plan.wait_reasons) CHECK(reason == hold);
  CHECK(plan.committed == 0);
  CHECK(plan.forecasts.size() == 3);  // fad status still shows each estimate
  // Without it, one starts and the others wait for the core.
  plan = s.decide(0, h.memory, h.queue, h.running);
  CHECK(plan.decisions.size() == 1);
  CHECK(plan.wait_reasons.at(3).rfind("all 1 cores busy", 0) == 0);

  // Under memory pressure the running units are still suspended.
  h.config.reserve = Reserve{4 * kGiB, 0};
  h.running = {running_unit(7, 0, 2 * kGiB), running_unit(8, 10, 2 * kGiB)};
  h.memory.available = 3 * kGiB;
  Scheduler pressed(h.config, h.estimator);
  plan = pressed.decide(100, h.memory, h.queue, h.running, {}, hold);
  REQUIRE(plan.decisions.size() == 1);
  CHECK(plan.decisions[0].kind == Decision::Kind::suspend);
  CHECK(plan.decisions[0].unit == 8);
}

TEST_CASE("Scheduler under pressure suspends the newest, never the oldest, then requeues after grace") {
  Harness h;
  h.config.suspend_grace_s = 10;
  h.config.reserve = Reserve{4 * kGiB, 0};
  h.running = {running_unit(1, 0, 2 * kGiB), running_unit(3, 20, 2 * kGiB), running_unit(2, 10, 2 * kGiB)};
  h.enqueue(9, key("q"), ManifestPrior{kGiB, 10});
  h.memory.total = 64 * kGiB;
  h.memory.available = 3 * kGiB;  // below the 4 GiB reserve
  Scheduler s(h.config, h.estimator);

  auto plan = s.decide(100, h.memory, h.queue, h.running);
  REQUIRE(plan.decisions.size() == 1);
  CHECK(plan.decisions[0].kind == Decision::Kind::suspend);
  CHECK(plan.decisions[0].unit == 3);
  CHECK(plan.decisions[0].reason ==
        "newest running unit, suspended under memory pressure (3.0 GiB available, reserve 4.0 GiB)");
  CHECK(plan.wait_reasons.at(9) == "paused by memory pressure (3.0 GiB available, reserve 4.0 GiB)");
  h.running[1].suspended = true;
  h.running[1].suspended_at = 100;

  // One suspension at a time: the monitor needs a moment to show its effect.
  CHECK(s.decide(101, h.memory, h.queue, h.running).decisions.empty());
  plan = s.decide(103, h.memory, h.queue, h.running);
  REQUIRE(plan.decisions.size() == 1);
  CHECK(plan.decisions[0].kind == Decision::Kind::suspend);
  CHECK(plan.decisions[0].unit == 2);
  h.running[2].suspended = true;
  h.running[2].suspended_at = 103;

  // Only the oldest still runs: it is never suspended.
  CHECK(s.decide(106, h.memory, h.queue, h.running).decisions.empty());

  // Pressure persists past the grace: stop and requeue the newest suspended.
  plan = s.decide(111, h.memory, h.queue, h.running);
  REQUIRE(plan.decisions.size() == 1);
  CHECK(plan.decisions[0].kind == Decision::Kind::requeue);
  CHECK(plan.decisions[0].unit == 3);
}

TEST_CASE("Scheduler: units outgrowing their estimates are pressure, and the reason says so") {
  Harness h;
  h.config.budget = 10 * kGiB;
  // Admitted on 5 GiB estimates, both now hold 5.2 GiB: the machine has room, the
  // budget has not, and the units' hard limit (budget + half the reserve, 11 GiB)
  // is not near enough for the OOM killer.
  h.config.reserve = Reserve{2 * kGiB, 0};
  h.running = {running_unit(1, 0, 5 * kGiB + kGiB / 5), running_unit(2, 5, 5 * kGiB + kGiB / 5)};
  h.memory.available = 40 * kGiB;
  Scheduler s(h.config, h.estimator);
  auto plan = s.decide(10, h.memory, h.queue, h.running);
  REQUIRE(plan.decisions.size() == 1);
  CHECK(plan.decisions[0].kind == Decision::Kind::suspend);
  CHECK(plan.decisions[0].unit == 2);
  CHECK(plan.decisions[0].reason ==
        "newest running unit, suspended under memory pressure (fad's units use 10.4 GiB of 10.0 GiB)");
}

TEST_CASE("Scheduler: the only running unit is never suspended for stalls or fad's budget") {
  Harness h;
  h.running = {running_unit(1, 0, 8 * kGiB)};
  h.memory.available = 0;
  h.memory.psi_some_avg10 = 50;
  Scheduler s(h.config, h.estimator);
  CHECK(s.decide(5, h.memory, h.queue, h.running).decisions.empty());
}

TEST_CASE("Scheduler: PSI above the threshold is pressure") {
  Harness h;
  h.running = {running_unit(1, 0, kGiB), running_unit(2, 5, kGiB)};
  h.memory.available = 60 * kGiB;
  h.memory.psi_some_avg10 = 25;
  h.enqueue(3, key("q"), ManifestPrior{kGiB, 10});
  Scheduler s(h.config, h.estimator);
  auto plan = s.decide(10, h.memory, h.queue, h.running);
  REQUIRE(find(plan, Decision::Kind::suspend));
  CHECK(find(plan, Decision::Kind::suspend)->unit == 2);
  CHECK(plan.wait_reasons.at(3) == "paused by memory pressure (PSI 25%)");
  h.memory.psi_some_avg10 = 5;
  CHECK(find(s.decide(10, h.memory, h.queue, h.running), Decision::Kind::start));
}

TEST_CASE("Scheduler resumes the oldest suspended unit when headroom returns") {
  Harness h;
  h.config.budget = 10 * kGiB;
  h.running = {running_unit(1, 0, 4 * kGiB), running_unit(2, 10, 3 * kGiB), running_unit(3, 20, 3 * kGiB)};
  h.running[1].suspended = h.running[2].suspended = true;
  h.running[1].suspended_at = h.running[2].suspended_at = 30;
  h.enqueue(9, key("q"), ManifestPrior{kGiB, 10});
  h.memory.available = 40 * kGiB;
  Scheduler s(h.config, h.estimator);

  auto plan = s.decide(40, h.memory, h.queue, h.running);
  // 4 + 3 fits; 4 + 3 + 3 = 10 fits too: both resume, oldest first.
  REQUIRE(plan.decisions.size() == 2);
  CHECK(plan.decisions[0].kind == Decision::Kind::resume);
  CHECK(plan.decisions[0].unit == 2);
  CHECK(plan.decisions[1].unit == 3);
  CHECK(plan.wait_reasons.at(9).rfind("needs 1.0 GiB, 0 B free", 0) == 0);

  // The oldest suspended unit's spike is still ahead and would not fit: nothing
  // resumes (oldest first), and nothing new starts before it.
  h.running[1].predicted.points.emplace_back(50, 5 * kGiB);
  plan = s.decide(40, h.memory, h.queue, h.running);
  CHECK(plan.decisions.empty());
  CHECK(plan.wait_reasons.at(9) == "paused by memory pressure: suspended units resume first");
}

TEST_CASE("Scheduler chooses nvcc threads") {
  Harness h;
  auto k = key("two", 2);
  Profile seven = Profile::flat(6 * kGiB, 240);
  h.estimator.learn({k, 2, seven});
  h.enqueue(1, k);
  SECTION("auto: all archs in parallel when it fits") {
    auto plan = h.step(0);
    REQUIRE(plan.decisions.size() == 1);
    CHECK(plan.decisions[0].threads == 2);
    CHECK(plan.decisions[0].reason.find("exact, 2 threads") != std::string::npos);
  }
  SECTION("auto: fewer threads when only those fit") {
    h.config.budget = 5 * kGiB;
    h.running = {running_unit(7, 0, kGiB / 2)};
    auto plan = h.step(0);
    REQUIRE(plan.decisions.size() == 1);
    CHECK(plan.decisions[0].threads == 1);
    CHECK(plan.decisions[0].estimate_bytes == 4 * kGiB);
  }
  SECTION("auto: the fewest threads when the units behind it need the cores") {
    // At 1 thread it runs 480 s; the queue keeps all 4 cores busy for 570 s.
    h.config.cores = 4;
    h.estimator.learn({key("one"), 1, Profile::flat(2 * kGiB, 600)});
    for (std::int64_t id = 2; id <= 4; ++id) h.enqueue(id, key("one"), std::nullopt, 1);
    auto plan = h.step(0);
    REQUIRE(plan.decisions.size() == 4);
    CHECK(plan.decisions[0].unit == 1);
    CHECK(plan.decisions[0].threads == 1);
  }
  SECTION("auto: more threads from cores memory leaves idle") {
    h.config.cores = 4;
    h.config.budget = 7 * kGiB;  // with it at 2 threads (6 GiB), nothing else fits
    h.estimator.learn({key("one"), 1, Profile::flat(2 * kGiB, 600)});
    for (std::int64_t id = 2; id <= 4; ++id) h.enqueue(id, key("one"), std::nullopt, 1);
    auto plan = h.step(0);
    REQUIRE(plan.decisions.size() == 1);
    CHECK(plan.decisions[0].threads == 2);
  }
  SECTION("auto: all threads for a unit that would otherwise be the build's tail") {
    // The 300 s of short units behind it drain in 195 s; at 1 thread it would run 480 s.
    h.config.cores = 4;
    h.estimator.learn({key("one"), 1, Profile::flat(2 * kGiB, 100)});
    for (std::int64_t id = 2; id <= 4; ++id) h.enqueue(id, key("one"), std::nullopt, 1);
    auto plan = h.step(0);
    REQUIRE(plan.decisions.size() == 3);
    CHECK(plan.decisions[0].unit == 1);
    CHECK(plan.decisions[0].threads == 2);
  }
  SECTION("fixed value is clamped to the arch count") {
    h.config.nvcc_threads = 8;
    auto plan = h.step(0);
    REQUIRE(plan.decisions.size() == 1);
    CHECK(plan.decisions[0].threads == 2);
  }
  SECTION("running threads never exceed the cores") {
    h.config.cores = 2;
    h.running = {running_unit(7, 0, kGiB / 2)};
    h.running[0].threads = 2;
    auto plan = h.step(0);
    CHECK(plan.decisions.empty());
    CHECK(plan.wait_reasons.at(1).rfind("all 2 cores busy", 0) == 0);
  }
}

TEST_CASE("Scheduler capacity: budget, reserve, cgroup, swap and fad's own usage") {
  Harness h;
  h.memory.total = 32 * kGiB;
  h.memory.available = 32 * kGiB;
  auto capacity = [&] { return Scheduler(h.config, h.estimator).decide(0, h.memory, h.queue, h.running).capacity; };

  h.config.reserve = Reserve{0, 25};
  CHECK(capacity() == 24 * kGiB);
  h.config.reserve = Reserve{2 * kGiB, 25};
  CHECK(capacity() == 30 * kGiB);
  h.config.budget = 12 * kGiB;
  CHECK(capacity() == 12 * kGiB);
  h.config.budget.reset();

  SECTION("cgroup limit, reserve taken from the limit") {
    h.config.reserve = Reserve{0, 10};
    h.memory.cgroup_limit = 8 * kGiB;
    CHECK(capacity() == 8 * kGiB - 8 * kGiB / 10);
  }
  SECTION("MemAvailable plus what fad's units hold") {
    h.memory.available = 10 * kGiB;
    h.running = {running_unit(1, 0, 6 * kGiB)};
    CHECK(capacity() == 14 * kGiB);
  }
  SECTION("swap counts only with swap: use") {
    h.memory.available = 3 * kGiB;
    h.memory.swap_free = 8 * kGiB;
    h.running = {running_unit(1, 0, kGiB), running_unit(2, 1, kGiB)};
    CHECK(capacity() == 3 * kGiB);  // 3 available + 2 held by fad - 2 reserve
    h.config.swap_use = true;
    CHECK(capacity() == 11 * kGiB);
  }
}

TEST_CASE("Scheduler: swap use lifts the pressure") {
  Harness h;
  h.config.reserve = Reserve{2 * kGiB, 0};
  h.memory.available = kGiB;
  h.memory.swap_free = 8 * kGiB;
  h.running = {running_unit(1, 0, kGiB), running_unit(2, 1, kGiB)};
  CHECK(find(Scheduler(h.config, h.estimator).decide(5, h.memory, h.queue, h.running), Decision::Kind::suspend));
  h.config.swap_use = true;
  auto plan = Scheduler(h.config, h.estimator).decide(5, h.memory, h.queue, h.running);
  CHECK_FALSE(find(plan, Decision::Kind::suspend));
  CHECK(plan.capacity == kGiB + 8 * kGiB + 2 * kGiB - 2 * kGiB);
}

TEST_CASE("Scheduler backfills without delaying the head of the queue") {
  Harness h;
  h.config.budget = 6 * kGiB;
  h.running = {running_unit(1, 0, 4 * kGiB, 50)};
  // Three builds, oldest first: between builds the queue order stands.
  h.enqueue(2, key("head"), ManifestPrior{5 * kGiB + kGiB / 2, 100}, 1);
  h.enqueue(3, key("long"), ManifestPrior{kGiB, 200}, 2);
  h.enqueue(4, key("short"), ManifestPrior{kGiB, 30}, 3);
  h.memory.available = 60 * kGiB;
  auto plan = Scheduler(h.config, h.estimator).decide(0, h.memory, h.queue, h.running);
  REQUIRE(plan.decisions.size() == 1);
  CHECK(plan.decisions[0].unit == 4);  // ends before the head's turn at 50 s
  CHECK(plan.wait_reasons.at(2) == "needs 5.5 GiB, 2.0 GiB free (expected to start in ~50 s)");
  CHECK(plan.wait_reasons.at(3) == "waiting for earlier units (queue order)");
  CHECK(plan.committed == 5 * kGiB);
}

TEST_CASE("Scheduler: a start that waits for a unit past its predicted end says its time is a guess") {
  Harness h;
  h.config.budget = 6 * kGiB;
  h.running = {running_unit(1, 0, 4 * kGiB, 50)};
  h.enqueue(2, key("head"), ManifestPrior{5 * kGiB + kGiB / 2, 100}, 1);
  h.memory.available = 60 * kGiB;
  // At 40 s the running unit has 10 s to go, as predicted.
  auto plan = Scheduler(h.config, h.estimator).decide(40, h.memory, h.queue, h.running);
  CHECK(plan.wait_reasons.at(2) == "needs 5.5 GiB, 2.0 GiB free (expected to start in ~10 s)");
  // Past its 50 s it is assumed to end a quarter of its prediction later, a
  // guess made again at every decision: the same "~13 s" ten minutes on.
  for (double now : {60.0, 600.0}) {
    plan = Scheduler(h.config, h.estimator).decide(now, h.memory, h.queue, h.running);
    CHECK(plan.wait_reasons.at(2) ==
          "needs 5.5 GiB, 2.0 GiB free (expected to start in ~13 s at the soonest; a running unit is past its "
          "estimated end)");
  }
}

TEST_CASE("Scheduler: max_parallel_units caps the count") {
  Harness h;
  h.config.max_parallel_units = 1;
  h.enqueue(1, key("a"), ManifestPrior{kGiB, 10});
  h.enqueue(2, key("b"), ManifestPrior{kGiB, 10});
  auto plan = h.step(0);
  CHECK(plan.decisions.size() == 1);
  CHECK(plan.wait_reasons.at(2) == "max_parallel_units reached (1)");
}

TEST_CASE("Scheduler: a unit using more than predicted raises its remaining prediction") {
  Harness h;
  h.config.budget = 6 * kGiB;
  h.memory.available = 60 * kGiB;
  h.running = {running_unit(1, 0, kGiB, 100)};
  h.enqueue(2, key("q"), ManifestPrior{4 * kGiB, 100});
  h.running[0].current_bytes = kGiB;
  CHECK(find(Scheduler(h.config, h.estimator).decide(10, h.memory, h.queue, h.running), Decision::Kind::start));
  h.running[0].current_bytes = 3 * kGiB;  // 3x its prediction: its rest is taken as 3 GiB
  auto plan = Scheduler(h.config, h.estimator).decide(10, h.memory, h.queue, h.running);
  CHECK(plan.decisions.empty());
  CHECK(plan.committed == 3 * kGiB);
}

TEST_CASE("Scheduler: a requeued unit's estimate is at least its observed peak") {
  Harness h;
  h.enqueue(1, key("q"), ManifestPrior{kGiB, 100});
  h.queue[0].requeued_peak = 7 * kGiB;
  auto plan = h.step(0);
  REQUIRE(plan.decisions.size() == 1);
  CHECK(plan.decisions[0].estimate_bytes == 7 * kGiB);
}

TEST_CASE("Scheduler: a unit that was suspended or paused is only as far into its profile as it compiled") {
  RunningUnit unit;
  unit.predicted = spike_then_plateau();  // 4 GiB for 60 s, then 0.5 GiB
  unit.started_at = 0;
  unit.current_bytes = 4 * kGiB;
  unit.peak_bytes = 4 * kGiB;
  // 100 s since it started, 70 of them frozen: 30 s compiled, its spike is still on.
  unit.frozen_s = 70;
  CHECK(steps::remaining(unit, 100).at(0) == 4 * kGiB);
  CHECK(steps::remaining(unit, 100).duration_s == Approx(270));
  // Taken for 100 s compiled, it is past its spike: what it holds now is all it will.
  unit.frozen_s = 0;
  unit.current_bytes = kGiB / 2;
  CHECK(steps::remaining(unit, 100).peak() < kGiB);
  unit.frozen_s = 70;
  CHECK(steps::remaining(unit, 100).peak() == 4 * kGiB);
}

}  // namespace
}  // namespace fad
