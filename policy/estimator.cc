// Estimator: predicts a unit's memory profile from finished units, falling back
// from the exact key to the same source, the family, the manifest and a prior.
//
// Choices, and why:
// - Combining observations: pointwise max of the newest kCombine (3) profiles of a
//   key. An under-estimate costs an OOM kill, an over-estimate only some packing;
//   a unit's memory barely varies between runs, so the max is close to the truth,
//   and only the newest count so an edited header or new compiler is learnt after
//   three builds. An EWMA would average a rare high run away.
// - Never-seen units (manifest and configured prior) get a *flat* profile: we
//   know nothing of when their spike comes, and a profile shaped like the traces
//   with its spike placed too early would let another unit's spike overlap it.
// - Thread scaling: memory grows with the archs compiled concurrently
//   (effective = min(threads, arch_count)). Scaling *up* linearly is safe (the
//   traces: 4.1 GiB at 1 thread, 7.05 GiB at 2, ratio 1.7 < 2); scaling *down*
//   linearly would under-estimate (7.05 / 2 < 4.1), so down we scale by
//   (e + 1) / (e_obs + 1) instead (7.05 * 2/3 = 4.7 GiB >= 4.1).
#include "policy/estimator.h"

#include <algorithm>

namespace fad {
namespace {

constexpr std::size_t kKeep = 5;         // observations kept per key
constexpr std::size_t kCombine = 3;      // newest observations combined for exact / same source
constexpr double kFallbackMargin = 1.1;  // another unit's profile is only a likeness
constexpr std::size_t kMaxPoints = 64;   // estimates are thinned so the scheduler stays fast

int effective(int threads, int arch_count) { return std::max(1, std::min(threads, std::max(arch_count, 1))); }

/// Memory factor from `from` to `to` concurrently compiled archs (see file top).
double memory_factor(int from, int to) {
  if (to >= from) return static_cast<double>(to) / from;
  return static_cast<double>(to + 1) / (from + 1);
}

/// `obs` as if it had run as `key` with `threads`: memory by effective
/// parallelism, time inversely, stretched by the ratio of archs to compile.
/// Never shorter than the observation's time per arch: one arch cannot be split.
Profile normalize(const Observation& obs, const UnitKey& key, int threads) {
  int arch_obs = std::max(obs.key.arch_count, 1);
  int arch = std::max(key.arch_count, 1);
  int e_obs = effective(obs.threads, arch_obs);
  int e = effective(threads, arch);
  double time = static_cast<double>(e_obs) / e * arch / arch_obs;
  double per_arch = static_cast<double>(e_obs) / arch_obs;  // one arch's share of the observed time
  time = std::max(time, per_arch);
  return obs.profile.scaled(memory_factor(e_obs, e), time);
}

/// Pointwise max of the newest `n` observations, normalized to key/threads.
Profile newest_max(const std::vector<Observation>& list, std::size_t n, const UnitKey& key, int threads) {
  Profile out;
  std::size_t from = list.size() > n ? list.size() - n : 0;
  for (std::size_t i = from; i < list.size(); ++i) out = Profile::max_of(out, normalize(list[i], key, threads));
  return out;
}

void remember(std::vector<Observation>& list, const Observation& obs) {
  list.push_back(obs);
  if (list.size() > kKeep) list.erase(list.begin());
}

}  // namespace

std::string UnitKey::exact() const {
  // \x1f (unit separator) cannot appear in paths, flags or version strings.
  std::string out;
  for (const std::string* part : {&source, &content_hash, &flags, &archs, &compiler}) {
    out += *part;
    out += '\x1f';
  }
  return out;
}

std::string_view to_string(EstimateSource s) {
  switch (s) {
    case EstimateSource::exact: return "exact";
    case EstimateSource::same_source: return "same source";
    case EstimateSource::family: return "family";
    case EstimateSource::manifest: return "manifest";
    case EstimateSource::prior: return "prior";
  }
  return "?";
}

Estimator::Estimator(EstimatorConfig config) : config_(config) {}

void Estimator::learn(const Observation& obs) {
  if (obs.profile.points.empty() || obs.profile.duration_s <= 0) return;  // nothing to learn from
  Observation kept = obs;
  kept.profile = obs.profile.thinned(4 * kMaxPoints);
  remember(by_exact_[kept.key.exact()], kept);
  if (!kept.key.source.empty()) remember(by_source_[kept.key.source], kept);
  if (!kept.key.family.empty()) remember(by_family_[kept.key.family], kept);
  ++learned_;
  cache_.clear();
}

Estimate Estimator::estimate(const UnitKey& key, int threads, const std::optional<ManifestPrior>& manifest) const {
  Estimate est;
  int e = effective(threads, key.arch_count);
  std::pair<std::string, int> cache_key{key.exact(), threads};
  if (auto hit = cache_.find(cache_key); hit != cache_.end()) return hit->second;
  if (auto it = by_exact_.find(cache_key.first); it != by_exact_.end()) {
    est.profile = newest_max(it->second, kCombine, key, threads);
    est.source = EstimateSource::exact;
  } else if (auto src = by_source_.find(key.source); !key.source.empty() && src != by_source_.end()) {
    est.profile = newest_max(src->second, kCombine, key, threads).scaled(kFallbackMargin, 1.0);
    est.source = EstimateSource::same_source;
  } else if (auto fam = by_family_.find(key.family); !key.family.empty() && fam != by_family_.end()) {
    // The family member with the highest peak: in a cold build the first
    // finished unit of a family stands for all its siblings.
    const Observation* top = nullptr;
    std::uint64_t top_peak = 0;
    for (const auto& obs : fam->second) {
      auto peak = normalize(obs, key, threads).peak();
      if (!top || peak >= top_peak) top = &obs, top_peak = peak;
    }
    est.profile = normalize(*top, key, threads).scaled(kFallbackMargin, 1.0);
    est.source = EstimateSource::family;
  } else if (manifest && manifest->peak_bytes > 0) {
    // The manifest was measured with one nvcc thread: linear scaling up is safe.
    double duration = manifest->duration_s > 0 ? manifest->duration_s / e : config_.prior_duration_s;
    est.profile = Profile::flat(manifest->peak_bytes * static_cast<std::uint64_t>(e), duration);
    est.source = EstimateSource::manifest;
  } else {
    est.profile = Profile::flat(config_.prior_per_thread * static_cast<std::uint64_t>(e), config_.prior_duration_s);
    est.source = EstimateSource::prior;
  }
  est.profile = est.profile.thinned(kMaxPoints);
  // Priors depend on the manifest argument, so only learnt estimates are kept.
  if (est.source != EstimateSource::manifest && est.source != EstimateSource::prior) cache_.emplace(cache_key, est);
  return est;
}

std::size_t Estimator::observation_count() const { return learned_; }

}  // namespace fad
