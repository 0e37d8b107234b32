// Evidence from running siblings; see sibling_evidence.h.
//
// Choices, and why (the traces in bench/traces are the reference):
// - The predicted shape is what the sibling measured so far, widened in time
//   (the max of it at 0.8x, 1x and 1.25x its speed: siblings run at other
//   speeds), then, from its age on, its plateau if every turn's spike is
//   behind it (the highest of since its last spike and 40% of its peak: the
//   traces' plateaus reach 39% and 36%), else its peak: a turn still to come
//   spikes as high.
// - The duration is unknown until one finishes: the larger of the prior's and
//   1.5x the sibling's age. Longer only costs some packing of plateaus, which
//   measurement corrects while the unit runs.
// - A sibling compiling in more turns than the target (other threads or
//   archs) has its turns laid over each other (rescale()) once every turn's
//   spike is behind it; otherwise, in another number of turns, it says only
//   how high it goes: flat at that peak.
#include "policy/sibling_evidence.h"

#include <algorithm>
#include <cmath>

namespace fad {
namespace {

constexpr double kPlateauFloor = 0.4;
constexpr double kMinSpikeFraction = 0.25;
constexpr std::size_t kShapePoints = 64;

}  // namespace

double evidence_margin(std::size_t n) {
  return 1.0 + 0.25 / std::sqrt(static_cast<double>(std::max<std::size_t>(n, 1)));
}

SiblingEvidence::SiblingEvidence(SiblingEvidenceConfig config) : config_(config) {}

void SiblingEvidence::replace(const std::vector<RunningObservation>& running) {
  by_family_.clear();
  for (const auto& obs : running) {
    if (obs.key.family.empty() || obs.so_far.points.empty()) continue;
    Sibling s;
    s.key = obs.key;
    s.threads = obs.threads;
    s.so_far = obs.so_far.thinned(kShapePoints);
    s.spikes = summarize_spikes(
        obs.so_far, static_cast<std::uint64_t>(kMinSpikeFraction * static_cast<double>(obs.predicted_peak)));
    by_family_[obs.key.scoped_family()].push_back(std::move(s));
  }
}

std::optional<Profile> SiblingEvidence::predict(const UnitKey& key, int threads) const {
  auto it = by_family_.find(key.scoped_family());
  if (key.family.empty() || it == by_family_.end()) return std::nullopt;
  // Once a sibling past its spike runs at this very parallelism, those
  // scaled up from another count at a share (see cross_parallelism_share).
  const bool any_direct = std::any_of(it->second.begin(), it->second.end(), [&](const Sibling& s) {
    return s.spikes.spikes > 0 && same_parallelism(s.key, s.threads, key, threads);
  });
  Profile combined;
  std::size_t n = 0;
  for (const auto& s : it->second) {
    if (s.spikes.spikes == 0) continue;
    ++n;
    const int arch = std::max(s.key.arch_count, 1);
    const int turns = arch_turns(s.threads, arch);
    const double age = s.so_far.duration_s;
    const double duration = std::max(config_.prior_duration_s * turns, kSiblingAgeFactor * age);
    const bool all_turns = s.spikes.spikes >= turns;
    const std::uint64_t level =
        all_turns
            ? std::max<std::uint64_t>(s.spikes.since_drop,
                                      static_cast<std::uint64_t>(kPlateauFloor * static_cast<double>(s.spikes.peak)))
            : s.spikes.peak;
    Profile rest;
    rest.points = {{0.0, 0}, {age, level}};
    rest.duration_s = duration;
    Profile own = Profile::max_of(Profile::max_of(s.so_far.scaled(1, 0.8), s.so_far),
                                  Profile::max_of(s.so_far.scaled(1, 1.25), rest));
    Profile scaled = rescale(own, s.key, s.threads, key, threads);
    if (any_direct) scaled = scaled.scaled(cross_parallelism_share(s.key, s.threads, key, threads), 1.0);
    // Into fewer turns, rescale() lays its turns over each other, which is
    // safe once every turn's spike is behind it. Into more it would replay
    // a turn whose length is only guessed (the prior's, or 1.5x its age), and
    // a real turn's spike could fall in the guessed plateau: flat at the peak.
    const int target_turns = arch_turns(threads, key.arch_count);
    if (target_turns > turns || (!all_turns && target_turns != turns))
      scaled = Profile::flat(scaled.peak(), scaled.duration_s);
    combined = Profile::max_of(combined, scaled);
  }
  if (n == 0) return std::nullopt;
  return combined.scaled(evidence_margin(n), 1.0);
}

SoFar SiblingEvidence::so_far(const UnitKey& key, int threads) const {
  SoFar out;
  auto it = by_family_.find(key.scoped_family());
  if (key.family.empty() || it == by_family_.end()) return out;
  const int target_turns = arch_turns(threads, key.arch_count);
  for (const auto& s : it->second) {
    const Profile scaled = rescale(s.so_far, s.key, s.threads, key, threads);
    out.peak = std::max(out.peak, scaled_peak(s, key, threads));
    out.age = std::max(out.age, scaled.duration_s);
    if (arch_turns(s.threads, s.key.arch_count) == target_turns) out.timeline = Profile::max_of(out.timeline, scaled);
  }
  return out;
}

std::uint64_t SiblingEvidence::peak_so_far(const UnitKey& key, int threads) const {
  std::uint64_t peak = 0;
  auto it = by_family_.find(key.scoped_family());
  if (key.family.empty() || it == by_family_.end()) return peak;
  for (const auto& s : it->second) peak = std::max(peak, scaled_peak(s, key, threads));
  return peak;
}

std::uint64_t SiblingEvidence::scaled_peak(const Sibling& s, const UnitKey& key, int threads) {
  // The spike summary's peak: a step profile gives its last sample no width,
  // and the newest sample is often the highest yet.
  return rescale(Profile::flat(s.spikes.peak, 1), s.key, s.threads, key, threads).peak();
}

std::size_t SiblingEvidence::confirmed(const std::string& family) const {
  auto it = by_family_.find(family);
  if (it == by_family_.end()) return 0;
  return static_cast<std::size_t>(
      std::count_if(it->second.begin(), it->second.end(), [](const Sibling& s) { return s.spikes.spikes > 0; }));
}

std::size_t SiblingEvidence::running(const std::string& family) const {
  auto it = by_family_.find(family);
  return it == by_family_.end() ? 0 : it->second.size();
}

}  // namespace fad
