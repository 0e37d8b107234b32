// RFC 3339 <-> epoch seconds; see time_text.h. Parsed by hand: strptime is
// locale-dependent and too lenient (it accepts a trailing suffix).
#include "common/time_text.h"

#include <cmath>
#include <cstdio>
#include <ctime>

namespace fad {

namespace {
bool digits(std::string_view s, std::size_t at, std::size_t n, int& out) {
  out = 0;
  for (std::size_t i = at; i < at + n; ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    out = out * 10 + (s[i] - '0');
  }
  return true;
}
}  // namespace

std::optional<double> parse_rfc3339(std::string_view s) {
  // 0123456789012345678 9
  // 2026-11-23T09:12:16 Z
  if (s.size() != 20 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' || s[19] != 'Z')
    return std::nullopt;
  int year, month, day, hour, minute, second;
  if (!digits(s, 0, 4, year) || !digits(s, 5, 2, month) || !digits(s, 8, 2, day) || !digits(s, 11, 2, hour) ||
      !digits(s, 14, 2, minute) || !digits(s, 17, 2, second))
    return std::nullopt;
  if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 60) return std::nullopt;
  std::tm tm{};
  tm.tm_year = year - 1900;
  tm.tm_mon = month - 1;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = minute;
  tm.tm_sec = second;
  return static_cast<double>(timegm(&tm));
}

std::string format_rfc3339(double epoch_s) {
  if (!std::isfinite(epoch_s)) epoch_s = 0;
  std::time_t t = static_cast<std::time_t>(std::floor(epoch_s));
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace fad
