// When fad colours its output, and how it measures coloured text.
#include <catch2/catch.hpp>

#include <map>

#include "client/style.h"

using namespace fad::client;

namespace {
fad::EnvLookup env_of(std::map<std::string, std::string> vars) {
  return [vars](std::string_view name) -> std::optional<std::string> {
    auto it = vars.find(std::string(name));
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}
}  // namespace

TEST_CASE("colour: auto means a terminal, NO_COLOR and TERM=dumb turn it off, always and never win") {
  CHECK(use_color("auto", true, env_of({{"TERM", "xterm-256color"}})));
  CHECK_FALSE(use_color("auto", false, env_of({})));
  CHECK_FALSE(use_color("auto", true, env_of({{"NO_COLOR", "1"}})));
  CHECK(use_color("auto", true, env_of({{"NO_COLOR", ""}})));  // set but empty: no-color.org says ignore it
  CHECK_FALSE(use_color("auto", true, env_of({{"TERM", "dumb"}})));
  CHECK(use_color("always", false, env_of({{"NO_COLOR", "1"}})));
  CHECK_FALSE(use_color("never", true, env_of({})));
}

TEST_CASE("colour: states and visible widths") {
  CHECK(color_state("failed", true) == "\033[31mfailed\033[0m");
  CHECK(color_state("failed", false) == "failed");
  CHECK(color_state("queued", true) == "queued");  // no colour for the ordinary state
  // Held (by fad, its user or a cluster's queue): yellow, like a paused one.
  CHECK(color_state("pending", true) == "\033[33mpending\033[0m");
  CHECK(color_state("paused", true) == "\033[33mpaused\033[0m");
  CHECK(visible_width(color_state("succeeded", true)) == 9);
  CHECK(visible_width("plain") == 5);
  CHECK(visible_width("\033[1mA\033[0m\033[K") == 1);
  // Characters, not bytes: a table stays aligned with a name in any script.
  CHECK(visible_width("caf\xc3\xa9") == 4);                // café
  CHECK(visible_width("\xe6\xbc\xa2\xe5\xad\x97") == 4);   // 漢字: two wide characters
  CHECK(visible_width("e\xcc\x81") == 1);                  // e and a combining acute
  CHECK(visible_width("\xf0\x9f\x9a\x80") == 2);           // an emoji
  CHECK(visible_width(std::string("a\xe6\xbc", 3)) == 2);  // cut off: a column per stray byte
}

TEST_CASE("fit_columns: as it is when it fits, else cut at a character with an ellipsis") {
  CHECK(fit_columns("nightly", 40) == "nightly");
  CHECK(fit_columns(std::string(40, 'n'), 40) == std::string(40, 'n'));
  const std::string cut = fit_columns(std::string(256, 'n'), 40);
  CHECK(cut == std::string(39, 'n') + "\xe2\x80\xa6");
  CHECK(visible_width(cut) == 40);
  // Wide characters are not split, and the cut still fits.
  const std::string wide = fit_columns("\xe6\xbc\xa2\xe5\xad\x97\xe6\xbc\xa2", 4);  // 漢字漢: 6 columns
  CHECK(wide == "\xe6\xbc\xa2\xe2\x80\xa6");
  CHECK(visible_width(wide) <= 4);
}
