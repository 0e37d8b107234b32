// One UTF-8 character at a time: the decoder behind valid_utf8 (what fadd
// accepts) and the client's column count (what a terminal shows).
#pragma once

#include <cstddef>
#include <string_view>

namespace fad {

struct Utf8Char {
  char32_t code = 0;         ///< the code point, when `complete`
  std::size_t length = 1;    ///< bytes taken: the lead and the continuation bytes present, at least 1
  bool complete = false;     ///< a lead byte with all its continuation bytes
  bool well_formed = false;  ///< complete, shortest form, no surrogate, at most U+10FFFF
};

/// The character starting at `s[i]` (`i < s.size()`). A stray continuation
/// byte, or a byte no UTF-8 character starts with, is one incomplete byte; a
/// cut-off sequence takes what continuation bytes there are, so a caller
/// stepping by `length` never skips a lead byte.
inline Utf8Char utf8_char_at(std::string_view s, std::size_t i) {
  const auto b = static_cast<unsigned char>(s[i]);
  const std::size_t n = b < 0x80 ? 1 : (b >> 5) == 0x6 ? 2 : (b >> 4) == 0xE ? 3 : (b >> 3) == 0x1E ? 4 : 0;
  Utf8Char out;
  if (n == 0) return out;
  char32_t c = n == 1 ? b : b & (0x7F >> n);
  std::size_t k = 1;
  for (; k < n && i + k < s.size() && (static_cast<unsigned char>(s[i + k]) & 0xC0) == 0x80; ++k)
    c = (c << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
  out.length = k;
  out.complete = k == n;
  if (!out.complete) return out;
  out.code = c;
  static constexpr char32_t kLeast[] = {0, 0, 0x80, 0x800, 0x10000};
  out.well_formed = c >= kLeast[n] && c <= 0x10FFFF && !(c >= 0xD800 && c <= 0xDFFF);
  return out;
}

}  // namespace fad
