// The daemon's loop body: it owns no sockets and no timers. Each tick it samples
// memory, measures running units, asks the (pure) scheduler what to do and carries
// that out through the process launcher; requests from clients arrive as method
// calls. Deciding (Scheduler), doing (ProcessLauncher) and looping (Engine) stay apart.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/history_format.h"
#include "common/compile_cache.h"
#include "common/launch_protocol.h"
#include "common/protocol.h"
#include "daemon/disk_reserve.h"
#include "daemon/caller.h"
#include "policy/exit_outcome.h"
#include "daemon/clock.h"
#include "daemon/disk_space.h"
#include "daemon/hourly_allowance.h"
#include "daemon/lapsed_admissions.h"
#include "policy/estimator.h"
#include "daemon/memory_probe.h"
#include "daemon/model.h"
#include "daemon/queue_mirror.h"
#include "daemon/process_launcher.h"
#include "policy/scheduler.h"
#include "daemon/status_view.h"
#include "daemon/store.h"
#include "daemon/toolchain.h"
#include "daemon/tree_remover.h"

namespace fad {

struct EngineOptions {
  std::string state_dir;    ///< absolute
  std::string kernels_dir;  ///< absolute
  std::string nvcc = "nvcc";
  SchedulerConfig scheduler;
  EstimatorConfig estimator;
  /// Daemon memory samples kept in the database (one per sample_every ticks).
  int sample_every = 10;
  int samples_kept = 100000;
  /// Seconds between SIGTERM and SIGKILL when stopping a unit.
  double kill_grace_s = 5;
  /// fadd's effective uid. Root runs each user's compiles as that user; any
  /// other uid only compiles for itself.
  uid_t daemon_uid = 0;
  /// Finished builds older than this lose their outputs and logs (the
  /// `retention` key); nullopt: kept until `fad prune`.
  std::optional<std::int64_t> retention_s;
  /// How often the retention is applied: at the first tick, then this often.
  double retention_every_s = 86400;
  /// The compile cache for bundled units; max_bytes 0 = none.
  CacheSettings cache;
  /// Builds one user may have queued, running or paused at once (0 = no
  /// limit): every open build costs each tick, so one user's thousands would
  /// slow fadd for everyone.
  int max_builds_per_user = 32;
  /// Compiles one fad run (or launch session) build may record: a command
  /// that compiles without end (a loop of cache hits) would otherwise grow
  /// the database without bound, and every `fad status` reads an open
  /// build's units (0.1-0.15 s of fadd's loop at 10,000, measured on 2
  /// cores). Far above any CUDA library's nvcc count; past it, compiles run
  /// without fadd.
  int max_units_per_launch_build = 10000;
  /// Compiles one user's launchers may record per hour, in bursts of as
  /// many (0 = no limit; root is not limited). Every recorded compile stays in
  /// the database and its log on the state disk until the retention age, and
  /// the build cap alone does not bound them: a launch session build closes
  /// after 30 quiet seconds and the next launch opens another.
  int max_launches_per_user_per_hour = 10000;
  /// Finished builds of one user that keep their outputs and logs; older ones
  /// are pruned as the retention would (0 = no limit). A loop of submits that
  /// the compile cache finishes in seconds writes a library's objects each
  /// time: only this bounds what one user's builds hold on the state disk.
  int keep_builds_per_user = 100;
  /// Finished builds of one user whose records stay (fad history, fad
  /// status ID); older ones lose their outputs as above and then their rows
  /// (0 = no limit). Retention keeps a pruned build's rows, about 5 KB each:
  /// without this a user's loop of builds (600 an hour) grows the database
  /// by gigabytes a year.
  int keep_records_per_user = 10000;
  /// Builds one user may open per hour, in bursts of as many (0 = no limit;
  /// root is not limited): max_builds_per_user bounds what is open at once,
  /// and a build closed at once (submit and cancel, fad run of nothing) makes
  /// room for the next, each a row and a directory for good.
  int max_builds_per_user_per_hour = 600;
  /// Whether a directory's filesystem is nearly full (disk_space.h); a
  /// function so tests can fill a disk without filling one.
  std::function<bool(const std::string&)> disk_nearly_full = fad::disk_nearly_full;
  /// The largest file a unit may write (`unit_max_file_size`); 0 = no limit.
  std::uint64_t unit_max_file_size = 0;
  /// The reserve file fadd keeps on the state disk (disk_reserve.h): 0 = none.
  std::uint64_t disk_reserve_bytes = 0;
  /// The most a running unit's log may hold before fadd ends it
  /// (`unit_max_log_size`); 0 = no limit.
  std::uint64_t unit_max_log_size = 0;
  /// The longest a unit may compile before fadd ends it (`unit_time_limit`);
  /// 0 = no limit.
  double unit_time_limit_s = 0;
};

/// Resolves a compiler name to its toolchain (probing it, as the query's user)
/// and calls back on the loop, maybe later; a function so tests can hand in a
/// fixed toolchain without running anything.
using ToolchainLookup = std::function<void(const ToolchainQuery& query, ToolchainCallback done)>;

/// How a request answered later (a compiler probe first) delivers its response.
using Reply = std::function<void(Response)>;
/// The records of the units a scheduling pass considers, by id (in the queue mirror).
using QueuedRecords = std::map<std::int64_t, UnitRecord*>;

/// The compile cache's identity of a compiler fadd already probed (engine_cache.cc).
std::string probed_identity(const Toolchain& tc);

class Engine {
 public:
  /// Distinct units (exact keys) the history keeps per learning scope: far
  /// more than any real project compiles (FlashAttention's units times archs
  /// are a few thousand), few enough that a user launching compiles with ever
  /// new flags cannot grow it without end.
  static constexpr std::size_t kMaxHistoryKeysPerScope = 20000;
  /// Measurements the estimator holds now (they inform estimates).
  std::size_t known_observations() const { return estimator_.observation_count(); }

