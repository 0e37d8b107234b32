// Human-readable views of fadd's JSON answers: tables for status and history,
// one-line progress and outcome for `submit --wait`. Pure: JSON in, text out.
// Missing, null or mistyped fields render as "-" (or 0 for counts), never throw,
// so a newer or older daemon still gets a readable view.
#pragma once

#include <string>
#include <vector>

#include "common/protocol.h"

namespace fad::client {

/// Left-aligned columns separated by two spaces, header first; no trailing spaces.
std::string format_table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows);

/// "42s", "3m 05s", "1h 02m"; negative or non-finite input renders as "-".
std::string format_duration(double seconds);

/// `fad status`: the daemon and its memory, then one row per build.
std::string render_status(const json& status);

/// `fad status ID`: the daemon, the build's summary, then one row per unit with
/// name, state, threads, estimate, peak, attempts and wait reason.
std::string render_build_status(const json& status);

/// `fad history`: one row per finished build with duration and peak.
std::string render_history(const json& history);

/// `fad prune`: one line per build whose outputs went (or would go), then the total.
std::string render_prune(const json& prune);

/// One progress line for a build object, e.g. "build 7: 3/49 units done, 2 running, peak 5.1 GiB".
std::string render_progress(const json& build);

/// What changed enough to be worth another progress line: state and unit counts.
std::string progress_key(const json& build);

/// The final lines for a finished build: outcome, and the artifact once it succeeded.
std::string render_outcome(const json& build);

}  // namespace fad::client
