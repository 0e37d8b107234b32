// fad's persistent state in SQLite (WAL): builds, units, memory samples and the
// history the estimator learns from. Every state change is one transaction, so a
// kill -9 at any moment leaves a consistent database; the schema is versioned
// with PRAGMA user_version and upgraded by ordered migrations.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "daemon/model.h"
#include "daemon/sqlite.h"

namespace fad {

/// The schema version this build of fadd writes.
inline constexpr int kSchemaVersion = 14;

/// One daemon-wide memory sample.
struct MemorySample {
  std::string at;  ///< RFC 3339
  std::uint64_t total = 0;
  std::uint64_t available = 0;
  std::uint64_t swap_free = 0;
  std::uint64_t fad_bytes = 0;  ///< measured over fad's running units
  std::uint64_t committed = 0;  ///< predicted by the scheduler
  std::optional<double> psi_some_avg10;
  std::uint64_t capacity = 0;  ///< what fad's units could hold then (0 in rows older than schema 3)
};

/// One run of a unit, as `fad report` draws it: its span and thinned memory samples.
struct UnitAttempt {
  std::int64_t unit_id = 0;
  int attempt = 1;
  double started_at = 0;  ///< epoch seconds
  double ended_at = 0;    ///< epoch seconds
  /// succeeded, failed, cancelled, requeued (stopped under memory pressure),
  /// oom (killed by the OOM killer, requeued), shutdown (fadd stopped), lost (launcher vanished)
  std::string outcome;
  int threads = 0;
  std::uint64_t estimate_bytes = 0;
  std::uint64_t peak_bytes = 0;
  std::string points;  ///< Profile::serialize(), times relative to started_at
};

/// Something that happened to a unit between attempt boundaries.
/// How many events of one unit the store keeps (the latest).
inline constexpr std::size_t kMaxEventsPerUnit = 1000;

struct UnitEvent {
  std::int64_t unit_id = 0;
  double at = 0;     ///< epoch seconds
  std::string kind;  ///< queued, suspend, resume, pause, unpause
  std::string detail;
};

/// A compile a previous fadd left running: its process group, its build and
/// when its group's leader started (clock ticks since boot; unknown for units
/// started before schema 11), so a process that got the id since is told apart.
struct LeftRunning {
  std::int64_t pgid = 0;
  std::int64_t build_id = 0;
  std::optional<std::int64_t> leader_start;
  /// A launcher's compile (fad launch, fad run): its launcher's to run on.
  bool external{};
  std::int64_t unit_id = 0;
  bool operator==(const LeftRunning& o) const = default;
};

class Store {
 public:
  /// Opens or creates the database at `path`, marks it as fad's
  /// (application_id), enables WAL and migrates it. Throws StoreError, leaving
  /// the file as it was, when it cannot be opened, is not a fad database (see
  /// check_database_file), fails SQLite's quick_check or is newer than kSchemaVersion.
  explicit Store(const std::string& path);

  int schema_version();
  std::int32_t application_id();
  /// Whether the file at the path opened is gone or another file now (deleted
  /// by a cleaner, replaced by hand), or no longer a database (emptied or
  /// overwritten in place): what is written from then on is lost when fadd
  /// next starts.
  bool file_replaced() const;
  /// The file's path, as opened.
  const std::string& path() const { return path_; }
  /// Whether SQLite has said, since fadd started, that the file is damaged
  /// (an emptied file SQLite wrote pages back into, around holes).
  bool damaged_seen() const { return db_.damaged_seen(); }

  /// Inserts a build and all its units in one transaction; returns the build id.
  /// Unit paths may contain "{build}" which is replaced by the new id.
  std::int64_t create_build(BuildRecord build, std::vector<UnitRecord> units);

  /// Adds one unit to an existing build (external compiles); returns its id.
  /// The name is made unique within the build by a "#N" suffix; with a
  /// `log_dir`, the log is LOG_DIR/NAME.log, as for bundled units. Both are
  /// written back to `unit`.
  std::int64_t add_unit(std::int64_t build_id, UnitRecord& unit, const std::string& log_dir = {});
  /// The active external build of a session of user `uid`, if any.
  std::optional<BuildRecord> session_build(std::int64_t session, std::int64_t uid);