  Engine(EngineOptions options, Store& store, Clock& clock, MemoryProbe& probe, ProcessLauncher& launcher,
         ToolchainLookup toolchains);

  /// Crash recovery, run once before the first tick: units a previous fadd left
  /// running go back to the queue (their leftover compilers are killed), and the
  /// estimator relearns from the stored history.
  void recover();

  /// One pass of the loop. Never throws for a unit's or a client's fault.
  void tick();

  // ---- Requests (one per protocol message type). Each takes the Caller
  // ---- first: who asks decides what may be done (builds belong to their
  // ---- submitter; root may act on any).
  /// Answers through `done`, once the compiler was probed (off the loop).
  void submit(const Caller& caller, const SubmitRequest& req, Reply done);
  Response status(const Caller& caller, const StatusRequest& req);
  Response cancel(const Caller& caller, std::int64_t id);
  Response pause(const Caller& caller, std::int64_t id);
  Response resume(const Caller& caller, std::int64_t id);
  Response retry(const Caller& caller, std::int64_t id);
  Response logs(const Caller& caller, const LogsRequest& req);
  Response history(const Caller& caller, const HistoryRequest& req);
  /// Whether `caller` may stop fadd (root or fadd's own user); the daemon stops after an ok.
  Response shutdown(const Caller& caller);
  /// Deletes finished builds' STATE/builds/ID/ older than the request's age
  /// (or the retention): the caller's own builds, every user's for root; never
  /// an active build, never the estimator's history. The builds are marked
  /// and their trees moved to STATE/trash at once; `done` is called once the
  /// tree remover has deleted (or, for a dry run, measured) them.
  void prune(const Caller& caller, const PruneRequest& req, Reply done);
  /// How often fadd looks for builds past keep_builds_per_user (seconds): a
  /// user's loop of fast builds is cut back within this.
  static constexpr double kKeepCheckEveryS = 60;
  /// Who deletes pruned trees (tree_remover.h); inline until set. Also
  /// empties STATE/trash of what a stopped fadd left there.
  void set_tree_remover(TreeRemover remover);
  /// The data `fad report` draws: the build, its units' attempts with their
  /// memory samples, unit events and the machine samples over its life.
  Response report(const Caller& caller, std::int64_t id);
  /// A not_found answer for build `id`, saying so where keep_records_per_user deleted it.
  Response no_build(std::int64_t id);
  // Compiles run by `fad launch` / `fad run` (engine_launch.cc).
  Response open_build(const Caller& caller, const OpenBuildRequest& req);
  Response close_build(const Caller& caller, const CloseBuildRequest& req);
  Response launch(const Caller& caller, const LaunchRequest& req);
  Response launch_poll(const Caller& caller, const UnitRequest& req);
  Response launch_started(const Caller& caller, const LaunchStartedRequest& req);
  Response launch_finished(const Caller& caller, const LaunchFinishedRequest& req);

