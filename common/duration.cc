// Ages for retention; see duration.h. Whole units only: a retention of "1.5d"
// is better written "36h", and integers keep the arithmetic exact.
#include "common/duration.h"

#include <charconv>
#include <limits>

#include "common/text.h"

namespace fad {
namespace {

struct Unit {
  char suffix;
  std::int64_t seconds;
};
constexpr Unit kUnits[] = {{'w', 7 * 86400}, {'d', 86400}, {'h', 3600}, {'m', 60}, {'s', 1}};

}  // namespace

Result<std::int64_t> parse_age(std::string_view text) {
  auto bad = [&] {
    return make_error("invalid age '" + printable(text) + "': use a whole number with s, m, h, d or w (e.g. 30d, 12h)");
  };
  if (text.size() < 2) return bad();
  const char suffix = text.back();
  const std::string_view digits = text.substr(0, text.size() - 1);
  std::int64_t n = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
  if (ec != std::errc() || end != digits.data() + digits.size() || n < 0) return bad();
  for (const auto& u : kUnits) {
    if (u.suffix != suffix) continue;
    if (n > std::numeric_limits<std::int64_t>::max() / u.seconds) return bad();
    return n * u.seconds;
  }
  return bad();
}

std::string format_age(std::int64_t seconds) {
  for (const auto& u : kUnits)
    if (seconds != 0 && seconds % u.seconds == 0) return std::to_string(seconds / u.seconds) + u.suffix;
  return std::to_string(seconds) + "s";
}

}  // namespace fad
