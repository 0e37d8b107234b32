// Terminal colour; see style.h.
#include "client/style.h"

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
  if (state == "paused" || state == "suspended") return wrap(state, "33");
  if (state == "cancelled") return wrap(state, "35");
  return state;
}

std::string bold(const std::string& text, bool color) { return color ? wrap(text, "1") : text; }

std::size_t visible_width(std::string_view text) {
  std::size_t width = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\033' && i + 1 < text.size() && text[i + 1] == '[') {
      // CSI: parameters and intermediates up to a final byte in @..~
      i += 2;
      while (i < text.size() && !(text[i] >= '@' && text[i] <= '~')) ++i;
      continue;
    }
    ++width;
  }
  return width;
}

}  // namespace fad::client
