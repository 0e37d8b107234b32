// RFC 3339 times as fad records them, to and from epoch seconds.
#include <catch2/catch.hpp>

#include "common/time_text.h"

using fad::format_rfc3339;
using fad::parse_rfc3339;

TEST_CASE("RFC 3339 UTC round-trips through epoch seconds") {
  CHECK(parse_rfc3339("1970-01-01T00:00:00Z") == std::optional<double>(0));
  CHECK(parse_rfc3339("2026-11-23T09:12:16Z") == std::optional<double>(1795425136));
  CHECK(format_rfc3339(1795425136) == "2026-11-23T09:12:16Z");
  CHECK(format_rfc3339(1795425136.9) == "2026-11-23T09:12:16Z");  // to the second, rounded down
  CHECK(parse_rfc3339(format_rfc3339(1700000000)) == std::optional<double>(1700000000));
}

TEST_CASE("anything but fad's own form is refused") {
  for (const char* bad :
       {"", "2026-11-23", "2026-11-23T09:12:16", "2026-11-23T09:12:16+01:00", "2026-11-23T09:12:16Zjunk",
        "2026-13-23T09:12:16Z", "2026-11-23T25:12:16Z", "2026-11-23 09:12:16Z", "20a6-11-23T09:12:16Z"}) {
    INFO(bad);
    CHECK_FALSE(parse_rfc3339(bad));
  }
}
