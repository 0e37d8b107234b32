#include "daemon/request_budget.h"

#include <catch2/catch.hpp>

using namespace fad;
using namespace std::chrono_literals;
using Clock = RequestBudget::Clock;

namespace {
const Clock::time_point t0 = Clock::time_point(100s);
const RequestBudget::Limits quarter{0.25, RequestBudget::Seconds(1.0)};
}  // namespace

TEST_CASE("a user within the burst is never made to wait", "[request_budget]") {
  RequestBudget budget(quarter);
  CHECK(budget.wait(1000, t0) == 0ms);
  budget.charge(1000, 600ms, t0);
  CHECK(budget.wait(1000, t0) == 0ms);
  budget.charge(1000, 400ms, t0);
  CHECK(budget.wait(1000, t0) == 0ms);  // exactly empty is not in debt
}

TEST_CASE("a user in debt waits until the debt is refilled at their share", "[request_budget]") {
  RequestBudget budget(quarter);
  budget.charge(1000, 1500ms, t0);  // 0.5 s in debt, refilled at 0.25 s/s
  CHECK(budget.wait(1000, t0) == 2000ms);
  CHECK(budget.wait(1000, t0 + 1500ms) == 500ms);
  CHECK(budget.wait(1000, t0 + 2s) == 0ms);
}

TEST_CASE("one user's debt does not slow another user", "[request_budget]") {
  RequestBudget budget(quarter);
  budget.charge(1000, 5s, t0);
  CHECK(budget.wait(1000, t0) > 0ms);
  CHECK(budget.wait(1001, t0) == 0ms);
}

TEST_CASE("a steady flood gets the user's share of the loop and no more", "[request_budget]") {
  // Requests of 50 ms each, sent the moment the last wait ends: over a
  // minute the user gets about a quarter of it plus the first burst.
  RequestBudget budget(quarter);
  auto now = t0;
  double used = 0;
  while (now < t0 + 60s) {
    now += budget.wait(1000, now);
    budget.charge(1000, 50ms, now);
    now += 50ms;
    used += 0.05;
  }
  CHECK(used == Approx(0.25 * 60 + 1.0).margin(0.3));
}

TEST_CASE("an idle spell refills the bucket up to the burst, not beyond", "[request_budget]") {
  RequestBudget budget(quarter);
  budget.charge(1000, 100ms, t0);
  // An hour idle is still only one second of credit.
  budget.charge(1000, 1200ms, t0 + 3600s);
  CHECK(budget.wait(1000, t0 + 3600s) == 800ms);
}

TEST_CASE("the rounding never lets a wait end before the debt is paid", "[request_budget]") {
  RequestBudget budget(quarter);
  budget.charge(1000, 1001ms + 1us, t0);
  const auto w = budget.wait(1000, t0);
  CHECK(budget.wait(1000, t0 + w) == 0ms);
  CHECK(budget.wait(1000, t0 + w - 1ms) > 0ms);
}

TEST_CASE("full buckets are forgotten, so many users cannot grow the budget, and debts are kept", "[request_budget]") {
  RequestBudget budget(quarter);
  budget.charge(7, 5s, t0);  // 4 s in debt: 16 s to pay back
  // 300 users, 10 ms each, 10 ms apart: each bucket is full again 40 ms later.
  for (uid_t u = 0; u < 300; ++u) budget.charge(20000 + u, 10ms, t0 + u * 10ms);
  CHECK(budget.tracked() < 60);  // swept when it passed 256: the debtor and the last few dozen
  CHECK(budget.wait(7, t0 + 3s) == 13000ms);
}

TEST_CASE("a launcher's requests draw on their own share and every other request, a disguised one too, on the other",
          "[request_budget]") {
  for (const char* type : {"launch", "launch_poll", "launch_started", "launch_finished"}) {
    INFO(type);
    CHECK(runs_at_once(std::string(R"({"v":1,"type":")") + type + R"(","body":{"unit_id":7}})"));
  }
  CHECK(runs_at_once(R"({"body":{"unit_id":7},"type":"launch_poll","v":1})"));  // any key order
  CHECK_FALSE(runs_at_once(R"({"v":1,"type":"report","body":{"id":1}})"));
  CHECK_FALSE(runs_at_once(R"({"v":1,"type":"status","body":{}})"));
  // "launch_poll" as a value inside another request's body is no type.
  CHECK_FALSE(runs_at_once(R"({"v":1,"type":"report","body":{"id":1,"x":{"type":"launch_poll"}}})"));
  CHECK_FALSE(runs_at_once(R"({"v":1,"type":"report","body":{"note":"\"type\":\"launch_poll\""}})"));
  CHECK_FALSE(runs_at_once("not json"));
  // Told apart without parsing every request: a type spelled with escapes is another request.
  CHECK_FALSE(runs_at_once(R"({"v":1,"type":"\u006caunch_poll","body":{"unit_id":7}})"));
  CHECK_FALSE(runs_at_once(std::string(R"({"v":1,"type":"launch","body":{"cwd":")") + std::string(70000, 'a') +
                           R"("}})"));  // too long to be a launcher's
}
