// Byte sizes: parsing what users write in flags and the config file, and
// formatting what fad prints. All suffixes are powers of 1024, as memory is.
#include "common/size.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <limits>

#include "common/text.h"

namespace fad {
namespace {

Error size_error(std::string_view text) {
  return make_error("invalid size '" + printable(text) +
                    "': expected a number with an optional K, M, G or T suffix (e.g. 512M, 1.5G)");
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  }
  return true;
}

/// The multiplier of a suffix ("", "B", "K", "KiB", "kb", ...); 0 if not a suffix.
std::uint64_t suffix_multiplier(std::string_view suffix) {
  if (suffix.empty() || iequals(suffix, "B")) return 1;
  static constexpr char kLetters[] = {'K', 'M', 'G', 'T'};
  std::uint64_t mult = 1;
  for (char letter : kLetters) {
    mult *= 1024;
    if (std::toupper(static_cast<unsigned char>(suffix[0])) != letter) continue;
    std::string_view rest = suffix.substr(1);
    if (rest.empty() || iequals(rest, "i") || iequals(rest, "B") || iequals(rest, "iB")) return mult;
    return 0;
  }
  return 0;
}

}  // namespace

Result<std::uint64_t> parse_size(std::string_view text) {
  std::string_view s = trim(text);
  std::size_t i = 0;
  std::uint64_t whole = 0;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) {
    unsigned digit = static_cast<unsigned>(s[i] - '0');
    if (whole > (std::numeric_limits<std::uint64_t>::max() - digit) / 10) {
      return make_error("invalid size '" + printable(text) + "': too large");
    }
    whole = whole * 10 + digit;
    ++i;
  }
  if (i == 0) return size_error(text);  // no leading digit: "", "-1", ".5G", "G"

  // The fraction, as a long double: it only contributes less than one unit of
  // the suffix, so 64 bits of mantissa are plenty.
  bool has_fraction = false;
  long double fraction = 0;
  if (i < s.size() && s[i] == '.') {
    ++i;
    long double scale = 0.1L;
    std::size_t start = i;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) {
      fraction += scale * (s[i] - '0');
      scale /= 10;
      ++i;
    }
    if (i == start) return size_error(text);  // "1.G"
    has_fraction = true;
  }

  // "1.5 GiB", as format_size prints it, reads back.
  while (i < s.size() && s[i] == ' ') ++i;
  std::string_view suffix = s.substr(i);
  std::uint64_t mult = suffix_multiplier(suffix);
  if (mult == 0) return size_error(text);
  // A fraction of a byte means nothing; "1.5" is most likely a forgotten suffix.
  if (has_fraction && mult == 1) return size_error(text);

  std::uint64_t bytes = 0;
  if (__builtin_mul_overflow(whole, mult, &bytes)) {
    return make_error("invalid size '" + printable(text) + "': too large");
  }
  auto extra = static_cast<std::uint64_t>(fraction * static_cast<long double>(mult));
  if (__builtin_add_overflow(bytes, extra, &bytes)) {
    return make_error("invalid size '" + printable(text) + "': too large");
  }
  return bytes;
}

std::string format_size(std::uint64_t bytes) {
  if (bytes < 1024) return std::to_string(bytes) + " B";
  static constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  long double value = static_cast<long double>(bytes) / 1024;
  std::size_t unit = 0;
  // 1023.96 would print as "1024.0 KiB"; move up a unit instead.
  while (value >= 1023.95L && unit + 1 < std::size(kUnits)) {
    value /= 1024;
    ++unit;
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1Lf %s", value, kUnits[unit]);
  return buf;
}

std::string memory_size_problem(std::uint64_t bytes, std::string_view written, std::string_view what) {
  if (bytes >= kMinMemorySize) return "";
  if (bytes == 0) return "must be at least 1M";
  const bool bare = !written.empty() &&
                    std::all_of(written.begin(), written.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
  const std::string smallest = " is less than 1M, the smallest " + std::string(what);
  if (!bare) return std::string(written) + smallest;
  const std::string n = std::to_string(bytes);
  // The unit meant: "12" is 12G; "1048575" is no petabyte, but about 1G in K.
  const char* meant = bytes <= 65536 ? "G" : "K";
  return n + (bytes == 1 ? " byte" : " bytes") + smallest + ": give a unit, such as \"" + n + meant + "\"";
}

}  // namespace fad
