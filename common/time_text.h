// Times as fad writes them in records and JSON: RFC 3339 UTC to the second
// ("2026-11-23T09:12:16Z"), and the epoch seconds reports and progress lines
// compute with. Pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace fad {

/// Seconds since the epoch for "YYYY-MM-DDTHH:MM:SSZ"; nullopt for anything else.
std::optional<double> parse_rfc3339(std::string_view text);

/// "YYYY-MM-DDTHH:MM:SSZ" for `epoch_s` (rounded down to the second).
std::string format_rfc3339(double epoch_s);

}  // namespace fad
