// The one-line, ninja-style progress of a build, its ETA, and what a finished
// build prints: pure functions of status JSON, terminal width and time, so
// `fad submit --wait` and `fad watch` are tested on canned JSON; the loop
// around them (follow.cc) only polls, sleeps and writes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "common/protocol.h"

namespace fad::client {

/// Seconds until the build is likely done, from its `unit_list`: each unit's
/// `predicted_duration_s` where present, else the mean duration of the
/// build's finished units of its kind; running units count what is left of
/// theirs (at least a tenth: one that overran is nearly, not already, done),
/// queued units share the current parallelism, and the link step runs
/// after the compiles. nullopt while nothing tells how long a unit takes.
std::optional<double> estimate_eta(const json& build);

/// "35s", "41m", "1h 05m": coarse, as an ETA should be; minutes round up.
std::string format_eta(double seconds);

/// True for a queued unit's wait reason that says it waits for memory.
bool waits_for_memory(const std::string& wait_reason);

/// The progress line of the first build in a `status ID` result, e.g.
/// "[31/73] 3 running, 9.8/12.0 GiB, 2 waiting for memory, ETA 41m: fwd_a fwd_b".
/// With `width` > 0 (a terminal) the running units' names follow as far as
/// they fit and the line is cut to `width` columns; with 0 (a pipe) names are
/// left out. `now` (epoch seconds) gives the build's elapsed time.
std::string render_progress_line(const json& status, std::size_t width, double now);

/// What changed enough for another line in a pipe: state and finished/running counts.
std::string progress_line_key(const json& status);

/// The first failed unit of a build (earliest to finish), or null.
json first_failed_unit(const json& build);

/// The part of a unit's log (or of its tail) that its last attempt wrote:
/// from the last line fadd began an attempt with ("$ " and the command), or
/// all of it when there is none. A retried unit's log holds every attempt,
/// and an earlier one's error is not why the build failed now.
std::string_view last_attempt(std::string_view log);

/// The lines a failed build prints: which unit failed with which exit code,
/// the tail of its output (`log_tail`, already cut to the last lines), and the
/// exact `fad logs ID UNIT` command. Without a failed unit, the build's error.
std::string render_failure(const json& build, const std::string& log_tail);

/// What `fad launch` and `fad run` tell the terminal about a compile that
/// waits: "waiting for memory: needs 6.2 GiB, 3.1 GiB free; fad status 12".
std::string wait_note(const std::string& wait_reason, std::int64_t build_id);

/// For `fad run`: the note when its build has compiles queued and none
/// running (it is held up, e.g. behind older builds), from the oldest queued
/// unit's wait reason; nullopt while a compile runs or none waits.
std::optional<std::string> stall_note(const json& build);

/// The line `fad run` ends with: "fad run: build 12 succeeded: 24 compiles in
/// 3m 05s, peak 9.8 GiB, 2 reruns" (or that no compile went through fad).
std::string render_run_summary(const json& build);

}  // namespace fad::client