  /// Why fadd is not admitting units although it could (the database cannot
  /// be written: a full disk); empty when all is well. Shown by `fad status`.
  const std::string& storage_problem() const { return storage_problem_; }
  // Learnt profiles that travel (engine_history.cc). Anyone may export; only
  // root or fadd's own user may import (it steers every user's estimates).
  Response history_export(const Caller& caller, const HistoryExportRequest& req);
  Response history_import(const Caller& caller, const HistoryImportRequest& req);

  /// Stops admitting and stops every running unit; they are requeued as they exit.
  void begin_shutdown();
  /// True once nothing runs any more (after begin_shutdown: safe to exit).
  /// Units that ended but could not be recorded do not hold it up: the
  /// database still says running, so the next start requeues them.
  bool idle() const { return running_.empty(); }
  /// Ends of finished units, cancels and prune marks the database has not
  /// taken yet (a full disk): lost if fadd exits now.
  std::size_t unwritten_count() const {
    return unrecorded_.size() + unmarked_prunes_.size() + unrecorded_cancels_.size() + unrecorded_pauses_.size();
  }
  std::size_t running_count() const { return running_.size(); }

  /// Called whenever a unit ends or a build is submitted, so the loop can
  /// schedule at once instead of waiting for the next tick.
  void set_wake(std::function<void()> wake) { wake_ = std::move(wake); }
  /// Where the loop time of work done for a request after it was handed back
  /// (a submit's planning, once its compiler's probe answered) is charged, as
  /// the server charges the request itself (request_budget.h).
  using RequestCharge = std::function<void(uid_t, std::chrono::steady_clock::duration)>;
  void set_request_charge(RequestCharge charge) { charge_ = std::move(charge); }

 private:
  enum class StopReason { none, requeue, requeue_alone, cancel, shutdown };
  struct Running {
    UnitRecord unit;
    int pgid = 0;
    double started_at = 0;
    int threads = 1;
    Profile predicted;
    Profile measured;  ///< sampled each tick (wall time since started_at: what the report draws)
    Profile compiled;  ///< the same in compile time, frozen spells left out: what is learnt
    std::uint64_t current = 0;
    std::uint64_t peak = 0;
    bool suspended = false;  ///< by the scheduler, under memory pressure
    double suspended_at = 0;
    bool paused = false;  ///< by the user (fad pause)
    StopReason stop = StopReason::none;
    double stop_sent_at = 0;
    bool external = false;             ///< run by a launcher; pgid is 0 until it reports
    bool guess = false;                ///< admitted on the flat prior (the scheduler's margin)
    bool duration_guessed = false;     ///< its predicted duration is a guess: no ETA rests on it
    double gone_since = 0;             ///< external: when its process group was first seen gone
    std::uint64_t leader_start = 0;    ///< external: its group leader's start time (see group_is_ours)
    bool killed = false;               ///< SIGKILL sent (once: the group may be reused)
    bool log_over = false;             ///< ended by fadd: its log passed unit_max_log_size
    double time_over_at = 0;           ///< when fadd ended it for passing unit_time_limit; 0: it did not
    double started_epoch = 0;          ///< started_at as epoch seconds, for reports
    int attempt = 1;                   ///< which run of the unit this is
    std::uint64_t estimate_bytes = 0;  ///< the peak it was admitted with
    std::string node;                  ///< the cluster node it runs on ("" = this machine)
    std::string temp_dir;              ///< its TMPDIR, deleted when it ends ("" = none of its own)
    uid_t owner = 0;                   ///< its build's owner, in whose turn the tree remover deletes its leftovers
    std::vector<std::string> step;     ///< external on a cluster: what its launcher runs the compiler under
    /// External: the launcher that was told it may start (none when fadd
    /// cannot see it), so that a launcher that died before starting its
    /// compiler frees its admission at once, not after kStartTimeoutS, and
    /// one that died while its compiler runs has it ended.
    std::optional<ProcessStamp> launcher;
    double launcher_gone_since = 0;  ///< external, compiling: when its launcher was first seen gone
    /// Its compiler was stopped by someone else than fadd (Ctrl-Z in the
    /// build that launched it): it holds its memory but no core.
    bool stopped_by_user = false;
    /// Started, but its job or step waits in a cluster's queue: its compiler
    /// has not started yet.
    bool pending = false;
    /// Admitted by a previous fadd and taken back at start (take_back): what
    /// this fadd saw of it misses its start, so nothing is learnt from it.
    bool taken_back = false;
    double taken_back_at = 0;  ///< when (this fadd's clock)
    /// Time it spent frozen (suspended, paused, stopped by its user, or
    /// pending in a cluster's queue) is no compile time: not in its duration, its samples' times or its place
    /// in its predicted profile, so a pause teaches no longer unit.
    double frozen_s = 0;      ///< freezes that ended
    double frozen_since = 0;  ///< when the current one began; 0: not frozen
    /// Call after suspended, paused, stopped_by_user or pending may have changed.
    void note_frozen(double now);
    /// Seconds it has compiled since it started.
    double run_time(double now) const;
    /// When fadd asked its group to end (a stop, or past unit_time_limit),
    /// after which it is killed; nullopt: fadd did not.
    std::optional<double> asked_to_end_at() const;
  };
  /// A unit that ended, with what its end means, until the database has it.
  struct Ended {
    Running run;
    ExitInfo info;
    double duration = 0;
    std::string finished_at;
    ExitOutcome outcome;                   ///< what becomes of the unit (policy/exit_outcome.h)
    bool ok = false;                       ///< a clean success (a link also published its output)
    std::optional<Observation> learned;    ///< what the estimator learns once recorded
    std::optional<HistoryRecord> history;  ///< the same, as stored
    bool recorded = false;                 ///< the unit's own row is written
    bool launched = true;                  ///< false: it never ran (no exit code to record)
  };
  /// What the scheduler saw of one cluster node at the last pass (fad status).
  struct NodeView {
    std::uint64_t capacity = 0;
    std::uint64_t committed = 0;
  };

