// Predicts a compile unit's memory profile and duration before it runs, from
// what finished units taught it and what running siblings show. Pure code: the
// daemon loads history from the store at startup, feeds each finished unit to
// learn() and the running units to observe_running(); no I/O here.
#pragma once

#include <cstdint>
#include <map>
#include <tuple>
#include <unordered_map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "policy/profile.h"
#include "policy/sibling_evidence.h"
#include "policy/unit_key.h"

namespace fad {

/// One finished unit, as recorded.
struct Observation {
  UnitKey key;
  int threads = 1;
  Profile profile;  ///< measured; profile.duration_s is the wall time
  /// Measured elsewhere and imported (fad history import): used like any
  /// other until this machine has observations of the same key (or family)
  /// of its own, which then replace it.
  bool imported = false;
};

/// Where an estimate came from, most to least specific.
enum class EstimateSource { exact, same_source, family, running_sibling, manifest, prior };
/// Human form, for logs and wait reasons ("same source").
std::string_view to_string(EstimateSource s);
/// The stable identifier in JSON and the database ("same_source"), with an
/// "imported_" prefix for estimates resting on imported history only.
std::string estimate_source_id(EstimateSource s, bool imported);

struct Estimate {
  Profile profile;
  EstimateSource source = EstimateSource::prior;
  bool imported = false;  ///< rests on imported observations only
  /// Its duration is only a guess (the configured prior, a running sibling's
  /// age): the scheduler plans with it, but no ETA should rest on it.
  bool duration_guessed = false;
  std::uint64_t peak() const { return profile.peak(); }
};

struct EstimatorConfig {
  std::uint64_t prior_per_thread = 5ull << 30;  ///< unit_memory_prior
  double prior_duration_s = 120;                ///< assumed duration of one arch of a never-seen unit
};

/// A manifest's measured prior for a unit (peak and duration on a reference machine).
struct ManifestPrior {
  std::uint64_t peak_bytes = 0;
  double duration_s = 0;
  /// fad's own guess for a kind of unit no manifest describes (the link):
  /// shown as a prior, its duration only a guess.
  bool builtin = false;
};

class Estimator {
 public:
  /// Observations kept per key (and per source, per family): older ones
  /// never inform an estimate again.
  static constexpr std::size_t kKeepPerKey = 5;

  explicit Estimator(EstimatorConfig config);

  /// Records a finished unit. Later estimates for the same exact key, same
  /// source or same family use it (newest observations weigh most; local ones
  /// over imported ones).
  void learn(const Observation& obs);

  /// Replaces what is known of the units running now (see sibling_evidence.h).
  void observe_running(const std::vector<RunningObservation>& running);

  /// The predicted profile for running `key` with `threads` nvcc threads.
  /// Fallback order: exact key, same source (other flags/archs), same family
  /// (finished units; raised to what running siblings show), a running
  /// sibling past its spike, the manifest's prior, the configured prior
  /// (prior_per_thread per arch compiled at once, prior_duration_s per arch
  /// compiled in turn). A prior is never below a running sibling's peak so far.
  /// Memory scales with the number of concurrently compiled archs
  /// (min(threads, arch_count)), duration shrinks accordingly.
  Estimate estimate(const UnitKey& key, int threads, const std::optional<ManifestPrior>& manifest) const;

  std::size_t observation_count() const;
  /// Whether anything was measured of `key`'s family in its scope or the
  /// shared one: a finished unit, or a unit running now.
  bool knows_family(const UnitKey& key) const;

 private:
  EstimatorConfig config_;
  // Implementation detail: the helper owning estimator.cc may change these.
  std::map<std::string, std::vector<Observation>> by_exact_;
  std::map<std::string, std::vector<Observation>> by_source_;
  std::map<std::string, std::vector<Observation>> by_family_;
  std::size_t learned_ = 0;  ///< every observation ever learned (lists above are capped)
  SiblingEvidence siblings_;
  /// Exact and same-source estimates by (exact key, threads), cleared by
  /// learn(): the scheduler asks for the same queued units on every decision.
  /// A key with neither maps to nothing: its estimate is the fallback's.
  /// Not thread-safe.
  struct CacheKeyHash {
    std::size_t operator()(const std::pair<std::string, int>& k) const {
      return std::hash<std::string>{}(k.first) * 31 + static_cast<std::size_t>(k.second);
    }
  };
  /// Hashed: exact keys share long prefixes (flags, compiler), which makes
  /// an ordered map's comparisons the scheduler pass's biggest cost.
  mutable std::unordered_map<std::pair<std::string, int>, std::optional<Estimate>, CacheKeyHash> cache_;
  /// The fallback (family, running siblings, manifest, prior) depends on a
  /// unit only through these: thousands of queued units of one family share
  /// one entry. Cleared by learn() and observe_running().
  /// Looked up by views (no copies of scope and family per queued unit).
  using FallbackKey = std::tuple<std::string, std::string, int, int, std::uint64_t, double, bool>;
  using FallbackView = std::tuple<std::string_view, std::string_view, int, int, std::uint64_t, double, bool>;
  mutable std::map<FallbackKey, Estimate, std::less<>> fallback_cache_;
  std::optional<Estimate> measured(const UnitKey& key, int threads) const;  ///< exact or same source
  Estimate fallback(const UnitKey& key, int threads, const std::optional<ManifestPrior>& manifest) const;
};

}  // namespace fad
