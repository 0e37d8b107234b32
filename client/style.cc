// Terminal colour; see style.h.
#include "client/style.h"

#include "common/utf8.h"

namespace fad::client {

bool use_color(std::string_view mode, bool is_tty, const EnvLookup& env) {
  if (mode == "always") return true;
  if (mode == "never") return false;
  if (auto no_color = env("NO_COLOR"); no_color && !no_color->empty()) return false;
  if (auto term = env("TERM"); term && *term == "dumb") return false;
  return is_tty;
}

namespace {
std::string wrap(const std::string& text, const char* sgr) {
  return std::string("\033[") + sgr + "m" + text + "\033[0m";
}
}  // namespace

std::string color_state(const std::string& state, bool color) {
  if (!color) return state;
  if (state == "succeeded") return wrap(state, "32");
  if (state == "failed") return wrap(state, "31");
  if (state == "running") return wrap(state, "36");
  if (state == "paused" || state == "suspended" || state == "pending") return wrap(state, "33");
  if (state == "cancelled") return wrap(state, "35");
  return state;
}

std::string bold(const std::string& text, bool color) { return color ? wrap(text, "1") : text; }

namespace {
/// Columns one code point takes: 0 for combining marks and zero-width
/// characters, 2 for East Asian wide and fullwidth ones and emoji, else 1.
/// The common ranges, not all of Unicode: a build name, not typesetting.
std::size_t columns_of(char32_t c) {
  if ((c >= 0x0300 && c <= 0x036F) || (c >= 0x200B && c <= 0x200F) || (c >= 0xFE00 && c <= 0xFE0F)) return 0;
  if ((c >= 0x1100 && c <= 0x115F) || (c >= 0x2E80 && c <= 0xA4CF) || (c >= 0xAC00 && c <= 0xD7A3) ||
      (c >= 0xF900 && c <= 0xFAFF) || (c >= 0xFE30 && c <= 0xFE4F) || (c >= 0xFF00 && c <= 0xFF60) ||
      (c >= 0xFFE0 && c <= 0xFFE6) || (c >= 0x1F300 && c <= 0x1F64F) || (c >= 0x1F680 && c <= 0x1F6FF) ||
      (c >= 0x1F900 && c <= 0x1F9FF) || (c >= 0x20000 && c <= 0x3FFFD))
    return 2;
  return 1;
}
}  // namespace

std::size_t visible_width(std::string_view text) {
  std::size_t width = 0;
  for (std::size_t i = 0; i < text.size();) {
    const auto byte = static_cast<unsigned char>(text[i]);
    if (byte == 0x1B && i + 1 < text.size() && text[i + 1] == '[') {
      // CSI: parameters and intermediates up to a final byte in @..~
      i += 2;
      while (i < text.size() && !(text[i] >= '@' && text[i] <= '~')) ++i;
      ++i;
      continue;
    }
    // A cut-off sequence or a stray byte takes one column, as terminals show it.
    const auto c = utf8_char_at(text, i);
    width += c.complete ? columns_of(c.code) : 1;
    i += c.length;
  }
  return width;
}

std::string fit_columns(std::string_view text, std::size_t columns) {
  if (visible_width(text) <= columns) return std::string(text);
  std::string out;
  std::size_t used = 0;
  for (std::size_t i = 0; i < text.size();) {
    const auto c = utf8_char_at(text, i);
    const std::size_t w = c.complete ? columns_of(c.code) : 1;
    if (used + w + 1 > columns) break;  // room for the "…"
    out.append(text.substr(i, c.length));
    used += w;
    i += c.length;
  }
  return out + "\u2026";
}

}  // namespace fad::client
