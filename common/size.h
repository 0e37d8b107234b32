// Byte sizes as users write them ("512M", "1.5G", "4GiB") and as fad prints them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.h"

namespace fad {

/// Parses a size: a plain number is bytes; suffixes K, M, G, T (optionally
/// followed by "i", "B" or "iB", any case) are powers of 1024. Fractions are
/// allowed with a suffix ("1.5G"). Errors name the offending text.
Result<std::uint64_t> parse_size(std::string_view text);

/// The smallest memory budget or compile estimate fad takes (1 MiB): no
/// compile fits in less, so a smaller one is a number written without its
/// unit ("12" for "12G").
inline constexpr std::uint64_t kMinMemorySize = 1ull << 20;

/// "" when `bytes` (parsed from `written`) is at least kMinMemorySize, else
/// why not, e.g. (`what` "budget") "12 bytes is less than 1M, the smallest
/// budget: give a unit, such as \"12G\"" (the hint only for a bare number).
std::string memory_size_problem(std::uint64_t bytes, std::string_view written, std::string_view what);

/// Formats bytes for humans with one decimal: "512 B", "3.0 KiB", "4.0 GiB".
std::string format_size(std::uint64_t bytes);

}  // namespace fad
