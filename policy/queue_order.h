// Queue order within a build: longest predicted first (at the most threads a
// unit can have: what it cannot be made shorter than). A build's time is set
// by its tail, so the units predicted to run longest start first and short
// ones backfill around them (flash-attention's split-KV units once held a
// single-arch build for hours because they ran last). Between builds the
// given order stands: the daemon passes oldest build first, and a fair-share
// ordering between users may interleave builds; each build keeps exactly the
// places it was given, only its own units are permuted among them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace fad {

/// How one queued unit ranks within its build: probes first, then longer
/// first, then the larger tie-break (a cheap size feature), then the given order.
struct QueueRank {
  std::int64_t build_id = 0;
  /// The first unit of a family nothing is known about (its estimate is the
  /// flat prior): started before the
  /// rest, so that a cold build samples every family within its first minutes
  /// and their siblings start on evidence (sibling_evidence.h), not guesses.
  bool probe = false;
  double duration_s = 0;
  std::uint64_t tie_break = 0;
};

/// The order in which to consider the queue: indices into `ranks`.
std::vector<std::size_t> longest_first_within_builds(const std::vector<QueueRank>& ranks);

}  // namespace fad
