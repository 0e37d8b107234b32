// Spike counting; see spikes.h.
#include "policy/spikes.h"

#include <algorithm>

#include "policy/unit_key.h"

namespace fad {
namespace {
constexpr double kDropFraction = 0.6;  // the traces drop to 28% within two seconds of the spike
/// A later turn's spike reaches about the first one's height; a plateau that
/// slowly declines (the traces': 39% and 36% of the spike) is no spike.
constexpr double kLaterSpikeFraction = 0.7;
}  // namespace

SpikeSummary summarize_spikes(const Profile& so_far, std::uint64_t min_spike) {
  SpikeSummary s;
  std::uint64_t top = 0;    // highest value since the last drop
  std::uint64_t spike = 0;  // highest spike counted so far
  for (const auto& [t, v] : so_far.points) {
    s.peak = std::max(s.peak, v);
    if (s.spikes > 0) s.since_drop = std::max(s.since_drop, v);
    const auto needed =
        std::max<std::uint64_t>(std::max<std::uint64_t>(min_spike, 1),
                                static_cast<std::uint64_t>(kLaterSpikeFraction * static_cast<double>(spike)));
    if (top >= needed && static_cast<double>(v) <= kDropFraction * static_cast<double>(top)) {
      spike = std::max(spike, top);
      ++s.spikes;
      s.last_drop_at = t;
      s.since_drop = v;
      top = v;
      continue;
    }
    top = std::max(top, v);
  }
  return s;
}

int arch_turns(int threads, int arch_count) {
  const int archs = std::max(arch_count, 1);
  const int e = effective_parallelism(threads, archs);
  return (archs + e - 1) / e;
}

}  // namespace fad
