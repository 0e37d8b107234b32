// Ages for retention: parsing and printing.
#include <catch2/catch.hpp>

#include "common/duration.h"

TEST_CASE("parse_age: whole numbers with s, m, h, d, w", "[duration]") {
  CHECK(*fad::parse_age("0s") == 0);
  CHECK(*fad::parse_age("90s") == 90);
  CHECK(*fad::parse_age("45m") == 45 * 60);
  CHECK(*fad::parse_age("12h") == 12 * 3600);
  CHECK(*fad::parse_age("30d") == 30 * 86400);
  CHECK(*fad::parse_age("2w") == 14 * 86400);
  for (const char* bad : {"", "d", "30", "30x", "-1d", "1.5d", " 3d", "3d ", "30D", "99999999999999999999w"}) {
    INFO(bad);
    auto r = fad::parse_age(bad);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error() ==
          "invalid age '" + std::string(bad) + "': use a whole number with s, m, h, d or w (e.g. 30d, 12h)");
  }
}

TEST_CASE("format_age: the largest unit that divides", "[duration]") {
  CHECK(fad::format_age(30 * 86400) == "30d");
  CHECK(fad::format_age(14 * 86400) == "2w");
  CHECK(fad::format_age(36 * 3600) == "36h");
  CHECK(fad::format_age(90) == "90s");
  CHECK(fad::format_age(0) == "0s");
}
