// A budget that holds whatever others do: memory that other processes hold
// inside fadd's cgroup is not fad's, and when the machine itself runs short
// even the last running unit is frozen, then stopped and rerun alone.
#include <catch2/catch.hpp>

#include "policy/scheduler.h"
#include "scheduler_harness.h"

namespace fad {
namespace {

using namespace fad::test;

TEST_CASE("Scheduler capacity in a cgroup: limit less what others in it hold, less the reserve") {
  Harness h;
  h.config.reserve = Reserve{kGiB, 0};
  h.memory.total = 64 * kGiB;
  h.memory.available = 50 * kGiB;  // the host has plenty
  h.memory.cgroup_limit = 10 * kGiB;
  h.running = {running_unit(1, 0, 2 * kGiB)};
  // The cgroup holds 8 GiB: fad's 2 GiB and a 6 GiB memory hog beside fadd.
  h.memory.cgroup_usage = 8 * kGiB;
  auto plan = Scheduler(h.config, h.estimator).decide(10, h.memory, h.queue, h.running);
  CHECK(plan.capacity == 10 * kGiB - 6 * kGiB - kGiB);  // 3 GiB, of which fad holds 2
  // The same without the hog: the limit less the reserve.
  h.memory.cgroup_usage = 2 * kGiB;
  CHECK(Scheduler(h.config, h.estimator).decide(10, h.memory, h.queue, h.running).capacity == 9 * kGiB);

  SECTION("a unit that would not fit beside the hog waits") {
    h.memory.cgroup_usage = 8 * kGiB;
    h.enqueue(2, key("q"), ManifestPrior{2 * kGiB, 60});
    plan = Scheduler(h.config, h.estimator).decide(10, h.memory, h.queue, h.running);
    CHECK(plan.decisions.empty());
    CHECK_THAT(plan.wait_reasons.at(2), Catch::StartsWith("needs 2.0 GiB, 1.0 GiB free"));
  }
  SECTION("a hog that grows into fad's share is pressure") {
    h.memory.cgroup_usage = 9 * kGiB + kGiB / 2;  // 7.5 GiB of others: fad may hold 1.5 GiB, holds 2
    h.running.push_back(running_unit(2, 5, 0));
    plan = Scheduler(h.config, h.estimator).decide(10, h.memory, h.queue, h.running);
    REQUIRE(plan.decisions.size() == 1);
    CHECK(plan.decisions[0].kind == Decision::Kind::suspend);
    CHECK(plan.decisions[0].unit == 2);
    CHECK_THAT(plan.decisions[0].reason, Catch::Contains("the machine leaves fad 1.5 GiB"));
  }
}

TEST_CASE("Scheduler: when the machine stays short, the last running unit is frozen, stopped and rerun alone") {
  Harness h;
  h.config.suspend_grace_s = 10;
  h.config.reserve = Reserve{kGiB, 0};
  h.memory.total = 64 * kGiB;
  h.memory.available = 50 * kGiB;
  h.memory.cgroup_limit = 10 * kGiB;
  // Others in the cgroup hold 5 GiB: fad may hold 4 GiB, its one unit holds 6.
  RunningUnit last = running_unit(1, 0, 6 * kGiB);
  last.peak_bytes = 6 * kGiB;
  h.running = {last};
  h.memory.cgroup_usage = 11 * kGiB;
  h.enqueue(2, key("q"), ManifestPrior{kGiB, 60});
  Scheduler s(h.config, h.estimator);

  auto plan = s.decide(100, h.memory, h.queue, h.running);
  REQUIRE(plan.decisions.size() == 1);
  CHECK(plan.decisions[0].kind == Decision::Kind::suspend);
  CHECK(plan.decisions[0].unit == 1);
  CHECK_THAT(plan.decisions[0].reason, Catch::StartsWith("last running unit, suspended: the machine is short"));
  h.running[0].suspended = true;
  h.running[0].suspended_at = 100;

  // Within the grace it stays frozen; past it, still short: stopped, to rerun alone.
  CHECK(s.decide(105, h.memory, h.queue, h.running).decisions.empty());
  plan = s.decide(111, h.memory, h.queue, h.running);
  REQUIRE(plan.decisions.size() == 1);
  CHECK(plan.decisions[0].kind == Decision::Kind::requeue);
  CHECK(plan.decisions[0].alone);

  // Requeued with its peak: it runs first and alone, once the machine leaves fad that much.
  h.running.clear();
  QueuedUnit again;
  again.id = 1;
  again.key = key("last");
  again.requeued_peak = 6 * kGiB;
  again.alone = true;
  h.queue.push_back(again);
  h.memory.cgroup_usage = 5 * kGiB;  // the others still hold 5 GiB: 4 GiB for fad
  plan = s.decide(120, h.memory, h.queue, h.running);
  CHECK(plan.decisions.empty());
  CHECK(plan.wait_reasons.at(1) == "must run alone: needs 6.0 GiB, the machine leaves fad 4.0 GiB");
  CHECK(plan.wait_reasons.at(2) == "waiting for a unit that must run alone");
  h.memory.cgroup_usage = 2 * kGiB;  // they shrank: 7 GiB for fad
  plan = s.decide(130, h.memory, h.queue, h.running);
  REQUIRE(plan.decisions.size() == 1);
  CHECK(plan.decisions[0].unit == 1);
  CHECK(plan.decisions[0].estimate_bytes == 6 * kGiB);
  CHECK(plan.wait_reasons.at(2) == "waiting for a unit that must run alone");

  SECTION("fad's own budget alone never stops the last unit: it runs alone, bigger than the budget") {
    Harness b;
    b.config.budget = 3 * kGiB;
    b.memory.available = 50 * kGiB;
    RunningUnit big = running_unit(1, 0, 5 * kGiB);
    big.peak_bytes = 5 * kGiB;
    b.running = {big};
    Scheduler sb(b.config, b.estimator);
    for (double now : {10.0, 30.0, 60.0}) CHECK(sb.decide(now, b.memory, b.queue, b.running).decisions.empty());
  }
}

TEST_CASE("Scheduler: with the OOM killer near, the newest unit is stopped at once, not frozen") {
  Harness h;
  h.config.suspend_grace_s = 10;
  h.config.reserve = Reserve{kGiB, 0};
  h.memory.total = 64 * kGiB;
  h.memory.available = 50 * kGiB;
  h.memory.cgroup_limit = 10 * kGiB;  // fad may hold 9 GiB; its units' hard limit is 9.5, critical past 9.25
  h.running = {running_unit(1, 0, 5 * kGiB), running_unit(2, 40, 2 * kGiB), running_unit(3, 50, 2 * kGiB + kGiB / 10)};
  Scheduler s(h.config, h.estimator);

  SECTION("just over what the machine leaves fad: frozen, as before") {
    h.memory.cgroup_usage = 9 * kGiB + kGiB / 10;
    auto plan = s.decide(60, h.memory, h.queue, h.running);
    REQUIRE(plan.decisions.size() == 1);
    CHECK(plan.decisions[0].kind == Decision::Kind::suspend);
    CHECK(plan.decisions[0].unit == 3);
  }
  SECTION("past a quarter of the reserve beyond it: the newest is stopped, the oldest runs on") {
    h.running[2].suspended = true;  // frozen a moment ago: freezing freed nothing
    h.running[2].suspended_at = 59;
    h.running[0].current_bytes = 5 * kGiB + kGiB / 5;  // the oldest still grows
    h.memory.cgroup_usage = 9 * kGiB + 3 * kGiB / 10;
    auto plan = s.decide(60, h.memory, h.queue, h.running);
    REQUIRE(plan.decisions.size() == 1);
    CHECK(plan.decisions[0].kind == Decision::Kind::requeue);
    CHECK(plan.decisions[0].unit == 3);
    CHECK_FALSE(plan.decisions[0].alone);
    CHECK_THAT(plan.decisions[0].reason, Catch::Contains("OOM killer is near"));

    // It leaves the running list at once, its memory only when it exits, and
    // the oldest grows on: fadd's cgroup nears its limit. No second stop
    // before the monitor can show what the first one freed.
    h.running.pop_back();
    h.memory.cgroup_usage = 9 * kGiB + 8 * kGiB / 10;
    CHECK(s.decide(61, h.memory, h.queue, h.running).decisions.empty());
    // Still critical after the monitor has had its moment: the next newest goes.
    plan = s.decide(62.5, h.memory, h.queue, h.running);
    REQUIRE(plan.decisions.size() == 1);
    CHECK(plan.decisions[0].kind == Decision::Kind::requeue);
    CHECK(plan.decisions[0].unit == 2);
    // The oldest is never stopped for it.
    h.running.pop_back();
    for (double now : {65.0, 68.0}) CHECK(s.decide(now, h.memory, h.queue, h.running).decisions.size() <= 1);
    for (const auto& d : s.decide(71, h.memory, h.queue, h.running).decisions) CHECK(d.kind != Decision::Kind::requeue);
  }
  SECTION("less than half the reserve available on the machine is critical too") {
    h.memory.cgroup_limit.reset();
    h.memory.available = kGiB / 3;
    auto plan = s.decide(60, h.memory, h.queue, h.running);
    REQUIRE(plan.decisions.size() == 1);
    CHECK(plan.decisions[0].kind == Decision::Kind::requeue);
    CHECK(plan.decisions[0].unit == 3);
  }
}

TEST_CASE("units' hard limit: the budget, plus half the reserve, never past the memory less half the reserve") {
  SchedulerConfig c;
  MemorySnapshot m;
  m.total = 64 * kGiB;
  c.reserve = Reserve{0, 10};  // 6.4 GiB of 64
  auto auto_budget = units_memory_limit(c, m);
  CHECK(auto_budget.high == 64 * kGiB - 64 * kGiB / 10);
  CHECK(auto_budget.max == auto_budget.high + c.reserve.resolve(64 * kGiB) / 2);
  c.budget = 8 * kGiB;
  auto set = units_memory_limit(c, m);
  CHECK(set.high == 8 * kGiB);
  CHECK(set.max == 8 * kGiB + 64 * kGiB / 20);
  c.budget = 100 * kGiB;  // more than the machine: capped
  CHECK(units_memory_limit(c, m).max == 64 * kGiB - 64 * kGiB / 20);
  // Inside a 12 GiB cgroup (a WSL-sized VM), the cgroup is the memory.
  c.budget.reset();
  m.cgroup_limit = 12 * kGiB;
  auto vm = units_memory_limit(c, m);
  CHECK(vm.high == 12 * kGiB - 12 * kGiB / 10);
  CHECK(vm.max == 12 * kGiB - 12 * kGiB / 20);
  c.reserve = Reserve{0, 0};
  c.budget = 512ull << 20;
  CHECK(units_memory_limit(c, m).max == 512ull << 20);
}

}  // namespace
}  // namespace fad
