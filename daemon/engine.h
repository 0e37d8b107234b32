// The daemon's loop body: it owns no sockets and no timers. Each tick it samples
// memory, measures running units, asks the (pure) scheduler what to do and carries
// that out through the process launcher; requests from clients arrive as method
// calls. Deciding (Scheduler), doing (ProcessLauncher) and looping (Engine) stay apart.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/launch_protocol.h"
#include "common/protocol.h"
#include "daemon/clock.h"
#include "policy/estimator.h"
#include "daemon/memory_probe.h"
#include "daemon/model.h"
#include "daemon/process_launcher.h"
#include "policy/scheduler.h"
#include "daemon/store.h"
#include "daemon/toolchain.h"

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
};

/// Resolves a compiler name to its toolchain (probing it); a function so tests
/// can hand in a fixed toolchain without running anything.
using ToolchainLookup = std::function<Result<Toolchain>(const std::string& nvcc)>;

class Engine {
 public:
  Engine(EngineOptions options, Store& store, Clock& clock, MemoryProbe& probe, ProcessLauncher& launcher,
         ToolchainLookup toolchains);

  /// Crash recovery, run once before the first tick: units a previous fadd left
  /// running go back to the queue (their leftover compilers are killed), and the
  /// estimator relearns from the stored history.
  void recover();

  /// One pass of the loop. Never throws for a unit's or a client's fault.
  void tick();

  // ---- Requests (one per protocol message type). ----
  Response submit(const SubmitRequest& req);
  Response status(const StatusRequest& req);
  Response cancel(std::int64_t id);
  Response pause(std::int64_t id);
  Response resume(std::int64_t id);
  Response retry(std::int64_t id);
  Response logs(const LogsRequest& req);
  Response history(const HistoryRequest& req);
  // Compiles run by `fad launch` / `fad run` (engine_launch.cc).
  Response open_build(const OpenBuildRequest& req);
  Response close_build(const CloseBuildRequest& req);
  Response launch(const LaunchRequest& req);
  Response launch_poll(const UnitRequest& req);
  Response launch_started(const LaunchStartedRequest& req);
  Response launch_finished(const LaunchFinishedRequest& req);

  /// Stops admitting and stops every running unit; they are requeued as they exit.
  void begin_shutdown();
  /// True once nothing runs any more (after begin_shutdown: safe to exit).
  bool idle() const { return running_.empty(); }
  std::size_t running_count() const { return running_.size(); }

  /// Called whenever a unit ends or a build is submitted, so the loop can
  /// schedule at once instead of waiting for the next tick.
  void set_wake(std::function<void()> wake) { wake_ = std::move(wake); }

 private:
  enum class StopReason { none, requeue, cancel, shutdown };
  struct Running {
    UnitRecord unit;
    int pgid = 0;
    double started_at = 0;
    int threads = 1;
    Profile predicted;
    Profile measured;  ///< sampled each tick
    std::uint64_t current = 0;
    std::uint64_t peak = 0;
    bool suspended = false;  ///< by the scheduler, under memory pressure
    double suspended_at = 0;
    bool paused = false;  ///< by the user (fad pause)
    StopReason stop = StopReason::none;
    double stop_sent_at = 0;
    bool external = false;          ///< run by a launcher; pgid is 0 until it reports
    bool guess = false;             ///< admitted on the flat prior (the scheduler's margin)
    double gone_since = 0;          ///< external: when its process group was first seen gone
    std::string node;               ///< the cluster node it runs on ("" = this machine)
    std::vector<std::string> step;  ///< external on a cluster: what its launcher runs the compiler under
  };
  /// What the scheduler saw of one cluster node at the last pass (fad status).
  struct NodeView {
    std::uint64_t capacity = 0;
    std::uint64_t committed = 0;
  };

  void measure_running(double now);
  void schedule(double now, const MemorySnapshot& snap);
  /// The running units as the scheduler sees them; those on `node` only when given.
  std::vector<RunningUnit> running_view(double now, const std::string* node) const;
  /// Carries out a plan's decisions (starting units on `node`); wait reasons
  /// are written unless `reasons` collects them.
  void apply_plan(SchedulePlan& plan, std::map<std::int64_t, UnitRecord>& by_id,
                  const std::map<std::int64_t, std::uint64_t>& budgets, double now, const std::string& node,
                  std::map<std::int64_t, std::string>* reasons);
  /// A cluster executor's pass: each node scheduled on its own (engine_nodes.cc).
  void schedule_nodes(double now, const std::vector<ExecutorNode>& nodes, std::vector<QueuedUnit> queue,
                      std::map<std::int64_t, UnitRecord>& by_id, const std::map<std::int64_t, std::uint64_t>& budgets);
  json executor_json() const;
  void start_unit(const UnitRecord& unit, const Decision& d, double now, const std::string& node = "");
  void admit_external(const UnitRecord& unit, const Decision& d, double now, const std::string& node = "");
  void check_external(double now);
  void finalize_external(const BuildRecord& b, const std::string& why);
  void stop_unit(Running& r, StopReason reason, double now);
  void on_exit(std::int64_t unit_id, ExitInfo info);
  void finish_link(Running& r, bool ok);
  void update_build(std::int64_t build_id);
  void append_build_log(std::int64_t build_id, const std::string& text);
  std::string build_dir(std::int64_t id) const;
  std::vector<QueuedUnit> collect_queue(std::map<std::int64_t, UnitRecord>& by_id);
  json daemon_json();

  EngineOptions options_;
  Store& store_;
  Clock& clock_;
  MemoryProbe& probe_;
  ProcessLauncher& launcher_;
  ToolchainLookup toolchains_;
  Estimator estimator_;
  Scheduler scheduler_;
  std::map<std::int64_t, Running> running_;  ///< by unit id
  MemorySnapshot last_snapshot_;
  std::uint64_t last_capacity_ = 0;
  std::uint64_t last_committed_ = 0;
  double started_at_ = 0;
  std::uint64_t ticks_ = 0;
  bool shutting_down_ = false;
  std::function<void()> wake_;
  /// External units waiting for admission: when their launcher last asked.
  std::map<std::int64_t, double> last_poll_;
  /// Units stopped before their launcher started them; ended on the next tick.
  std::vector<std::int64_t> deferred_exits_;
  /// External builds: when a unit last arrived or ended (for closing idle ones).
  std::map<std::int64_t, double> last_activity_;
  /// Cluster nodes at the last scheduling pass, by name.
  std::map<std::string, NodeView> node_view_;
};

}  // namespace fad
