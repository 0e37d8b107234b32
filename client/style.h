// Colour on a terminal: build and unit states in colour where a person reads
// them, plain text for pipes, NO_COLOR and --color=never. Pure.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "common/paths.h"

namespace fad::client {

/// Whether to colour output: `mode` is "always", "never" or "auto" (colour only
/// on a terminal whose TERM is not "dumb", and never when NO_COLOR is set to
/// anything non-empty, per no-color.org).
bool use_color(std::string_view mode, bool is_tty, const EnvLookup& env);

/// `state` wrapped in its colour (succeeded green, failed red, running cyan,
/// paused and suspended yellow, cancelled magenta), or unchanged when `color`
/// is false or the state has no colour.
std::string color_state(const std::string& state, bool color);

/// Bold text, or unchanged when `color` is false.
std::string bold(const std::string& text, bool color);

/// Columns `text` takes on a terminal: UTF-8 characters outside ANSI escape
/// sequences, East Asian wide ones two columns, combining marks none.
std::size_t visible_width(std::string_view text);

/// `text` (plain, no escape sequences) in at most `columns` terminal
/// columns: as it is when it fits, else cut at a character and ended with
/// "…". One user's 256-byte build name must not widen everyone's table.
std::string fit_columns(std::string_view text, std::size_t columns);

}  // namespace fad::client
