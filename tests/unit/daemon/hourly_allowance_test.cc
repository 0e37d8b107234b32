#include "daemon/hourly_allowance.h"

#include <catch2/catch.hpp>

namespace fad {

TEST_CASE("hourly allowance: a user records a burst of per_hour compiles, then one per refill", "[hourly_allowance]") {
  HourlyAllowance a(3);
  for (int i = 0; i < 3; ++i) CHECK(a.take(1000, 10));
  CHECK(a.wait_s(1000, 10) == Approx(1200));
  CHECK_FALSE(a.take(1000, 10));
  CHECK_FALSE(a.take(1000, 1209));
  CHECK(a.wait_s(1000, 1100) == Approx(110));
  CHECK(a.take(1000, 1210));
  CHECK_FALSE(a.take(1000, 1211));
  // Others are not held back.
  CHECK(a.wait_s(1001, 10) == 0);
  CHECK(a.take(1001, 10));
  // A quiet hour refills the bucket, no more than full.
  CHECK(a.take(1000, 1210 + 7200));
  CHECK(a.take(1000, 1210 + 7200));
  CHECK(a.take(1000, 1210 + 7200));
  CHECK_FALSE(a.take(1000, 1210 + 7200));
}

TEST_CASE("hourly allowance: 0 is no limit, and full buckets are forgotten", "[hourly_allowance]") {
  HourlyAllowance none(0);
  for (int i = 0; i < 100000; ++i) REQUIRE(none.take(1000, 0));
  CHECK(none.wait_s(1000, 0) == 0);
  CHECK(none.tracked() == 0);

  HourlyAllowance a(10);
  for (uid_t uid = 0; uid < 300; ++uid) a.take(uid, 0);
  CHECK(a.tracked() == 300);  // none is full again within the hour: all kept
  a.take(5000, 3600);         // an hour on, all the others are full again
  CHECK(a.tracked() == 1);
}

}  // namespace fad
