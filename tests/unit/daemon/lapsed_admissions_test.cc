#include "daemon/lapsed_admissions.h"

#include <catch2/catch.hpp>

namespace fad {

TEST_CASE("lapsed admissions: the first is forgiven, then holds double up to ten minutes", "[lapsed_admissions]") {
  LapsedAdmissions l;
  CHECK_FALSE(l.note(1000, 100));
  CHECK_FALSE(l.one_at_a_time(1000, 100));
  CHECK_FALSE(l.hold(1000, 100));

  auto h = l.note(1000, 200);
  REQUIRE(h);
  CHECK(h->count == 2);
  CHECK(h->seconds == 15);
  CHECK(l.hold(1000, 214.9));
  CHECK_FALSE(l.hold(1000, 215));
  CHECK(l.one_at_a_time(1000, 215));

  const double expected[] = {30, 60, 120, 240, 480, 600, 600};
  double now = 300;
  for (double seconds : expected) {
    h = l.note(1000, now);
    REQUIRE(h);
    CHECK(h->seconds == seconds);
    now += 100;
  }
  CHECK(h->count == 9);
  // Others are not held.
  CHECK_FALSE(l.hold(1001, now));
  CHECK_FALSE(l.one_at_a_time(1001, now));
}

TEST_CASE("lapsed admissions: lapses within the start timeout of each other are one", "[lapsed_admissions]") {
  LapsedAdmissions l;
  CHECK_FALSE(l.note(1000, 100));
  // A build paused just as four of its compiles were admitted.
  for (double t : {100.0, 101.0, 110.0, 114.9}) CHECK_FALSE(l.note(1000, t));
  CHECK_FALSE(l.one_at_a_time(1000, 115));
  const auto h = l.note(1000, 115);
  REQUIRE(h);
  CHECK(h->count == 2);
  // ... also while held: the hold does not grow with the burst.
  CHECK_FALSE(l.note(1000, 120));
  CHECK(l.hold(1000, 125)->count == 2);
}

TEST_CASE("lapsed admissions: an hour without a lapse, and the user is forgotten", "[lapsed_admissions]") {
  LapsedAdmissions l;
  l.note(1000, 100);
  REQUIRE(l.note(1000, 200));
  CHECK(l.one_at_a_time(1000, 200 + 3600));
  CHECK_FALSE(l.one_at_a_time(1000, 200 + 3601));
  // A lapse after that is a first one again, and forgiven.
  CHECK_FALSE(l.note(1000, 200 + 3601));
  CHECK_FALSE(l.one_at_a_time(1000, 200 + 3602));
  const auto h = l.note(1000, 200 + 3700);
  REQUIRE(h);
  CHECK(h->count == 2);
  CHECK(h->seconds == 15);
}

}  // namespace fad