  void measure_running(double now);
  /// Ends running units whose log has passed unit_max_log_size.
  void stop_flooding_units();
  /// Ends running units that have compiled longer than unit_time_limit.
  void stop_overdue_units(double now);
  void schedule(double now, const MemorySnapshot& snap);
  /// The running units as the scheduler sees them; those on `node` only when given.
  std::vector<RunningUnit> running_view(double now, const std::string* node) const;
  /// Carries out a plan's decisions (starting units on `node`); wait reasons
  /// are written unless `reasons` collects them.
  void apply_plan(SchedulePlan& plan, QueuedRecords& by_id, double now, const std::string& node,
                  std::map<std::int64_t, std::string>* reasons);
  /// A cluster executor's pass: each node scheduled on its own (engine_nodes.cc).
  void schedule_nodes(double now, const std::vector<ExecutorNode>& nodes, std::vector<QueuedUnit> queue,
                      QueuedRecords& by_id, const std::map<std::int64_t, std::uint64_t>& budgets,
                      const std::string& hold);
  json executor_json() const;
  void start_unit(const UnitRecord& unit, const Decision& d, double now, const std::string& node = "");
  void admit_external(const UnitRecord& unit, const Decision& d, double now, const std::string& node = "");
  Response record_cached_launch(const BuildRecord& build, const UnitRecord& unit, std::int64_t unit_id,
                                const LaunchRequest& req);
  /// Writes the unit's log head: the launcher's call and `note`, owned by the build's owner.
  void log_launch_call(const BuildRecord& build, const UnitRecord& u, const LaunchRequest& req,
                       const std::string& note);
  void check_external(double now);
  /// The UnitKey::scope of units whose key or compiler `caller` chose.
  std::string learning_scope(const Caller& caller) const;
  /// Whether that very process still runs (a fad run's opener, a launcher):
  /// a pid the kernel gave to a later process is not it.
  bool process_alive(const ProcessStamp& process);
  /// At start: a launcher's compile a previous fadd admitted, still running
  /// (recover checked its group is the same): running again here, accounted
  /// for as if this fadd had admitted it.
  void take_back(const LeftRunning& left);
  /// The process `pid` as fadd can tell it apart later; none when it cannot see it.
  std::optional<ProcessStamp> stamp_of(int pid);
  void observe_running(double now);
  /// Ends a fad run build: succeeded when `why` is empty and no compile
  /// failed; else failed, or cancelled when its command was interrupted.
  void finalize_external(const BuildRecord& b, const std::string& why, bool cancelled = false);
  void stop_unit(Running& r, StopReason reason, double now);
  void on_exit(std::int64_t unit_id, ExitInfo info);
  void prepare_end(Ended& e);
  void commit_end(std::int64_t unit_id, Ended& e);
  void record_end(std::int64_t unit_id, Ended e);
  /// The end of a unit whose start could not go through: nothing ran.
  Ended never_started(const UnitRecord& unit, double now, ExitOutcome::Action action);
  void retry_unrecorded();
  void retry_unrecorded_cancels();
  void retry_unmarked_prunes();
  /// Refills the hourly allowances from what users opened in the last hour.
  void restore_allowances();
  /// When a build was pruned, counting a prune whose mark is not written yet.
  std::optional<std::string> pruned_on(const BuildRecord& b) const;
  /// Shows units in unrecorded_ as they ended, in a status about to be sent.
  void overlay_unrecorded(std::vector<UnitRecord>& units) const;
  /// A running unit fadd is ending with a cancel: it will be written cancelled.
  bool ending_for_good(std::int64_t unit_id) const;
  void storage_failed(const std::string& what);
  void storage_ok();
  /// Runs `write`; a StoreError it throws (a full disk) is noted, not raised.
  template <class F>
  void best_effort(F&& write) {
    try {
      write();
    } catch (const StoreError& e) {
      storage_failed(e.what());
    }
  }
  /// nullopt when `caller` may act on build `b` (`verb` for the message), else the refusal.
  std::optional<Response> refuse_unless_owner(const Caller& caller, const BuildRecord& b, const char* verb);
  /// refuse_unless_owner for the build of unit `unit_id` (nullopt when there is no such unit).
  std::optional<Response> refuse_unless_unit_owner(const Caller& caller, std::int64_t unit_id, const char* verb);
  /// nullopt when fadd may run compiles for `caller`, else the refusal.
  std::optional<Response> refuse_compiles_for(const Caller& caller);
  /// A new build past options_.max_builds_per_user, or past this hour's
  /// max_builds_per_user_per_hour, for this caller: refused.
  std::optional<Response> refuse_over_build_limit(uid_t owner);
  /// The refusal once `uid` (not root) has used up `allowance` for now:
  /// "USER<did> one user may in an hour (KEY = N); <then> AGE".
  std::optional<Response> refuse_past_allowance(const HourlyAllowance& allowance, uid_t uid, const std::string& did,
                                                const std::string& key, const std::string& then) const;
  /// Whether the unit's process-group id still names the group it started.
  bool group_is_ours(const Running& r);
  /// Signals the unit's process group, unless its id now names another's.
  void signal_unit(const Running& r, int sig);
  uid_t owner_of(const BuildRecord& b) const { return b.uid ? static_cast<uid_t>(*b.uid) : options_.daemon_uid; }
  /// Names a build object's owner ("uid", "user"), as status and report show it.
  void add_owner(json& j, const BuildRecord& b) const;
  /// Who a build's compiles run as: its owner when fadd is root and the owner is not.
  std::optional<Credentials> run_as(const BuildRecord& b);
  void finish_submit(const Caller& caller, const SubmitRequest& req, const std::vector<Arch>& archs,
                     Result<Toolchain> tc, const Reply& done);
  /// A build as status shows it, with its owner; with a unit list of at most
  /// `unit_list_bytes` (the rest counted in "units_left_out") when not 0.
  json owned_build_json(const BuildRecord& b, std::size_t unit_list_bytes = 0);
  /// `b`'s state as its owner asked it, where the database has not taken it yet.
  std::string shown_state(const BuildRecord& b) const;
  /// A build's units counted for a listing, as overlay_unrecorded shows them.
  UnitSummary listed_summary(const BuildRecord& b);
  void update_build(std::int64_t build_id);
  // The compile cache (engine_cache.cc).
  void restore_cached_units(std::int64_t build_id);
  std::vector<std::string> cache_args(const UnitRecord& unit) const;
  void store_cached(const UnitRecord& unit, double started_at);
  void append_build_log(std::int64_t build_id, const std::string& text);
  void apply_retention(double now);
  /// Prunes each user's finished builds past their newest keep_builds_per_user,
  /// then applies keep_records_per_user.
  void apply_keep_limit(double now);
  /// Deletes the records of each user's finished builds past their newest
  /// keep_records_per_user (pruning their files first), a bounded number per
  /// call, never of a build that finished within kRecordsKeptS.
  void apply_record_limit(double now);
  static constexpr std::int64_t kRecordsKeptS = 3600;
  /// One pass's share (a build may hold 10,000 units, each a few rows): the
  /// rest waits for the next pass, a minute later, so the event loop is never
  /// held for long.
  static constexpr int kRecordsPerPass = 256;
  static constexpr int kRecordUnitsPerPass = 20000;
  /// Moves `candidates`' trees to the trash (those of the caller's, unless
  /// root, and not still stopping compilers), marks them pruned and deletes
  /// them off the loop; answers {"dry_run", "bytes", "builds"}. `why` is for
  /// the log ("older than 30d ...").
  void prune_builds(const Caller& caller, std::vector<BuildRecord> candidates, bool dry_run, const std::string& why,
                    Reply done);
  std::optional<double> last_keep_check_;
  // Both keep passes rank every finished build, and only a build that
  // finishes pushes another past a limit (or time, for a record too recent
  // to delete): an idle fadd does not rank them again each minute.
  std::optional<std::uint64_t> keep_seen_finished_;  // Store::builds_finished at the last look
  bool keep_builds_again_ = true;
  double records_due_ = 0;  // when (now) apply_record_limit looks next
  /// Learns anew from the history table (at start, and after a trim dropped
  /// rows); returns the rows learned.
  std::size_t load_history();
  void trim_history();
  std::string build_dir(std::int64_t id) const;
  std::string trash_dir() const { return options_.state_dir + "/trash"; }
  /// Moves build directories no build of the database owns into the trash.
  void discard_stale_build_dirs();
  /// A unit's TMPDIR, for the compiler's temporary files; "" on a cluster
  /// node, where the state dir may not be.
  std::string unit_temp_dir(const UnitRecord& unit, int attempt, const std::string& node) const;
  /// Moves `dirs` (what ended compilers of `owner`'s build left, or nothing)
  /// to the trash and deletes them there, in `owner`'s turn: a user's
  /// leftovers must not jump the queue root's prunes have.
  void discard_temp_dirs(std::vector<std::string> dirs, uid_t owner);
  /// The units ready to be scheduled, from the queue mirror; `by_id` points at their records.
  std::vector<QueuedUnit> collect_queue(double now, QueuedRecords& by_id);
  /// Writes the wait reasons that differ from what the units' rows already
  /// say (in one transaction), and notes them in the records.
  void write_wait_reasons(const std::map<std::int64_t, std::string>& reasons, QueuedRecords& by_id);
  /// Why a queued unit waits now: its row's reason, unless the database
  /// cannot be written, which holds every unit and could not be written there.
  std::string wait_reason_now(const UnitRecord& unit) const;
  std::vector<QueuedUnit> fair_queue(std::vector<QueuedUnit> queue, const std::vector<BuildRecord>& builds);
  json daemon_json();
  /// Epoch seconds now, with the monotonic clock's resolution.
  double epoch_now() const { return epoch_anchor_ + clock_.now(); }
  /// Stores a finished attempt's span and thinned samples for reports; never
  /// throws (held and written again each tick when the database refuses it).
  void record_attempt(const Running& r, const char* outcome, std::uint64_t peak);
  void record_event(std::int64_t unit_id, const char* kind, const std::string& detail = {});
  QueuedUnit queued_unit(const UnitRecord& u) const;
  /// Live view of the running units among `units` for status JSON.
  LiveUnits running_live(const std::vector<UnitRecord>& units);
  /// The estimate of one of `b`'s queued units, for the rows a status or report sends.
  QueuedLive queued_live(const BuildRecord& b);

