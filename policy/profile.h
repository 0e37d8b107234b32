// A unit's memory over time: what the estimator predicts and the runner records.
// Pure value type.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace fad {

/// Memory of one compile unit's whole process tree over its life.
/// Points are (seconds since start, bytes), sorted by time; between points the
/// value is held from the earlier point (a step function); after the last point
/// and up to duration_s the last value holds; after duration_s it is 0.
/// Before the first point (t in [0, points[0].first)) the first value holds: a
/// sampler's first sample comes late, and assuming zero there would be optimistic.
/// The life is half-open: at(duration_s) is 0.
struct Profile {
  std::vector<std::pair<double, std::uint64_t>> points;
  double duration_s = 0;

  /// Bytes in use `t` seconds after start (0 before 0 and after duration_s).
  std::uint64_t at(double t) const;
  /// Highest value over [from, duration_s]; 0 when from >= duration_s.
  std::uint64_t peak_from(double from) const;
  std::uint64_t peak() const { return peak_from(0); }
  /// Mean bytes over the duration (the memory-time integral / duration).
  double mean() const;

  /// A constant profile (used for priors).
  static Profile flat(std::uint64_t bytes, double duration_s);
  /// Every value multiplied by `memory_factor`, every time by `time_factor`.
  Profile scaled(double memory_factor, double time_factor) const;
  /// At most `max_points` points, keeping each window's maximum so peaks survive.
  Profile thinned(std::size_t max_points) const;
  /// Its highest point raised to `bytes` where it is lower (polling missed a
  /// spike a cgroup caught, or an estimate is known to be at least that); an
  /// empty profile gets one point at 0. Never lowers anything.
  void lift_peak_to(std::uint64_t bytes);

  /// Each value replaced by the highest within `window` seconds either side
  /// (inside the life): the profile of a unit that may run up to `window`
  /// ahead of or behind its timeline. Peak and duration are unchanged.
  Profile widened(double window) const;
  /// Pointwise maximum of two profiles; the duration is the longer one.
  static Profile max_of(const Profile& a, const Profile& b);
  /// Pointwise sum of profiles that all start at t = 0 (a load over time).
  static Profile sum(const std::vector<Profile>& parts);
  /// This plus `other` started `offset` (>= 0) seconds later.
  Profile plus(const Profile& other, double offset) const;
  /// Highest value of this plus `other` started `offset` (>= 0) seconds later,
  /// over other's life [offset, offset + other.duration_s); 0 for an empty other.
  std::uint64_t peak_with(const Profile& other, double offset) const;
  /// Times at which the value may change (0 and every point time), ascending.
  std::vector<double> breakpoints() const;

  /// Compact text form "t:bytes,t:bytes;duration" for storage.
  std::string serialize() const;
  static Result<Profile> parse(std::string_view text);
};

}  // namespace fad