  std::optional<BuildRecord> build(std::int64_t id);
  /// The builds whose queue may have changed since the last call, which
  /// forgets them: a unit added, removed, changing state or changed while
  /// queued; a build added, removed, or its state, budget or owner changed.
  /// Wait reasons and the measurements of running units do not count.
  std::set<std::int64_t> take_changed_builds();
  /// A build's queued units, in order.
  std::vector<UnitRecord> queued_units(std::int64_t build_id);
  /// Whether every compile unit of a build has succeeded (its link may start).
  bool compiles_done(std::int64_t build_id);
  /// Whether any unit of a build is queued or running.
  bool has_unfinished_units(std::int64_t build_id);
  /// Builds not in a final state, oldest first.
  std::vector<BuildRecord> active_builds();
  /// How many builds of `uid` are queued, running or paused.
  int open_builds_of(std::int64_t uid);
  /// The units of one build, up to `cap` (counting stops there).
  int unit_count(std::int64_t build_id, int cap);
  /// How many compiles `fad launch` of `uid` sent wait for admission.
  int waiting_launches_of(std::int64_t uid);
  /// Builds shown by `fad status`: active ones plus the `recent` newest finished ones.
  std::vector<BuildRecord> status_builds(int recent);
  /// Finished builds, newest first.
  std::vector<BuildRecord> finished_builds(int limit);
  /// Finished builds not yet pruned whose finished_at (RFC 3339) is at or
  /// before `finished_by`, oldest first. Never a queued, running or paused one.
  std::vector<BuildRecord> prunable_builds(const std::string& finished_by);
  /// What users opened at or after `since` (RFC 3339), oldest first: builds,
  /// and compiles their launchers recorded. uid: nullopt = fadd's own user.
  struct Opened {
    std::optional<std::int64_t> uid;
    std::string at;
    bool launch = false;
  };
  std::vector<Opened> opened_since(const std::string& since);
  /// Finished builds not yet pruned that are older than their owner's newest
  /// `keep` such builds, oldest first.
  std::vector<BuildRecord> builds_past_newest(int keep);
  /// Finished builds (pruned or not) older than their owner's newest `keep`
  /// finished builds (pruned or not), oldest first, at most `limit`: the
  /// records keep_records_per_user deletes once they are old enough.
  std::vector<BuildRecord> records_past_newest(int keep, int limit);
  /// Deletes a finished build's records: the build, its units and what
  /// `fad report` draws of them; returns the units deleted. The estimator's
  /// unit_history stays, and a build number is never given again
  /// (AUTOINCREMENT).
  int delete_build(std::int64_t id);
  /// The highest build number ever given (0 before the first).
  std::int64_t last_build_id();
  /// Records that a build's outputs and logs were deleted: marks it pruned
  /// and deletes its units' memory curves and events (what `fad report`
  /// draws) and command lines. The build and unit rows stay.
  void mark_pruned(std::int64_t id, const std::string& at);

  std::vector<UnitRecord> units(std::int64_t build_id);
  /// As units(), without each unit's command line (argv empty): what status
  /// and report show does not need it, and a build of 10,000 launches
  /// carries up to 16 KiB of it per unit, read on fadd's one event loop.
  std::vector<UnitRecord> unit_views(std::int64_t build_id);
  std::optional<UnitRecord> unit(std::int64_t unit_id);
  /// A build's units counted by state, its cache hits and archs (no current_bytes).
  UnitSummary unit_summary(std::int64_t build_id);
  /// The unit of a build with this name.
  std::optional<UnitRecord> unit_named(std::int64_t build_id, const std::string& name);

  void set_build_state(std::int64_t id, BuildState state, const std::optional<std::string>& finished_at,
                       const std::string& error = "");
  void set_build_artifact(std::int64_t id, const std::string& artifact);
  void raise_build_peak(std::int64_t id, std::uint64_t peak);

  /// queued -> running: records threads, estimate (and where it came from, an
  /// estimate_source_id), start time; attempts + 1.
  void start_unit(std::int64_t unit_id, int threads, std::uint64_t estimate, const std::string& started_at,
                  const std::string& estimate_source = "");
  /// The unit's process group and when its leader started (see LeftRunning).
  void set_unit_pgid(std::int64_t unit_id, std::int64_t pgid, std::optional<std::uint64_t> leader_start);
  /// The cluster node a unit runs on (Slurm executor); kept after it ends.
  void set_unit_node(std::int64_t unit_id, const std::string& node);
  /// Where a finished unit's peak was measured ("cgroup", "sstat", ...).
  void set_unit_peak_source(std::int64_t unit_id, const std::string& source);
  /// running -> succeeded/failed, with exit code, peak and duration; when `history`
  /// is given (a clean success), it is recorded in the same transaction.
  void finish_unit(std::int64_t unit_id, UnitState state, std::optional<int> exit_code, std::uint64_t peak,
                   double duration_s, const std::string& finished_at, const std::optional<HistoryRecord>& history);
  /// queued -> succeeded without running: its outputs came from the compile cache.
  void mark_unit_cached(std::int64_t unit_id, const std::string& at);
  /// running -> queued (stopped under pressure or by shutdown, or failed on a
  /// full disk): `attempt_peak` is shown as its latest attempt's peak, and
  /// `floor` kept as the least its next estimate may be.
  void requeue_unit(std::int64_t unit_id, std::uint64_t attempt_peak, std::uint64_t floor);
  /// Sets every queued (and, if `include_running`, running) unit of a build to `state`.
  int set_pending_units(std::int64_t build_id, UnitState state, bool include_running);
  /// A cancel, all or nothing: the build and its queued and running units
  /// cancelled in one transaction (half of it would leave a build whose link
  /// waits for ever for compiles that were cancelled).
  void cancel_build(std::int64_t build_id, const std::string& finished_at, const std::string& why);
  /// failed/cancelled -> queued for a build; returns how many.
  int requeue_failed_units(std::int64_t build_id);
  /// A tick's worth of wait reasons, by unit id, in one transaction.
  void set_wait_reasons(const std::map<std::int64_t, std::string>& reasons);

