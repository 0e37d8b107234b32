// Ages as users write them for retention ("30d", "12h", "2w") and as fad prints them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.h"

namespace fad {

/// Parses an age: a whole number followed by s, m, h, d or w ("90m", "30d").
/// Returns seconds. Errors quote the text and give an example.
Result<std::int64_t> parse_age(std::string_view text);

/// Formats seconds as the largest unit that divides them: "30d", "36h", "90s".
std::string format_age(std::int64_t seconds);

}  // namespace fad
