// Where a compile unit is in its life, read from its measured memory. An nvcc
// unit climbs to one spike per turn (cicc instantiating the templates for the
// archs it compiles at once) and drops to a plateau (ptxas, the host
// compiler); with fewer threads than archs it compiles them in turns, one
// spike each. Once every turn's spike is behind it, what is left of it needs
// no more than its plateau.
#pragma once

#include <cstdint>

#include "policy/profile.h"

namespace fad {

struct SpikeSummary {
  std::uint64_t peak = 0;        ///< highest value so far
  int spikes = 0;                ///< spikes it has come down from
  double last_drop_at = 0;       ///< when it last came down from one
  std::uint64_t since_drop = 0;  ///< highest value since then (the plateau so far)
};

/// A spike counts once the value falls to 60% of the highest value since the
/// previous drop, provided that value reached `min_spike` (the host
/// preprocessor's early bump is no spike: callers pass a quarter of what the
/// unit was expected to reach) and, after the first, 70% of the highest spike
/// counted (a declining plateau is no spike).
SpikeSummary summarize_spikes(const Profile& so_far, std::uint64_t min_spike);

/// Turns in which nvcc compiles `arch_count` archs with `threads` threads.
int arch_turns(int threads, int arch_count);

}  // namespace fad
