// What the units running now say about their queued siblings, before any of
// them has finished. nvcc units climb to a spike (cicc instantiating the
// templates) and drop to a plateau (ptxas, the host compiler), see spikes.h:
// once a unit of a family has come down from its spike, its siblings can be
// admitted at that observed peak and shape, with a margin that shrinks as more
// siblings confirm it, instead of the flat prior. A sibling still climbing is
// a lower bound.
// Pure code: the daemon (or the simulator) hands in the measured samples.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "policy/profile.h"
#include "policy/spikes.h"
#include "policy/unit_key.h"

namespace fad {

/// What a running unit has shown so far.
struct RunningObservation {
  UnitKey key;
  int threads = 1;
  Profile so_far;                    ///< its measured memory since it started; duration_s = its age
  std::uint64_t predicted_peak = 0;  ///< what it was admitted with: spikes count from a quarter of it
};

struct SiblingEvidenceConfig {
  double prior_duration_s = 120;  ///< per arch, for a sibling's duration while none finished
};

/// What a family's running units have shown so far (SiblingEvidence::so_far).
struct SoFar {
  std::uint64_t peak = 0;  ///< the highest any reached
  double age = 0;          ///< how long the longest-running has run
  /// What those compiling in as many turns as the target measured, laid over
  /// each other: when and how high they went.
  Profile timeline;
};

class SiblingEvidence {
 public:
  explicit SiblingEvidence(SiblingEvidenceConfig config);

  /// Replaces the evidence with the units running now.
  void replace(const std::vector<RunningObservation>& running);

  /// What the family's running units predict for `key` at `threads`: a profile
  /// when at least one sibling is past its spike (nullopt otherwise), scaled
  /// like finished observations and with the evidence margin.
  std::optional<Profile> predict(const UnitKey& key, int threads) const;

  /// What the family's running units have shown so far, scaled to `key` at
  /// `threads`: no estimate of a sibling should be below `peak` or end before
  /// `age`. All zero (and an empty timeline) when none runs.
  SoFar so_far(const UnitKey& key, int threads) const;
  /// so_far(key, threads).peak without laying the timelines over each other.
  std::uint64_t peak_so_far(const UnitKey& key, int threads) const;

  /// How many units of the family are past their spike now (`family` as
  /// UnitKey::scoped_family() gives it: siblings count only within a scope).
  std::size_t confirmed(const std::string& family) const;
  /// How many units of the family run now (scoped as for confirmed()).
  std::size_t running(const std::string& family) const;

 private:
  struct Sibling {
    UnitKey key;
    int threads = 1;
    Profile so_far;  ///< thinned
    SpikeSummary spikes;
  };
  /// The sibling's highest sample, scaled to `key` at `threads`.
  static std::uint64_t scaled_peak(const Sibling& s, const UnitKey& key, int threads);
  SiblingEvidenceConfig config_;
  std::map<std::string, std::vector<Sibling>> by_family_;
};

/// A running sibling's unit is assumed to last at least this multiple of its
/// age so far (it has not finished yet).
inline constexpr double kSiblingAgeFactor = 1.5;

/// The evidence margin for `n` confirming siblings: 1.25 for one, shrinking
/// as 1 + 0.25 / sqrt(n).
double evidence_margin(std::size_t n);

}  // namespace fad
