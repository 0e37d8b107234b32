// Tests for common/size: every accepted spelling, every rejection, formatting.
#include <catch2/catch.hpp>

#include "common/size.h"

using fad::format_size;
using fad::parse_size;

namespace {
constexpr std::uint64_t kKiB = 1024, kMiB = kKiB * 1024, kGiB = kMiB * 1024, kTiB = kGiB * 1024;
}

TEST_CASE("parse_size: plain numbers are bytes", "[size]") {
  CHECK(*parse_size("1024") == 1024);
  CHECK(*parse_size("0") == 0);
  CHECK(*parse_size("18446744073709551615") == 18446744073709551615ull);
  CHECK(*parse_size("512B") == 512);
}

TEST_CASE("parse_size: suffixes are powers of 1024 in any case", "[size]") {
  CHECK(*parse_size("512M") == 512 * kMiB);
  CHECK(*parse_size("4G") == 4 * kGiB);
  CHECK(*parse_size("4GiB") == 4 * kGiB);
  CHECK(*parse_size("4gb") == 4 * kGiB);
  CHECK(*parse_size("4Gi") == 4 * kGiB);
  CHECK(*parse_size("8k") == 8 * kKiB);
  CHECK(*parse_size("2T") == 2 * kTiB);
  CHECK(*parse_size(" 16G ") == 16 * kGiB);
  CHECK(*parse_size("1.5 GiB") == 3 * kGiB / 2);  // format_size output reads back
  CHECK(*parse_size("512 B") == 512);
}

TEST_CASE("parse_size: fractions need a suffix", "[size]") {
  CHECK(*parse_size("1.5G") == 3 * kGiB / 2);
  CHECK(*parse_size("0.5K") == 512);
  CHECK(*parse_size("1.25T") == 5 * kTiB / 4);
  auto r = parse_size("1.5");
  REQUIRE_FALSE(r.ok());
  CHECK(r.error() == "invalid size '1.5': expected a number with an optional K, M, G or T suffix (e.g. 512M, 1.5G)");
}

TEST_CASE("parse_size: rejects what is not a size, quoting it", "[size]") {
  for (const char* bad : {"", "-1", "4X", "G", ".5G", "1.G", "4GG", "4 G B", "4Gx", "1e9", "0x10"}) {
    INFO(bad);
    auto r = parse_size(bad);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error() == "invalid size '" + std::string(bad) +
                           "': expected a number with an optional K, M, G or T suffix (e.g. 512M, 1.5G)");
  }
}

TEST_CASE("parse_size: overflow is an error, not a wrap", "[size]") {
  for (const char* big : {"18446744073709551616", "99999999999999999999", "16777216T", "17179869184G"}) {
    INFO(big);
    auto r = parse_size(big);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error() == "invalid size '" + std::string(big) + "': too large");
  }
  CHECK(*parse_size("16777215T") == 16777215 * kTiB);
}

TEST_CASE("format_size: one decimal with IEC units", "[size]") {
  CHECK(format_size(0) == "0 B");
  CHECK(format_size(512) == "512 B");
  CHECK(format_size(1023) == "1023 B");
  CHECK(format_size(1024) == "1.0 KiB");
  CHECK(format_size(1536) == "1.5 KiB");
  CHECK(format_size(512 * kMiB) == "512.0 MiB");
  CHECK(format_size(4 * kGiB) == "4.0 GiB");
  CHECK(format_size(3 * kTiB / 2) == "1.5 TiB");
  CHECK(format_size(kMiB - 1) == "1.0 MiB");  // not "1024.0 KiB"
}

TEST_CASE("format_size and parse_size agree on round numbers", "[size]") {
  for (const char* text : {"4G", "1.5T", "512M"}) {
    INFO(text);
    CHECK(*parse_size(text) == *parse_size(format_size(*parse_size(text))));
  }
}