  /// At startup: units left running by a crash go back to the queue, but for
  /// those `keep` takes back (they stay running, as they were). Returns the
  /// process groups of all of them, so the daemon can kill the leftover
  /// compilers it started itself and continue launchers' ones it may have
  /// frozen. `keep` runs inside the transaction, before any row changes.
  std::vector<LeftRunning> recover_running_units(const std::function<bool(const LeftRunning&)>& keep = nullptr);

  void add_sample(const MemorySample& sample);
  /// Keeps at most `keep` daemon samples (oldest dropped).
  void trim_samples(int keep);
  std::vector<HistoryRecord> history();
  /// Deletes the history rows the estimator can never use: past the newest
  /// `keep` of each key and family (local rows newer than imported ones, as
  /// the estimator orders them). Then, in each scope (one per user, and the
  /// shared one) with more than `max_keys` distinct keys, every row of the
  /// keys last recorded longest ago, keys only imported first (an import
  /// never pushes out fadd's own measurements): a user launching compiles
  /// with ever new flags must not grow the table (read at every start)
  /// without end.
  /// Returns how many rows went.
  std::int64_t trim_history(std::size_t keep, std::size_t max_keys = SIZE_MAX);
  /// Shared-scope history records (what every user learns from; see
  /// UnitKey::scope) with an id above `after_id`, oldest first, at most `limit`.
  std::vector<HistoryRecord> history_page(std::int64_t after_id, int limit);
  /// Records an imported profile (origin "imported") unless the same key,
  /// threads and profile are already there; returns whether it was added.
  bool import_history(const HistoryRecord& record);

  // ---- Report data (store_report.cc).
  void add_unit_attempt(const UnitAttempt& attempt);
  void add_unit_event(const UnitEvent& event);
  /// A build's unit attempts and events, oldest first.
  std::vector<UnitAttempt> unit_attempts(std::int64_t build_id);
  std::vector<UnitEvent> unit_events(std::int64_t build_id);
  /// Machine samples taken from `from` to `to` (RFC 3339, inclusive), oldest first.
  std::vector<MemorySample> samples_between(const std::string& from, const std::string& to);
  /// Records when a build's first unit started; later calls keep the first time.
  void mark_build_started(std::int64_t build_id, const std::string& at);
  /// When the build's first unit started (RFC 3339); nullopt before that.
  std::optional<std::string> build_started_at(std::int64_t build_id);

  /// A value from the meta table (e.g. the boot id the pgids belong to).
  std::optional<std::string> meta(const std::string& key);
  void set_meta(const std::string& key, const std::string& value);

  /// How many times this Store marked a build finished since it was opened:
  /// what the once-a-minute keep passes ask before they rank every build
  /// again, since only a finished build can push another past a limit.
  std::uint64_t builds_finished() const { return builds_finished_; }

  Database& db() { return db_; }

 private:
  /// Finished builds past their owner's newest `keep`, ranked among the
  /// unpruned ones only or among all, oldest first, at most `limit` (-1: all).
  std::vector<BuildRecord> past_newest(int keep, bool count_pruned, int limit);
  void migrate();
  /// Installs the triggers behind take_changed_builds.
  void watch_queues();
  Database db_;
  std::string path_;
  dev_t dev_ = 0;
  ino_t ino_ = 0;
  std::uint64_t builds_finished_ = 0;
};

/// What to do with the damaged database at `path`: "recover it with 'sqlite3
/// PATH .recover | sqlite3 NEW.db' and move NEW.db in its place, or move it
/// away to start afresh" (said at a start that refuses it, and while fadd runs).
std::string damaged_database_advice(const std::string& path);

}  // namespace fad
