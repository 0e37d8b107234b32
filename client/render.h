// Human-readable views of fadd's JSON answers: tables for status and history,
// and the outcome of a finished build. Pure: JSON in, text out. Missing, null
// or mistyped fields render as "-" (or 0 for counts), never throw, so a newer
// or older daemon still gets a readable view. With `color`, states are coloured.
#pragma once

#include <string>
#include <vector>

#include "common/protocol.h"

namespace fad::client {

/// Left-aligned columns separated by two spaces, header first; no trailing
/// spaces. Widths count visible columns, so coloured cells align.
std::string format_table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows);

/// "42s", "3m 05s", "1h 02m"; negative or non-finite input renders as "-".
std::string format_duration(double seconds);

/// `fad status`: the daemon and its memory, then one row per build.
std::string render_status(const json& status, bool color = false);

/// `fad status ID`: the daemon, the build's summary with its ETA, then one row
/// per unit: state, threads, memory now, peak, estimate (and its source),
/// elapsed or run time, attempts and wait reason.
std::string render_build_status(const json& status, bool color = false);

/// `fad history`: one row per finished build with queue time, run time and peak.
std::string render_history(const json& history, bool color = false);

/// `fad prune`: one line per build whose outputs went (or would go), then the total.
std::string render_prune(const json& prune);

/// The final lines for a finished build: outcome, units, time, peak, and the
/// artifact once it succeeded.
std::string render_outcome(const json& build, bool color = false);

}  // namespace fad::client
