// A build's report data (the "report" answer of fadd) turned into what the
// pictures draw: per unit, its spans (waiting, running, suspended, paused) and
// memory samples on one time axis; the machine's memory lines; and the stack
// of fad's units sampled on a common grid. Pure, shared by the HTML report and
// the trace-event export so the two always agree.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/protocol.h"

namespace fad::client {

/// One stretch of a unit's life, in seconds since the build was created.
struct Span {
  double start = 0;
  double end = 0;
  /// "wait" (queued), "run" (an attempt), "suspended" (SIGSTOP under memory
  /// pressure), "paused" (fad pause)
  std::string kind;
  /// run: succeeded, failed, cancelled, requeued, oom, shutdown, running;
  /// wait: "queued" or "cancelled" (never started); others: the reason, if any
  std::string outcome;
  int attempt = 0;  ///< run: which attempt
  int threads = 0;  ///< run
  std::uint64_t estimate_bytes = 0;
  std::uint64_t peak_bytes = 0;
};

/// Memory of one attempt: (seconds since build creation, bytes), held until
/// the next point; zero after `end`.
struct Samples {
  std::vector<std::pair<double, std::uint64_t>> points;
  double end = 0;
  std::uint64_t at(double t) const;  ///< bytes at `t` (0 outside the attempt)
};

struct UnitTimeline {
  std::string name, kind, state;
  int attempts = 0;
  int threads = 0;
  std::uint64_t estimate_bytes = 0;
  std::string estimate_source;
  std::uint64_t peak_bytes = 0;
  double run_s = 0;  ///< summed over attempts, less the time it was suspended or paused
  std::optional<int> exit_code;
  std::vector<Span> spans;
  std::vector<Samples> samples;
  double first_start = -1;  ///< first attempt's start; -1 when it never ran
};

struct ReportModel {
  std::int64_t id = 0;
  std::string name, state, created_at, finished_at;
  std::string pruned_at;  ///< when retention deleted its outputs, logs and memory curves; empty before
  std::vector<std::string> archs;
  std::uint64_t peak_bytes = 0;
  double created = 0;               ///< epoch seconds of t = 0
  double duration = 0;              ///< seconds shown (to the end, or to now while it runs)
  std::vector<UnitTimeline> units;  ///< in order of first start, never-started last
  std::int64_t units_left_out = 0;  ///< units fadd left out to keep the answer bounded
  /// Machine lines: (seconds since creation, bytes).
  std::vector<std::pair<double, std::uint64_t>> available, capacity, total;
  std::optional<std::uint64_t> budget;
  /// The stack of fad's units on `grid` times: stack[i][k] is unit i's bytes at grid[k].
  std::vector<double> grid;
  std::vector<std::vector<std::uint64_t>> stack;
};

/// Builds the model from a report answer; `grid_points` is the resolution of
/// the stacked memory picture. Missing or mistyped fields are skipped.
ReportModel build_report_model(const json& report, std::size_t grid_points = 400);

}  // namespace fad::client
