// Estimator: predicts a unit's memory profile from finished units, falling back
// from the exact key to the same source, the family, running siblings, the
// manifest and a prior.
//
// Choices, and why:
// - Combining observations: pointwise max of the newest kCombine (3) profiles of a
//   key. An under-estimate costs an OOM kill, an over-estimate only some packing;
//   a unit's memory barely varies between runs, so the max is close to the truth,
//   and only the newest count so an edited header or new compiler is learnt after
//   three builds. An EWMA would average a rare high run away.
// - Imported observations stand in until this machine has measured the key (or
//   family) itself: another machine's timing is only a likeness of this one's.
// - Never-seen units (manifest and configured prior) get a *flat* profile: we
//   know nothing of when their spike comes, and a profile shaped like the traces
//   with its spike placed too early would let another unit's spike overlap it.
//   Running siblings past their spike do say when it comes (sibling_evidence.h).
// - Thread scaling: see rescale() in unit_key.h.
#include "policy/estimator.h"

#include <algorithm>

namespace fad {
namespace {

constexpr std::size_t kCombine = 3;      // newest observations combined for exact / same source
constexpr double kFallbackMargin = 1.1;  // another unit's profile is only a likeness
constexpr std::size_t kMaxPoints = 64;   // estimates are thinned so the scheduler stays fast

Profile normalize(const Observation& obs, const UnitKey& key, int threads) {
  return rescale(obs.profile, obs.key, obs.threads, key, threads);
}

bool any_local(const std::vector<Observation>& list) {
  return std::any_of(list.begin(), list.end(), [](const Observation& o) { return !o.imported; });
}

/// Pointwise max of the newest `n` observations, normalized to key/threads;
/// local ones only when there are any (imported ones stand in until then).
Profile newest_max(const std::vector<Observation>& list, std::size_t n, const UnitKey& key, int threads,
                   bool* imported) {
  Profile out;
  const bool local = any_local(list);
  *imported = !local;
  std::size_t taken = 0;
  for (auto it = list.rbegin(); it != list.rend() && taken < n; ++it) {
    if (local && it->imported) continue;
    out = Profile::max_of(out, normalize(*it, key, threads));
    ++taken;
  }
  return out;
}

/// The first scope (the key's own, then the shared one) whose running
/// siblings predict anything.
std::optional<Profile> predict_from_running(const SiblingEvidence& siblings, const std::vector<UnitKey>& scopes,
                                            int threads) {
  for (const auto& k : scopes)
    if (auto p = siblings.predict(k, threads)) return p;
  return std::nullopt;
}

/// What the running siblings in every scope have shown so far, together.
SoFar so_far_in(const SiblingEvidence& siblings, const std::vector<UnitKey>& scopes, int threads) {
  SoFar seen;
  for (const auto& k : scopes) {
    const SoFar scope = siblings.so_far(k, threads);
    seen.peak = std::max(seen.peak, scope.peak);
    seen.age = std::max(seen.age, scope.age);
    seen.timeline = Profile::max_of(seen.timeline, scope.timeline);
  }
  return seen;
}

/// Keeps the newest kKeepPerKey, imported ones before (older than) local ones.
void remember(std::vector<Observation>& list, const Observation& obs) {
  if (obs.imported) {
    auto first_local = std::find_if(list.begin(), list.end(), [](const Observation& o) { return !o.imported; });
    list.insert(first_local, obs);
  } else {
    list.push_back(obs);
  }
  if (list.size() > Estimator::kKeepPerKey) list.erase(list.begin());
}

}  // namespace

std::string_view to_string(EstimateSource s) {
  switch (s) {
    case EstimateSource::exact: return "exact";
    case EstimateSource::same_source: return "same source";
    case EstimateSource::family: return "family";
    case EstimateSource::running_sibling: return "running sibling";
    case EstimateSource::manifest: return "manifest";
    case EstimateSource::prior: return "prior";
  }
  return "?";
}

std::string estimate_source_id(EstimateSource s, bool imported) {
  std::string id(to_string(s));
  std::replace(id.begin(), id.end(), ' ', '_');
  return imported ? "imported_" + id : id;
}

Estimator::Estimator(EstimatorConfig config)
    : config_(config), siblings_(SiblingEvidenceConfig{config.prior_duration_s}) {}

void Estimator::learn(const Observation& obs) {
  if (obs.profile.points.empty() || obs.profile.duration_s <= 0) return;  // nothing to learn from
  Observation kept = obs;
  kept.profile = obs.profile.thinned(4 * kMaxPoints);
  remember(by_exact_[kept.key.exact()], kept);
  if (!kept.key.source.empty()) remember(by_source_[kept.key.scoped_source()], kept);
  if (!kept.key.family.empty()) remember(by_family_[kept.key.scoped_family()], kept);
  ++learned_;
  cache_.clear();
  fallback_cache_.clear();
}

void Estimator::observe_running(const std::vector<RunningObservation>& running) {
  siblings_.replace(running);
  fallback_cache_.clear();
}

Estimate Estimator::estimate(const UnitKey& key, int threads, const std::optional<ManifestPrior>& manifest) const {
  std::pair<std::string, int> cache_key{key.exact(), threads};
  auto hit = cache_.find(cache_key);
  if (hit == cache_.end()) hit = cache_.emplace(cache_key, measured(key, threads)).first;
  if (hit->second) return *hit->second;
  const FallbackView fb{key.scope,
                        key.family,
                        key.arch_count,
                        threads,
                        manifest ? manifest->peak_bytes : 0,
                        manifest ? manifest->duration_s : 0.0,
                        manifest && manifest->builtin};
  auto known = fallback_cache_.find(fb);
  if (known == fallback_cache_.end())
    known = fallback_cache_.emplace(FallbackKey(fb), fallback(key, threads, manifest)).first;
  return known->second;
}

std::optional<Estimate> Estimator::measured(const UnitKey& key, int threads) const {
  Estimate est;
  // At each step a unit's own scope first, then what trusted builds taught
  // (the same key with no scope); never another user's scope.
  std::vector<UnitKey> scopes{key};
  if (!key.scope.empty()) scopes.push_back(key.shared());
  for (const auto& k : scopes) {
    if (auto it = by_exact_.find(k.exact()); it != by_exact_.end()) {
      est.profile = newest_max(it->second, kCombine, key, threads, &est.imported);
      est.source = EstimateSource::exact;
      break;
    }
  }
  for (const auto& k : scopes) {
    if (!est.profile.points.empty() || key.source.empty()) break;
    if (auto src = by_source_.find(k.scoped_source()); src != by_source_.end()) {
      est.profile = newest_max(src->second, kCombine, key, threads, &est.imported).scaled(kFallbackMargin, 1.0);
      est.source = EstimateSource::same_source;
    }
  }
  if (est.profile.points.empty()) return std::nullopt;
  est.profile = est.profile.thinned(kMaxPoints);
  return est;
}

Estimate Estimator::fallback(const UnitKey& key, int threads, const std::optional<ManifestPrior>& manifest) const {
  Estimate est;
  const int arch = std::max(key.arch_count, 1);
  const int e = effective_parallelism(threads, arch);
  std::vector<UnitKey> scopes{key};
  if (!key.scope.empty()) scopes.push_back(key.shared());
  const std::vector<Observation>* family = nullptr;
  for (const auto& k : scopes) {
    if (family || key.family.empty()) break;
    if (auto fam = by_family_.find(k.scoped_family()); fam != by_family_.end()) family = &fam->second;
  }
  if (family) {
    // The family member with the highest peak: in a cold build the first
    // finished unit of a family stands for all its siblings. Once one was
    // measured at this very parallelism, the others scaled up count at a
    // share (cross_parallelism_share): linear scaling is safe but high, and
    // in a build that binds on memory that excess is idle cores.
    const bool local = any_local(*family);
    const bool any_direct = std::any_of(family->begin(), family->end(), [&](const Observation& o) {
      return !(local && o.imported) && same_parallelism(o.key, o.threads, key, threads);
    });
    const Observation* top = nullptr;
    double top_peak = 0, top_share = 1;
    for (const auto& obs : *family) {
      if (local && obs.imported) continue;
      const double share = any_direct ? cross_parallelism_share(obs.key, obs.threads, key, threads) : 1.0;
      const double peak = static_cast<double>(normalize(obs, key, threads).peak()) * share;
      if (!top || peak >= top_peak) top = &obs, top_peak = peak, top_share = share;
    }
    est.profile = normalize(*top, key, threads).scaled(kFallbackMargin * top_share, 1.0);
    est.source = EstimateSource::family;
    est.imported = top->imported;
    // A running sibling that went higher than every finished one raises it,
    // and one that ran longer than they took stretches it to 1.5x its age:
    // the finished units' measured shape, not the sibling's prediction, which
    // is smeared over the speeds it may run at and carries the evidence
    // margin (laid over the family's profile, it held most of a unit's life
    // at its spike: in the simulator, estimates twice the true mean memory,
    // and idle cores in every build that binds on memory). Either way the
    // family's timeline is in doubt, so what such siblings measured, when and
    // how high, is laid over it too, with the family's margin.
    const SoFar seen = so_far_in(siblings_, scopes, threads);
    const auto raised = static_cast<std::uint64_t>(kFallbackMargin * static_cast<double>(seen.peak));
    const bool higher = raised > est.peak();
    const bool longer = seen.age > est.profile.duration_s;
    if (higher)
      est.profile = est.peak() > 0
                        ? est.profile.scaled(static_cast<double>(raised) / static_cast<double>(est.peak()), 1.0)
                        : Profile::flat(raised, est.profile.duration_s);
    if (longer) {
      const double duration = kSiblingAgeFactor * seen.age;
      est.profile = est.profile.duration_s > 0 ? est.profile.scaled(1.0, duration / est.profile.duration_s)
                                               : Profile::flat(est.peak(), duration);
      est.duration_guessed = true;
    }
    if (higher || longer) est.profile = Profile::max_of(est.profile, seen.timeline.scaled(kFallbackMargin, 1.0));
  } else if (auto running = predict_from_running(siblings_, scopes, threads)) {
    est.profile = *running;
    est.source = EstimateSource::running_sibling;
    est.duration_guessed = true;  // nothing of the family finished: its age, or the prior's
  } else if (manifest && manifest->peak_bytes > 0) {
    // The manifest was measured with one nvcc thread: linear scaling up is safe.
    double duration = manifest->duration_s > 0 ? manifest->duration_s / e : config_.prior_duration_s;
    est.profile = Profile::flat(manifest->peak_bytes * static_cast<std::uint64_t>(e), duration);
    est.source = manifest->builtin ? EstimateSource::prior : EstimateSource::manifest;
    est.duration_guessed = manifest->duration_s <= 0 || manifest->builtin;
  } else {
    // Each arch takes the prior's time; e of them compile at once.
    est.profile =
        Profile::flat(config_.prior_per_thread * static_cast<std::uint64_t>(e), config_.prior_duration_s * arch / e);
    est.source = EstimateSource::prior;
    est.duration_guessed = true;
  }
  if (est.source == EstimateSource::manifest || est.source == EstimateSource::prior) {
    // A sibling already above the guess says the guess is too low.
    std::uint64_t floor = 0;
    for (const auto& k : scopes) floor = std::max(floor, siblings_.peak_so_far(k, threads));
    if (floor > est.peak()) est.profile = Profile::flat(floor, est.profile.duration_s);
  }
  est.profile = est.profile.thinned(kMaxPoints);
  return est;
}

std::size_t Estimator::observation_count() const { return learned_; }

bool Estimator::knows_family(const UnitKey& key) const {
  if (key.family.empty()) return false;
  for (const auto& k : {key, key.shared()})
    if (by_family_.count(k.scoped_family()) > 0 || siblings_.running(k.scoped_family()) > 0) return true;
  return false;
}

}  // namespace fad
