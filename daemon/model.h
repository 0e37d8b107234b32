// The daemon's records: builds and their units, as stored and as reported.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fad {

enum class BuildState { queued, running, paused, succeeded, failed, cancelled };
enum class UnitState { queued, running, succeeded, failed, cancelled };
/// compile: one nvcc -c; link: the final shared library, run once all compiles
/// succeeded; external: a compiler call run by `fad launch` (fadd admits it,
/// the launcher runs it).
enum class UnitKind { compile, link, external };

std::string_view to_string(BuildState s);
std::string_view to_string(UnitState s);
std::string_view to_string(UnitKind k);
std::optional<BuildState> build_state_from(std::string_view s);
std::optional<UnitState> unit_state_from(std::string_view s);
std::optional<UnitKind> unit_kind_from(std::string_view s);
bool is_final(BuildState s);

/// One process, told apart from a later one that reuses its pid by when it
/// started (/proc/PID/stat's starttime, in clock ticks since boot).
struct ProcessStamp {
  int pid = 0;
  std::uint64_t start_ticks = 0;
};

struct BuildRecord {
  std::int64_t id = 0;
  std::string name;
  BuildState state = BuildState::queued;
  std::vector<std::string> archs;  ///< display form
  std::string kernels_glob = "*";
  std::string nvcc;
  std::string created_at;  ///< RFC 3339
  std::optional<std::string> finished_at;
  std::uint64_t peak_bytes = 0;
  std::optional<std::string> artifact;
  std::string error;  ///< why it failed, for users
  /// "bundled" (planned from the kernels manifest) or "external" (fad run / fad launch).
  std::string kind = "bundled";
  std::optional<std::int64_t> session;        ///< external builds grouped by the caller's session
  std::string command;                        ///< external: the build command fad run ran
  std::optional<std::uint64_t> budget_bytes;  ///< this build's own memory cap
  /// Who submitted it (from the connection's credentials); null for builds
  /// recorded before fadd knew, which belong to fadd's own user.
  std::optional<std::int64_t> uid;
  std::optional<std::int64_t> gid;  ///< the submitter's group then (compiles run with it)
  /// The submitter's supplementary groups then (compiles run with them);
  /// unset for builds of older fadds: looked up in the group database.
  std::optional<std::vector<std::int64_t>> groups;
  std::optional<std::string> pruned_at;  ///< when retention deleted its outputs and logs
  /// The `fad run` process that opened an external build; nullopt when
  /// unknown (another pid namespace) or not opened by fad run.
  std::optional<ProcessStamp> opener;
};

struct UnitRecord {
  std::int64_t id = 0;
  std::int64_t build_id = 0;
  int seq = 0;  ///< order within the build
  std::string name;
  UnitKind kind = UnitKind::compile;
  std::string source;  ///< relative to the kernels dir; launched: relative to its project (launch_key.h)
  std::string family;
  std::vector<std::string> archs;
  std::vector<std::string> argv;  ///< the full command, argv[0] = compiler
  std::string output_path;
  std::string log_path;
  std::string key;  ///< estimator exact key
  std::string content_hash;
  std::string flags;
  std::string compiler;  ///< compiler version
  std::uint64_t prior_peak = 0;
  double prior_duration_s = 0;
  UnitState state = UnitState::queued;
  int attempts = 0;
  int threads = 0;
  std::uint64_t estimate_bytes = 0;
  std::uint64_t peak_bytes = 0;
  std::uint64_t requeued_peak = 0;
  std::optional<int> exit_code;
  std::optional<std::string> started_at;
  std::optional<std::string> finished_at;
  double duration_s = 0;
  std::string wait_reason;
  std::optional<std::int64_t> pgid;  ///< process group while running (for crash cleanup)
  std::uint64_t source_bytes = 0;    ///< size of the source file (a cheap feature for ordering)
  /// Where the estimate it last started with came from (estimate_source_id); empty before.
  std::string estimate_source;
  bool cached = false;      ///< its outputs came from the compile cache: never scheduled
  std::string node;         ///< the cluster node it ran on ("" = this machine)
  std::string peak_source;  ///< where peak_bytes came from ("" = polling here)
  std::string scope;        ///< whose measurements inform it (UnitKey::scope)
};

/// A build's units as its listing shows them: counted, not read row by row
/// (a launched build may hold thousands, each with its command line).
struct UnitSummary {
  int total = 0;
  int by_state[5] = {};  ///< indexed by UnitState
  int cache_hits = 0;
  std::vector<std::string> archs;   ///< every arch they compile for, in the order first met
  std::uint64_t current_bytes = 0;  ///< what its running units use now (the engine's, not stored)
  void count(UnitState state, int n = 1) {
    by_state[static_cast<int>(state)] += n;
    total += n;
  }
  /// Adds the archs of `list` not met yet, keeping their order.
  void add_archs(const std::vector<std::string>& list) {
    for (const auto& a : list)
      if (std::find(archs.begin(), archs.end(), a) == archs.end()) archs.push_back(a);
  }
};

/// A finished unit's measurements, feeding the estimator.
struct HistoryRecord {
  std::string key;
  std::string source;
  std::string content_hash;
  std::string flags;
  std::string archs;
  std::string compiler;
  std::string family;
  int arch_count = 1;
  int threads = 1;
  std::string profile;           ///< Profile::serialize()
  std::string recorded_at{};     ///< RFC 3339 (set when read; the store sets it on insert)
  std::string origin = "local";  ///< "local" (measured here) or "imported" (fad history import)
  std::string scope{};           ///< UnitKey::scope of the unit measured ("" = everyone's)
  std::int64_t id = 0;           ///< row id (set when read)
};

}  // namespace fad
