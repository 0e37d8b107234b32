// fad's persistent state in SQLite (WAL): builds, units, memory samples and the
// history the estimator learns from. Every state change is one transaction, so a
// kill -9 at any moment leaves a consistent database; the schema is versioned
// with PRAGMA user_version and upgraded by ordered migrations.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "daemon/model.h"
#include "daemon/sqlite.h"

namespace fad {

/// The schema version this build of fadd writes.
inline constexpr int kSchemaVersion = 3;

/// One daemon-wide memory sample.
struct MemorySample {
  std::string at;  ///< RFC 3339
  std::uint64_t total = 0;
  std::uint64_t available = 0;
  std::uint64_t swap_free = 0;
  std::uint64_t fad_bytes = 0;  ///< measured over fad's running units
  std::uint64_t committed = 0;  ///< predicted by the scheduler
  std::optional<double> psi_some_avg10;
};

class Store {
 public:
  /// Opens or creates the database at `path`, enables WAL and migrates it.
  /// Throws StoreError when the file cannot be opened or is newer than kSchemaVersion.
  explicit Store(const std::string& path);

  int schema_version();

  /// Inserts a build and all its units in one transaction; returns the build id.
  /// Unit paths may contain "{build}" which is replaced by the new id.
  std::int64_t create_build(BuildRecord build, std::vector<UnitRecord> units);

  /// Adds one unit to an existing build (external compiles); returns its id.
  /// The name is made unique within the build by a "#N" suffix; with a
  /// `log_dir`, the log is LOG_DIR/NAME.log, as for bundled units. Both are
  /// written back to `unit`.
  std::int64_t add_unit(std::int64_t build_id, UnitRecord& unit, const std::string& log_dir = {});
  /// The active external build of a session, if any.
  std::optional<BuildRecord> session_build(std::int64_t session);

  std::optional<BuildRecord> build(std::int64_t id);
  /// Builds not in a final state, oldest first.
  std::vector<BuildRecord> active_builds();
  /// Builds shown by `fad status`: active ones plus the `recent` newest finished ones.
  std::vector<BuildRecord> status_builds(int recent);
  /// Finished builds, newest first.
  std::vector<BuildRecord> finished_builds(int limit);

  std::vector<UnitRecord> units(std::int64_t build_id);
  std::optional<UnitRecord> unit(std::int64_t unit_id);

  void set_build_state(std::int64_t id, BuildState state, const std::optional<std::string>& finished_at,
                       const std::string& error = "");
  void set_build_artifact(std::int64_t id, const std::string& artifact);
  void raise_build_peak(std::int64_t id, std::uint64_t peak);

  /// queued -> running: records threads, estimate, start time and process group; attempts + 1.
  void start_unit(std::int64_t unit_id, int threads, std::uint64_t estimate, const std::string& started_at);
  void set_unit_pgid(std::int64_t unit_id, std::int64_t pgid);
  /// The cluster node a unit runs on (Slurm executor); kept after it ends.
  void set_unit_node(std::int64_t unit_id, const std::string& node);
  /// Where a finished unit's peak was measured ("cgroup", "sstat", ...).
  void set_unit_peak_source(std::int64_t unit_id, const std::string& source);
  /// running -> succeeded/failed, with exit code, peak and duration; when `history`
  /// is given (a clean success), it is recorded in the same transaction.
  void finish_unit(std::int64_t unit_id, UnitState state, std::optional<int> exit_code, std::uint64_t peak,
                   double duration_s, const std::string& finished_at, const std::optional<HistoryRecord>& history);
  /// running -> queued (stopped under pressure or by shutdown); keeps the observed peak as a floor.
  void requeue_unit(std::int64_t unit_id, std::uint64_t observed_peak);
  /// Sets every queued (and, if `include_running`, running) unit of a build to `state`.
  int set_pending_units(std::int64_t build_id, UnitState state, bool include_running);
  /// failed/cancelled -> queued for a build; returns how many.
  int requeue_failed_units(std::int64_t build_id);
  void set_wait_reason(std::int64_t unit_id, const std::string& reason);

  /// At startup: units left running by a crash go back to the queue. Returns
  /// their process groups so the daemon can kill leftover compilers.
  std::vector<std::int64_t> recover_running_units();

  void add_sample(const MemorySample& sample);
  /// Keeps at most `keep` daemon samples (oldest dropped).
  void trim_samples(int keep);
  std::vector<HistoryRecord> history();

  /// A value from the meta table (e.g. the boot id the pgids belong to).
  std::optional<std::string> meta(const std::string& key);
  void set_meta(const std::string& key, const std::string& value);

  Database& db() { return db_; }

 private:
  void migrate();
  Database db_;
};

}  // namespace fad