  EngineOptions options_;
  Store& store_;
  Clock& clock_;
  MemoryProbe& probe_;
  ProcessLauncher& launcher_;
  ToolchainLookup toolchains_;
  TreeRemover remove_trees_ = inline_tree_remover();
  std::uint64_t trash_serial_ = 0;  ///< keeps names in the trash apart
  /// Users (not root) with a prune at the tree remover: one each, so one
  /// user's prunes (a dry run counts a tree of any size) cannot queue up
  /// ahead of everyone else's and the retention.
  std::set<uid_t> pruning_;
  std::unique_ptr<CompileCache> cache_;  ///< null when off or unusable
  /// Bundled builds served by the compile cache: their compiler's identity
  /// (probed_identity), dropped once the build is final.
  std::map<std::int64_t, std::string> cache_identity_;
  Estimator estimator_;
  bool history_loaded_ = false;  ///< load_history() ran (recover())
  Scheduler scheduler_;
  QueueMirror queue_mirror_;
  std::map<std::int64_t, Running> running_;   ///< by unit id
  std::map<std::int64_t, Ended> unrecorded_;  ///< ended, database write failed: retried each tick
  /// Builds cancelled while the database could not take it (a full disk):
  /// their compilers were stopped; the cancel is written first each tick,
  /// and their units' ends only after it (a unit recorded cancelled in a
  /// build still running would leave its link waiting for ever).
  std::map<std::int64_t, std::string> unrecorded_cancels_;  ///< build id -> when
  /// Pauses (true) and resumes (false) the database could not take: acted
  /// on at once (compilers frozen or thawed, the queue held or let go) and
  /// written each tick. Lost if fadd stops first: the build is then as last
  /// recorded.
  std::map<std::int64_t, bool> unrecorded_pauses_;
  /// Whether `b` is paused: as asked, where the database has not taken it yet.
  bool paused(const BuildRecord& b) const;
  /// Records a pause or a resume of `b`, or keeps it for retry_unrecorded_pauses()
  /// when the database refuses; whether it is recorded.
  bool record_pause(const BuildRecord& b, bool pause);
  void retry_unrecorded_pauses();
  /// Attempt rows (reports only) the database did not take: written after
  /// the ends, oldest first; past kMaxHeldAttempts the oldest are dropped.
  std::deque<UnitAttempt> unwritten_attempts_;
  static constexpr std::size_t kMaxHeldAttempts = 4096;
  void retry_unwritten_attempts();
  /// Builds whose trees a prune deleted but whose mark the database did not
  /// take (a full disk): when, by build id; retried each tick.
  std::map<std::int64_t, std::string> unmarked_prunes_;
  /// Lost runs per unit while it is not done (kMaxLostRuns), since this fadd
  /// started: a restart gives a cycling unit a few more runs, not for ever.
  std::map<std::int64_t, int> lost_runs_;
  std::string storage_problem_;
  /// The storage problem is a full disk, not (say) another program's lock.
  bool storage_disk_full_ = false;
  std::optional<DiskReserve> reserve_;  ///< set when disk_reserve_bytes > 0
  double reserve_tried_at_ = -1e9;      ///< when the reserve was last made (or tried)
  bool reserve_spent_ = false;          ///< deleted for room, not made again yet: nothing new starts
  static constexpr double kReserveRetryS = 60;
  /// The log's view of storage trouble: whether it was said (and not its
  /// end yet), when last said, when a write last failed.
  bool storage_trouble_said_ = false;
  double storage_said_at_ = 0;
  double storage_failed_at_ = 0;
  static constexpr double kStorageRepeatS = 300;
  /// Writes going through this long end a spell of trouble in the log.
  static constexpr double kStorageSettledS = 10;
  void say_storage_recovered(double now);
  /// Makes the reserve file again once the disk has room (each minute at most).
  void keep_reserve(double now);
  /// Set once the database file was seen deleted, replaced, emptied or damaged (said in status).
  std::string database_replaced_;
  bool database_damaged_ = false;  ///< database_replaced_ says it is damaged: nothing more to find
  double database_checked_at_ = 0;
  static constexpr double kDatabaseCheckS = 10;
  void check_database_file(double now);
  /// Group lists by (uid, gid), with when they were looked up.
  std::map<std::pair<uid_t, gid_t>, std::pair<double, Credentials>> credentials_cache_;
  MemorySnapshot last_snapshot_;
  std::uint64_t last_capacity_ = 0;
  std::uint64_t last_committed_ = 0;
  double started_at_ = 0;
  double epoch_anchor_ = 0;  ///< epoch seconds minus the monotonic clock, fixed at start
  std::uint64_t ticks_ = 0;
  bool shutting_down_ = false;
  std::function<void()> wake_;
  RequestCharge charge_;
  /// An external unit waiting for admission: when its launcher last asked,
  /// and which process that launcher is (none: fadd cannot see it, e.g. it
  /// runs in another pid namespace).
  struct WaitingLaunch {
    double last_poll = 0;
    std::optional<ProcessStamp> launcher;
  };
  std::map<std::int64_t, WaitingLaunch> waiting_launches_;
  /// Compiles each user's launchers may still have recorded this hour.
  /// Directories where a compile just failed for want of space: nothing
  /// starts while one is still nearly full, or the rerun meant for "once
  /// there is room" would fail the same way at once (SQLite may still have
  /// free pages, so the database alone does not stop admission).
  std::set<std::string> disk_hold_;
  /// Forgets held directories that have room again; the first still full, or "".
  std::string still_full_dir();
  /// Why no unit may start now though memory and cores would allow it (the
  /// database cannot be written, a compile's disk is full, the reserve file is
  /// spent): the scheduler's `hold`; "" when units may start. Notes in
  /// hold_warning_ what `fad status` says of it.
  std::string start_hold();
  /// A full disk that holds every start, as `fad status` warns of it ("" when none).
  std::string hold_warning_;
  HourlyAllowance launch_allowance_;
  /// Builds each user may still open this hour (submit, retry, fad run, a launch session).
  HourlyAllowance build_allowance_;
  /// Launched compiles fadd dropped though nobody cancelled them, and why:
  /// waiting or admitted when fadd restarted, or waiting while their launcher
  /// (one fadd cannot see) did not ask for kPollTimeoutS. A launcher still
  /// asking about one is told so, and launches it again: neither must fail
  /// a build. The newest kMaxDroppedUnasked are kept.
  std::map<std::int64_t, std::string> dropped_unasked_;
  void note_dropped_unasked(std::int64_t unit_id, std::string why);
  /// Whether a waiting unit's launcher has not asked for kQuietPollS.
  bool launcher_quiet(std::int64_t unit_id, double now) const;
  LapsedAdmissions lapses_;
  /// Counts a lapse of `user`'s, and says so in the log when it holds them.
  void note_lapse(uid_t user, double now);
  /// Why a launched compile of a lapsing `user` is not admitted now; "" when
  /// it may be. `pending`: the user has an admission whose compiler has not
  /// started.
  std::string lapse_hold(uid_t user, double now, bool pending) const;
  /// When check_external last ran (each tick): a long gap means fadd itself
  /// was stopped (SIGSTOP, a suspended VM), and launchers could not ask.
  double last_external_check_ = 0;
  /// Units stopped before their launcher started them; ended on the next tick.
  std::vector<std::int64_t> deferred_exits_;
  /// External builds: when a unit last arrived or ended (for closing idle ones).
  std::map<std::int64_t, double> last_activity_;
  /// When each open build last had a unit started: fair share's tie-break,
  /// so that users who hold nothing take turns (one slot, or memory for one).
  std::map<std::int64_t, double> last_started_;
  /// When the retention last ran (monotonic seconds).
  std::optional<double> last_retention_;
  double last_history_trim_ = 0;  ///< clock_.now() of the last trim_history()
  /// Queued units' estimates as of the last decision (fad status, progress ETAs).
  std::map<std::int64_t, Forecast> forecasts_;
  /// Units stopped as the last one running while the machine was short: they rerun alone.
  std::set<std::int64_t> alone_;
  /// Cluster nodes at the last scheduling pass, by name.
  std::map<std::string, NodeView> node_view_;
  /// Per node: when its scheduler last stopped a unit with the OOM killer near
  /// (a stopped step leaves the running list before its memory is freed).
  std::map<std::string, double> node_critical_stop_;
};

}  // namespace fad
