// Time as the daemon sees it, behind an interface so tests drive it by hand.
#pragma once

#include <string>

namespace fad {

class Clock {
 public:
  virtual ~Clock() = default;
  /// Monotonic seconds (for durations and the scheduler).
  virtual double now() const = 0;
  /// Wall-clock time as RFC 3339 UTC ("2026-11-23T09:12:16Z"), for records.
  virtual std::string wall() const = 0;
};

/// steady_clock and system_clock.
class SystemClock final : public Clock {
 public:
  double now() const override;
  std::string wall() const override;
};

}  // namespace fad
