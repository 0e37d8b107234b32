// Predicts a compile unit's memory profile and duration before it runs, from
// what finished units taught it. Pure code: the daemon loads history from the
// store at startup and feeds each finished unit to learn(); no I/O here.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "policy/profile.h"

namespace fad {

/// What identifies a compile unit for learning. `exact()` is the primary key:
/// source content hash + flags + arch set + compiler version.
struct UnitKey {
  std::string source;        ///< source path relative to the kernels dir
  std::string content_hash;  ///< hash of the source file's content (and its includes where known)
  std::string flags;         ///< the unit's compiler flags, joined
  std::string archs;         ///< e.g. "90,120a"
  std::string compiler;      ///< compiler version string
  std::string family;        ///< unit family from the manifest (e.g. "fwd_hdim128")
  int arch_count = 1;        ///< number of gencode targets (upper bound for --threads)

  std::string exact() const;
};

/// One finished unit, as recorded.
struct Observation {
  UnitKey key;
  int threads = 1;
  Profile profile;  ///< measured; profile.duration_s is the wall time
};

/// Where an estimate came from, most to least specific.
enum class EstimateSource { exact, same_source, family, manifest, prior };
std::string_view to_string(EstimateSource s);

struct Estimate {
  Profile profile;
  EstimateSource source = EstimateSource::prior;
  std::uint64_t peak() const { return profile.peak(); }
};

struct EstimatorConfig {
  std::uint64_t prior_per_thread = 5ull << 30;  ///< unit_memory_prior
  double prior_duration_s = 120;                ///< assumed duration for a never-seen unit
};

/// A manifest's measured prior for a unit (peak and duration on a reference machine).
struct ManifestPrior {
  std::uint64_t peak_bytes = 0;
  double duration_s = 0;
};

class Estimator {
 public:
  explicit Estimator(EstimatorConfig config);

  /// Records a finished unit. Later estimates for the same exact key, same
  /// source or same family use it (newest observations weigh most).
  void learn(const Observation& obs);

  /// The predicted profile for running `key` with `threads` nvcc threads.
  /// Fallback order: exact key, same source (other flags/archs), same family,
  /// the manifest's prior, the configured prior (prior_per_thread * threads).
  /// Memory scales with the number of concurrently compiled archs
  /// (min(threads, arch_count)), duration shrinks accordingly.
  Estimate estimate(const UnitKey& key, int threads, const std::optional<ManifestPrior>& manifest) const;

  std::size_t observation_count() const;

 private:
  EstimatorConfig config_;
  // Implementation detail: the helper owning estimator.cc may change these.
  std::map<std::string, std::vector<Observation>> by_exact_;
  std::map<std::string, std::vector<Observation>> by_source_;
  std::map<std::string, std::vector<Observation>> by_family_;
  std::size_t learned_ = 0;  ///< every observation ever learned (lists above are capped)
  /// Learnt estimates by (exact key, threads), cleared by learn(): the scheduler
  /// asks for the same queued units on every decision. Not thread-safe.
  mutable std::map<std::pair<std::string, int>, Estimate> cache_;
};

}  // namespace fad
