// The daemon loop body: measuring, scheduling and carrying decisions out.
// Client requests live in engine_requests.cc.
#include "daemon/engine.h"
#include "daemon/root_only_path.h"

#include <signal.h>

#include <algorithm>
#include <utility>
#include <filesystem>

#include <spdlog/spdlog.h>

#include "common/duration.h"
#include "common/exit_status.h"
#include "common/file_read.h"
#include "common/size.h"
#include "common/text.h"
#include "daemon/build_files.h"
#include "daemon/disk_space.h"
#include "common/time_text.h"
#include "daemon/planner.h"
#include "policy/exit_outcome.h"
#include "policy/fair_share.h"
#include "policy/spikes.h"

namespace fad {

namespace fs = std::filesystem;

namespace {

/// Every queued unit's wait reason while the database cannot be written.
constexpr std::string_view kCannotRecord = "fadd cannot write its database (disk full?); see 'fad status'";
// A running unit's measured profile is thinned once it grows past this, so a
// unit compiling for hours costs bounded memory.
constexpr std::size_t kMaxProfilePoints = 2000;
// The link step is small next to compiles; this is its prior.
// (Its duration is a guess: no ETA rests on it, and the link's measured time
// replaces it from the next build on.)
constexpr ManifestPrior kLinkPrior{512ull << 20, 30, true};
// How much of a unit's compiler output is copied into the build log; the
// unit's own log keeps all of it.
constexpr std::size_t kLogExcerptBytes = 256 * 1024;

std::string boot_id() { return read_small_file("/proc/sys/kernel/random/boot_id"); }

/// The key a unit is estimated and learnt under: a link is one process
/// whatever the arch count.
UnitKey estimate_key(const UnitRecord& u) {
  UnitKey k = unit_key(u);
  if (u.kind == UnitKind::link) k.arch_count = 1;
  return k;
}

std::optional<FileOwner> file_owner(const std::optional<Credentials>& creds) {
  if (!creds) return std::nullopt;
  return FileOwner{creds->uid, creds->gid};
}

/// ", exit code N" (", killed by signal N (SIGNAME)") for a failed unit,
/// with the cause where fad set it: the kernel's SIGXFSZ, or fadd's own
/// SIGKILL, alone tells a user nothing.
/// `log_over`, `time_over`: fadd ended it for its log's size, for its time.
std::string failure_text(const ExitInfo& info, bool log_over, bool time_over, const EngineOptions& options) {
  if (info.unreported) return ", its launcher did not report how it ended";
  if (info.lost && !log_over && !time_over)
    return ", its Slurm step was lost (its node or allocation went away) " + std::to_string(kMaxLostRuns) +
           " times; fad stopped running it again";
  std::string text =
      ", " + (info.signaled ? exit_status_text(info.exit_code) : "exit code " + std::to_string(info.exit_code));
  if (log_over)
    text += ": its output passed unit_max_log_size (" + format_size(options.unit_max_log_size) + ")";
  else if (time_over)
    text += ": it compiled longer than unit_time_limit (" +
            format_age(static_cast<std::int64_t>(options.unit_time_limit_s)) + ")";
  else if (info.signaled && info.exit_code == 128 + SIGXFSZ && options.unit_max_file_size > 0)
    text += ": it wrote a file past unit_max_file_size (" + format_size(options.unit_max_file_size) + ")";
  return text;
}
}  // namespace

Engine::Engine(EngineOptions options, Store& store, Clock& clock, MemoryProbe& probe, ProcessLauncher& launcher,
               ToolchainLookup toolchains)
    : options_(std::move(options)),
      store_(store),
      clock_(clock),
      probe_(probe),
      launcher_(launcher),
      toolchains_(std::move(toolchains)),
      estimator_(options_.estimator),
      scheduler_(options_.scheduler, estimator_),
      started_at_(clock.now()),
      epoch_anchor_(parse_rfc3339(clock.wall()).value_or(0) - clock.now()),
      launch_allowance_(options_.max_launches_per_user_per_hour),
      build_allowance_(options_.max_builds_per_user_per_hour) {
  if (options_.disk_reserve_bytes > 0)
    reserve_.emplace(options_.state_dir + "/reserve", options_.disk_reserve_bytes);
  else  // turned off: what an earlier fadd kept is given back
    DiskReserve(options_.state_dir + "/reserve", 0).release();
  if (options_.cache.max_bytes > 0) {
    // Root restores what the cache holds into its own builds: only a cache
    // no one else can write may serve it (root_only_path.h). Judged before
    // opening it: opening creates and changes files in it, as root.
    const auto trusted_dir = [this] {
      return options_.daemon_uid == 0 ? only_root_can_write(options_.cache.dir) : ok_status();
    };
    if (auto trusted = trusted_dir(); !trusted) {
      spdlog::warn(
          "compiling without the compile cache: fadd runs as root and {}; set cache_dir to a directory "
          "only root can write, or cache_size to 0",
          trusted.error());
    } else if (auto cache = CompileCache::open(options_.cache)) {
      // Once more if it was just created: a umask may have let the group in.
      if (auto still = trusted_dir(); still)
        cache_ = std::move(*cache);
      else
        spdlog::warn("compiling without the compile cache: fadd runs as root and {}", still.error());
    } else {
      spdlog::warn("compiling without the compile cache: {}", cache.error());
    }
  }
}

void Engine::recover() {
  // Process groups are only meaningful within the boot that created them.
  const auto boot = boot_id();
  const bool same_boot = !boot.empty() && store_.meta("boot_id") == boot;
  std::vector<LeftRunning> taken_back;
  // Signalled once the database says what became of them: a start that
  // fails before leaves every group as it was for the next one.
  std::vector<int> to_continue, to_kill;
  store_.recover_running_units([&](const LeftRunning& left) {
    if (!same_boot || left.pgid <= 1) return false;
    // Its compiler may have ended since, and the kernel may have given its
    // id to someone else's process: a leader running as another user than
    // the unit ran as is not signalled.
    const int pgid = static_cast<int>(left.pgid);
    const auto build = store_.build(left.build_id);
    const auto creds = build ? run_as(*build) : std::nullopt;
    const unsigned ran_as = left.external && build ? owner_of(*build) : creds ? creds->uid : options_.daemon_uid;
    // fadd's own leader died with the previous fadd (its parent-death
    // signal), so a live one is another process given the id since, unless
    // its start time says otherwise; without a leader the members may still
    // be another user's new group whose leader has exited (a shell
    // pipeline): fadd, often root, never signals those.
    const auto leader = launcher_.process_info(pgid);
    if (leader && (leader->uid != ran_as ||
                   (left.leader_start && static_cast<std::int64_t>(leader->start_ticks) != *left.leader_start))) {
      spdlog::warn("not signalling process group {}: a previous fadd's compiler had that id, now {} has it", pgid,
                   leader->uid != ran_as ? user_name(leader->uid) + "'s process" : "a process started since");
      return false;
    }
    const auto owners = launcher_.group_owners(pgid);
    if (auto other = std::find_if(owners.begin(), owners.end(), [&](unsigned uid) { return uid != ran_as; });
        other != owners.end()) {
      spdlog::warn(
          "not signalling process group {}: a previous fadd's compiler had that id, now {}'s processes have it", pgid,
          user_name(*other));
      return false;
    }
    if (left.external) {
      // A launcher's compile runs on without fadd, but one fadd froze
      // (memory pressure, fad pause) would wait for a SIGCONT from it for
      // ever, and its build tool with it: a SIGTERM'd fadd continues them,
      // a crashed one cannot.
      if (!leader || !left.leader_start) return false;
      to_continue.push_back(pgid);
      // Its launcher reports its end to whichever fadd listens: this one
      // takes it back, so its memory counts in admission from now on, not
      // only once it shows in what the machine has left. (A step on a
      // cluster node is the executor's, which has no record of it.)
      const auto unit = store_.unit(left.unit_id);
      if (!unit || !build || !unit->node.empty()) return false;
      taken_back.push_back(left);
      return true;
    }
    to_kill.push_back(pgid);
    return false;
  });
  for (const int pgid : to_continue) {
    spdlog::warn("continuing launched compile process group {} a previous fadd may have stopped", pgid);
    launcher_.signal_group(pgid, SIGCONT);
  }
  for (const int pgid : to_kill) {
    spdlog::warn("killing compiler process group {} left running by a previous fadd", pgid);
    launcher_.signal_group(pgid, SIGKILL);
  }
  if (!boot.empty()) store_.set_meta("boot_id", boot);
  // After the leftover compilers are killed: they wrote in their TMPDIRs.
  best_effort([&] { discard_stale_build_dirs(); });
  trim_history();
  const std::size_t learned = load_history();
  for (const auto& left : taken_back) take_back(left);
  restore_allowances();
  for (const auto& b : store_.active_builds()) {
    if (b.kind == "external") {
      // Their launchers lost fadd and ran the compilers directly; the build
      // stays open, for its fad run to close (or until it is gone), or until
      // a launch session's quiet spell (check_external): a launcher still
      // waiting, and the build tool's next compiles, join it again. What
      // became of those compiles is their build tool's to say: recorded
      // cancelled, not failed, and the build log says why. (Running ones are
      // queued again by now, but for those taken back.)
      const auto pending = store_.queued_units(b.id);
      const int left = static_cast<int>(pending.size());
      for (const auto& u : pending) note_dropped_unasked(u.id, "fadd restarted");
      store_.set_pending_units(b.id, UnitState::cancelled, false);
      if (left > 0)
        append_build_log(b.id, "fadd restarted: " + std::to_string(left) +
                                   " compile(s) it had not seen end were left to their launchers; recorded as "
                                   "cancelled (a launcher still waiting launches its compile again; the others' "
                                   "outcome is the build tool's)\n");
    }
    update_build(b.id);
  }
  last_snapshot_ = probe_.sample();
  spdlog::info("recovered state: {} active builds, {} history records", store_.active_builds().size(), learned);
}

void Engine::take_back(const LeftRunning& left) {
  const auto unit = store_.unit(left.unit_id);
  const auto build = unit ? store_.build(unit->build_id) : std::nullopt;
  if (!unit || !build) return;  // checked inside recover's transaction
  const double now = clock_.now();
  Running r;
  r.unit = *unit;
  r.external = true;
  r.pgid = static_cast<int>(left.pgid);
  r.leader_start = static_cast<std::uint64_t>(left.leader_start.value_or(0));
  r.threads = std::max(1, unit->threads);
  r.estimate_bytes = unit->estimate_bytes;
  r.attempt = std::max(1, unit->attempts);
  r.owner = owner_of(*build);
  // What is known now of a unit like it; never below what it was admitted
  // with, which the scheduler it was admitted by had room for.
  const auto q = queued_unit(*unit);
  const Estimate est = estimator_.estimate(q.key, r.threads, q.manifest_prior);
  r.predicted = est.profile;
  r.predicted.lift_peak_to(unit->estimate_bytes);
  r.guess = est.source == EstimateSource::prior;
  r.duration_guessed = est.duration_guessed;
  // It started under the previous fadd: its place in its profile counts from then.
  const auto began = unit->started_at ? parse_rfc3339(*unit->started_at) : std::nullopt;
  r.started_epoch = began ? std::min<double>(*began, epoch_now()) : epoch_now();
  r.started_at = now - (epoch_now() - r.started_epoch);
  r.taken_back = true;
  r.taken_back_at = now;
  // Its launcher is its compiler's parent: while it lives, a gone group has
  // the longer grace to be reported.
  if (const auto leader = launcher_.process_info(r.pgid)) r.launcher = stamp_of(static_cast<int>(leader->ppid));
  // Not moved into a unit cgroup: only its leader would move, and the
  // cgroup's peak would miss its children. Its group is polled instead.
  spdlog::info("took back {} of build {}: its launcher's compiler (process group {}) still runs", unit->name,
               unit->build_id, r.pgid);
  append_build_log(unit->build_id, "fadd restarted: took back " + unit->name + ", still compiling\n");
  auto& taken = running_.emplace(unit->id, std::move(r)).first->second;
  if (build->state == BuildState::paused) {
    // Its user paused the build: it stays paused (recover continued it).
    taken.paused = true;
    taken.note_frozen(now);
    signal_unit(taken, SIGSTOP);
  }
}

void Engine::tick() {
  const double now = clock_.now();
  // Each step on its own: a database that cannot be written (a full disk)
  // must not keep the others, the response to memory pressure above all,
  // from running.
  // Ends that could not be recorded are recorded first.
  best_effort([&] { retry_unrecorded_cancels(); });
  best_effort([&] { retry_unrecorded_pauses(); });
  best_effort([&] { retry_unrecorded(); });
  best_effort([&] { retry_unmarked_prunes(); });
  best_effort([&] { retry_unwritten_attempts(); });
  // Units stopped before they had a process end now, outside any loop over running_.
  best_effort([&] {
    for (auto id : std::exchange(deferred_exits_, {})) {
      ExitInfo never_ran{-1, true, 0};
      never_ran.unreported = true;
      on_exit(id, never_ran);
    }
  });
  last_snapshot_ = probe_.sample();
  best_effort([&] { measure_running(now); });
  best_effort([&] { stop_flooding_units(); });
  best_effort([&] { stop_overdue_units(now); });
  for (auto& [id, r] : running_) {
    const auto asked = r.asked_to_end_at();
    if (asked && !r.killed && r.pgid > 0 && now - *asked > options_.kill_grace_s) {
      // Once: after that the group is gone or about to be, and its id may be reused.
      signal_unit(r, SIGKILL);
      r.killed = true;
    }
  }
  best_effort([&] { check_external(now); });
  if (!storage_problem_.empty() && unrecorded_.empty() && unmarked_prunes_.empty()) {
    // Nothing else writes while fadd admits nothing: try a write of our own.
    best_effort([&] {
      store_.set_meta("last_write_check", clock_.wall());
      storage_ok();
    });
  }
  say_storage_recovered(now);
  best_effort([&] { keep_reserve(now); });
  check_database_file(now);
  if (!shutting_down_) best_effort([&] { schedule(now, last_snapshot_); });
  best_effort([&] { apply_retention(now); });
  best_effort([&] { apply_keep_limit(now); });
  if (now - last_history_trim_ >= options_.retention_every_s) best_effort([&] { trim_history(); });
  if (++ticks_ % static_cast<std::uint64_t>(std::max(1, options_.sample_every)) == 0) {
    best_effort([&] {
      std::uint64_t fad_bytes = 0;
      for (const auto& [id, r] : running_) fad_bytes += r.current;
      store_.add_sample(MemorySample{clock_.wall(), last_snapshot_.total, last_snapshot_.available,
                                     last_snapshot_.swap_free, fad_bytes, last_committed_,
                                     last_snapshot_.psi_some_avg10, last_capacity_});
      if (ticks_ % 1000 == 0) store_.trim_samples(options_.samples_kept);
    });
  }
}

void Engine::storage_failed(const std::string& what) {
  const std::string problem =
      "cannot write the database in " + options_.state_dir + " (" + what + "); no new units start until it can";
  // Said once per spell, and again every few minutes while it lasts: a disk
  // nearly full lets some writes through and not others, and each tick would
  // otherwise log the trouble (and its end) into the journal.
  const double now = clock_.now();
  storage_failed_at_ = now;
  if (!storage_trouble_said_ || now - storage_said_at_ >= kStorageRepeatS) {
    spdlog::error("{}", problem);
    storage_said_at_ = now;
    storage_trouble_said_ = true;
  }
  storage_problem_ = problem;
  // Room for the writes that cannot wait (the ends of finished compiles):
  // retried on the next tick. Only for a full disk: another program holding
  // the database locked is not one, and the reserve would be lost to it.
  const bool disk_full =
      what.find("disk is full") != std::string::npos || options_.disk_nearly_full(options_.state_dir);
  storage_disk_full_ = disk_full;
  if (disk_full && reserve_ && reserve_->release() && !std::exchange(reserve_spent_, true))
    spdlog::warn("the disk of {} is full: deleted fadd's {} reserve file to record what finished", options_.state_dir,
                 format_size(reserve_->bytes()));
}

void Engine::keep_reserve(double now) {
  // Spent, it is what new starts wait for: tried each tick.
  const double every = reserve_spent_ ? 0 : kReserveRetryS;
  if (!reserve_ || !storage_problem_.empty() || now - reserve_tried_at_ < every || reserve_->held()) return;
  reserve_tried_at_ = now;
  // Only from room to spare: taken from a nearly full disk, it would be
  // the reason the next write fails.
  if (!options_.disk_nearly_full(options_.state_dir) && reserve_->fill() && std::exchange(reserve_spent_, false))
    spdlog::info("made fadd's reserve file in {} again; compiles start again", options_.state_dir);
}

void Engine::storage_ok() {
  if (storage_problem_.empty()) return;
  storage_problem_.clear();
  storage_disk_full_ = false;
  if (wake_) wake_();
}

void Engine::check_database_file(double now) {
  if (database_damaged_ || now - database_checked_at_ < kDatabaseCheckS) return;
  database_checked_at_ = now;
  if (store_.damaged_seen()) {
    // Every write fails from now on, so no unit starts and no build ends:
    // only a restart on a recovered (or fresh) file goes on.
    database_damaged_ = true;
    database_replaced_ = "the database file " + store_.path() +
                         " was damaged while fadd ran (emptied or written over?): fadd cannot record builds, and "
                         "starts no unit; stop it ('fad daemon stop'), " +
                         damaged_database_advice(store_.path()) + ", and start it again";
    spdlog::error("{}", database_replaced_);
    return;
  }
  if (!database_replaced_.empty() || !store_.file_replaced()) return;
  // fadd goes on with the file it has open (its builds run to the end), but
  // says plainly that a restart may not find them: a deleted file is gone; an
  // emptied one gets back only the pages SQLite writes into it from then on,
  // around holes, which the next start may find damaged and refuse.
  database_replaced_ =
      "the database file " + options_.state_dir +
      "/fad.db was deleted, replaced or emptied while fadd ran; what fadd records now may be lost when "
      "it next starts (restart it once the builds running now are done)";
  spdlog::error("{}", database_replaced_);
}

void Engine::say_storage_recovered(double now) {
  if (!storage_trouble_said_ || !storage_problem_.empty() || now - storage_failed_at_ < kStorageSettledS) return;
  if (reserve_spent_)
    spdlog::info("the database in {} can be written again; units start once fadd can make its reserve file there again",
                 options_.state_dir);
  else
    spdlog::info("the database in {} can be written again; admitting units", options_.state_dir);
  storage_trouble_said_ = false;
}

void Engine::measure_running(double now) {
  std::map<std::int64_t, std::uint64_t> build_bytes;
  std::set<int> groups;
  for (auto& [id, r] : running_) {
    if (r.pgid <= 0) continue;  // admitted, its launcher has not started it yet
    groups.insert(r.pgid);
    // A compiler its user stopped (Ctrl-Z passed on by its launcher) frees
    // its core for other builds until it is continued. The whole unit must
    // be stopped: a leader stopped while its children compile would free a
    // core it is using and stop its clock for unit_time_limit.
    if (r.stop == StopReason::none && !r.suspended && !r.paused) {
      r.stopped_by_user = launcher_.group_stopped(r.pgid);
    } else {
      r.stopped_by_user = false;
    }
    r.pending = launcher_.group_pending(r.pgid);
    r.note_frozen(now);
  }
  const auto memory = launcher_.groups_memory(groups);
  for (auto& [id, r] : running_) {
    if (r.pgid <= 0) continue;
    const auto measured = memory.find(r.pgid);
    r.current = measured == memory.end() ? 0 : measured->second;
    r.peak = std::max(r.peak, r.current);
    r.measured.points.emplace_back(now - r.started_at, r.current);
    r.measured.duration_s = now - r.started_at;
    if (r.measured.points.size() > kMaxProfilePoints) r.measured = r.measured.thinned(kMaxProfilePoints / 2);
    build_bytes[r.unit.build_id] += r.current;
    if (r.frozen_since > 0) continue;  // frozen: its compile time stands still
    const double compiled_for = r.run_time(now);
    r.compiled.points.emplace_back(compiled_for, r.current);
    r.compiled.duration_s = compiled_for;
    if (r.compiled.points.size() > kMaxProfilePoints) r.compiled = r.compiled.thinned(kMaxProfilePoints / 2);
  }
  for (const auto& [build, bytes] : build_bytes) store_.raise_build_peak(build, bytes);
}

void Engine::stop_flooding_units() {
  const std::uint64_t limit = options_.unit_max_log_size;
  if (limit == 0) return;
  for (auto& [id, r] : running_) {
    if (r.pgid <= 0 || r.killed) continue;
    std::error_code ec;
    const auto size = fs::file_size(r.unit.log_path, ec);
    if (ec || size <= limit) continue;
    // Looked at each tick, so a compiler writes at most a tick's worth past
    // the limit; killed, not asked, since one that prints without end is
    // broken or hostile either way.
    spdlog::warn("unit {} of build {} wrote {} to its log, past unit_max_log_size ({}); ending it", r.unit.name,
                 r.unit.build_id, format_size(size), format_size(limit));
    r.log_over = true;
    signal_unit(r, SIGKILL);
    r.killed = true;
  }
}

void Engine::stop_overdue_units(double now) {
  const double limit = options_.unit_time_limit_s;
  if (limit <= 0) return;
  for (auto& [id, r] : running_) {
    // Asked to end already: as a cancel asks, and killed after the same grace (tick).
    if (r.pgid <= 0 || r.asked_to_end_at() || r.killed) continue;
    // Compile time, not wall time: a unit suspended under memory pressure,
    // paused or stopped by its user is not the one holding a core, and one
    // frozen now could not act on a SIGTERM. One taken back at a restart
    // counts from then: its freezes before it are not known.
    if (r.frozen_since > 0) continue;
    const double compiled = r.taken_back ? std::min(r.run_time(now), now - r.taken_back_at) : r.run_time(now);
    if (compiled <= limit) continue;
    spdlog::warn("unit {} of build {} has compiled for {}, past unit_time_limit; ending it", r.unit.name,
                 r.unit.build_id, format_age(static_cast<std::int64_t>(compiled)));
    r.time_over_at = now;
    signal_unit(r, SIGTERM);
    // As Slurm does at a time limit: a process of it that stopped itself
    // acts on the SIGTERM only once continued.
    signal_unit(r, SIGCONT);
  }
}

void Engine::restore_allowances() {
  // The buckets live in memory: without this, a restart (or a crash a user
  // could provoke) would hand every user a fresh hour.
  const std::string wall = clock_.wall();
  const auto now_epoch = parse_rfc3339(wall);
  if (!now_epoch) return;
  for (const auto& o : store_.opened_since(format_rfc3339(*now_epoch - 3600))) {
    const uid_t uid = o.uid ? static_cast<uid_t>(*o.uid) : options_.daemon_uid;
    const auto at = parse_rfc3339(o.at);
    if (uid == 0 || !at) continue;
    // One opened "later" than now (the clock has stepped back since) counts
    // as opened now: placed in the future, its bucket would not refill until
    // the clock got there, hours perhaps, while fadd said "try again in 20m".
    (o.launch ? launch_allowance_ : build_allowance_).take(uid, clock_.now() - std::max(0.0, *now_epoch - *at));
  }
}

std::optional<Credentials> Engine::run_as(const BuildRecord& b) {
  if (options_.daemon_uid != 0) return std::nullopt;  // compiles run as fadd, which only compiles for itself
  const uid_t uid = owner_of(b);
  if (uid == 0) return std::nullopt;
  const gid_t gid = static_cast<gid_t>(b.gid.value_or(uid));
  if (b.groups) {
    // The groups the submitter's process held: never one the group database
    // grants but that process had dropped or not yet been given.
    Credentials c{uid, gid, {}};
    for (auto g : *b.groups) c.groups.push_back(static_cast<gid_t>(g));
    return c;
  }
  const double now = clock_.now();
  auto& cached = credentials_cache_[{uid, gid}];
  // Group lookups may ask a directory service: not once per unit, but a
  // change of a user's groups is seen within a minute.
  if (cached.first == 0 || now - cached.first > 60) {
    auto creds = credentials_of(uid, gid);
    cached = {now, creds ? *creds : Credentials{uid, gid, {gid}}};
  }
  return cached.second;
}

std::vector<QueuedUnit> Engine::fair_queue(std::vector<QueuedUnit> queue, const std::vector<BuildRecord>& builds) {
  std::map<std::int64_t, uid_t> owner;
  for (const auto& b : builds) owner[b.id] = owner_of(b);
  std::map<uid_t, std::uint64_t> held;
  for (const auto& [id, r] : running_)
    if (r.stop == StopReason::none) held[owner[r.unit.build_id]] += r.predicted.peak();
  std::map<uid_t, double> last_started;
  for (auto it = last_started_.begin(); it != last_started_.end();) {
    if (!owner.count(it->first)) {  // the build ended
      it = last_started_.erase(it);
      continue;
    }
    double& t = last_started[owner[it->first]];
    t = std::max(t, it->second);
    ++it;
  }
  std::vector<ShareCandidate> candidates;
  candidates.reserve(queue.size());
  for (const auto& q : queue) {
    const std::uint64_t cost = std::max(q.requeued_peak, estimator_.estimate(q.key, 1, q.manifest_prior).peak());
    candidates.push_back(ShareCandidate{owner[q.build_id], q.build_id, cost});
  }
  std::vector<QueuedUnit> ordered;
  ordered.reserve(queue.size());
  for (std::size_t i : fair_share_order(candidates, held, last_started)) ordered.push_back(std::move(queue[i]));
  return ordered;
}

QueuedUnit Engine::queued_unit(const UnitRecord& u) const {
  QueuedUnit q;
  q.id = u.id;
  q.build_id = u.build_id;
  q.key = estimate_key(u);
  if (u.kind == UnitKind::link) {
    q.manifest_prior = kLinkPrior;
  } else if (u.prior_peak > 0) {
    q.manifest_prior = ManifestPrior{u.prior_peak, u.prior_duration_s};
  }
  q.requeued_peak = u.requeued_peak;
  q.alone = alone_.count(u.id) > 0;
  q.source_bytes = u.source_bytes;
  return q;
}

std::vector<QueuedUnit> Engine::collect_queue(double now, QueuedRecords& by_id) {
  static const std::string kWaitCompiles = "waiting for the compile units";
  queue_mirror_.refresh(store_, now);
  std::vector<QueuedUnit> queue;
  std::map<std::int64_t, std::string> held_reasons;
  QueuedRecords held;
  // Users with an admission whose compiler has not started yet.
  std::set<uid_t> pending;
  for (const auto& [id, r] : running_)
    if (r.external && r.pgid == 0 && r.stop == StopReason::none) pending.insert(r.owner);
  for (const auto& b : queue_mirror_.builds()) {
    if (paused(b) || unrecorded_cancels_.count(b.id)) continue;
    auto& q = queue_mirror_.queues()[b.id];
    for (auto& u : q.units) {
      if (running_.count(u.id)) continue;
      if (u.kind == UnitKind::link && !q.compiles_done) {
        held_reasons.emplace(u.id, kWaitCompiles);
        held.emplace(u.id, &u);
        continue;
      }
      if (u.kind == UnitKind::external && launcher_quiet(u.id, now)) {
        // Admitted, it would hold cores and memory nobody uses until its
        // launcher runs again (a build stopped with Ctrl-Z, for hours).
        held_reasons.emplace(u.id, "its launcher is not asking (stopped?); admitted once it asks again");
        held.emplace(u.id, &u);
        continue;
      }
      if (const uid_t owner = owner_of(b); u.kind == UnitKind::external && lapses_.one_at_a_time(owner, now)) {
        if (auto why = lapse_hold(owner, now, pending.count(owner) > 0); !why.empty()) {
          held_reasons.emplace(u.id, std::move(why));
          held.emplace(u.id, &u);
          continue;
        }
        pending.insert(owner);  // one at a time: this one stands for all of theirs in this pass
      }
      queue.push_back(queued_unit(u));
      by_id.emplace(u.id, &u);
    }
  }
  write_wait_reasons(held_reasons, held);
  return queue;
}

std::string Engine::still_full_dir() {
  for (auto it = disk_hold_.begin(); it != disk_hold_.end();) {
    if (options_.disk_nearly_full(*it)) return *it;
    spdlog::info("{} has room again; compiles start again", *it);
    it = disk_hold_.erase(it);
  }
  return "";
}

std::string Engine::start_hold() {
  hold_warning_.clear();
  // Its own warning says so already.
  if (!storage_problem_.empty()) return std::string(kCannotRecord);
  if (const std::string full = disk_hold_.empty() ? "" : still_full_dir(); !full.empty()) {
    hold_warning_ = "the disk of " + full +
                    " is full: a compile failed there for want of space, and no unit starts "
                    "until it has room (free some space there)";
    return "waiting for room on the disk of " + full + " (a compile failed there for want of space)";
  }
  if (!reserve_spent_) return "";
  // Its room is for recording what runs now; a new unit's log would take it.
  hold_warning_ = "the disk of " + options_.state_dir +
                  " is full: fadd spent its reserve file there to record what "
                  "finished, and starts no unit until it has room to make it again (free some space there)";
  return "waiting for room on the disk of " + options_.state_dir + " (fadd's reserve there is in use)";
}

std::string Engine::wait_reason_now(const UnitRecord& unit) const {
  return storage_problem_.empty() ? unit.wait_reason : std::string(kCannotRecord);
}

void Engine::write_wait_reasons(const std::map<std::int64_t, std::string>& reasons, QueuedRecords& by_id) {
  std::map<std::int64_t, std::string> changed;
  for (const auto& [id, reason] : reasons)
    if (auto it = by_id.find(id); it == by_id.end() || it->second->wait_reason != reason) changed.emplace(id, reason);
  if (changed.empty()) return;
  best_effort([&] {
    store_.set_wait_reasons(changed);
    for (const auto& [id, reason] : changed)
      if (auto it = by_id.find(id); it != by_id.end()) it->second->wait_reason = reason;
  });
}

void Engine::observe_running(double now) {
  // What running units have shown so far teaches the estimator about their
  // queued siblings before any of them finishes (policy/sibling_evidence.h).
  std::vector<RunningObservation> evidence;
  for (const auto& [id, r] : running_) {
    if (r.pgid <= 0 || r.unit.kind == UnitKind::link || r.compiled.points.empty()) continue;
    RunningObservation o;
    o.key = unit_key(r.unit);
    o.threads = r.threads;
    o.so_far = r.compiled;
    o.so_far.duration_s = std::max(r.run_time(now), r.compiled.duration_s);
    o.predicted_peak = r.predicted.peak();
    evidence.push_back(std::move(o));
  }
  estimator_.observe_running(evidence);
}

std::vector<RunningUnit> Engine::running_view(double now, const std::string* node) const {
  std::vector<RunningUnit> running;
  for (const auto& [id, r] : running_) {
    if (r.stop != StopReason::none || (node && r.node != *node)) continue;
    // A launched compiler whose group is gone, its launcher's report not in
    // yet (fadd was busy): it holds no memory and no core any more.
    if (r.external && r.pgid > 0 && r.gone_since > 0) continue;
    RunningUnit ru;
    ru.id = id;
    ru.build_id = r.unit.build_id;
    // Admitted but not started yet (a launcher's compiler): all of its
    // profile still lies ahead.
    ru.started_at = r.external && r.pgid == 0 ? now : r.started_at;
    ru.frozen_s = r.frozen_s;  // an ongoing freeze is its suspension or pause
    ru.threads = r.threads;
    ru.predicted = r.predicted;
    ru.current_bytes = r.current;
    ru.peak_bytes = r.peak;
    // A unit the user paused holds its memory by the user's choice, but no
    // core, and it never holds other builds back (the scheduler's `paused`).
    ru.suspended = r.suspended;
    ru.suspended_at = r.suspended_at;
    ru.paused = r.paused || r.stopped_by_user;
    ru.guess = r.guess;
    ru.arch_count = estimate_key(r.unit).arch_count;
    const SpikeSummary spikes = summarize_spikes(r.compiled, r.predicted.peak() / 4);
    ru.spikes_seen = spikes.spikes;
    ru.since_spike_bytes = spikes.since_drop;
    running.push_back(std::move(ru));
  }
  return running;
}

void Engine::schedule(double now, const MemorySnapshot& snap) {
  const std::string hold = start_hold();
  QueuedRecords by_id;
  auto queue = collect_queue(now, by_id);
  const auto& builds = queue_mirror_.builds();
  std::map<std::int64_t, std::uint64_t> budgets;
  for (const auto& b : builds)
    if (b.budget_bytes) budgets[b.id] = *b.budget_bytes;
  // Between users, the queue is ordered by fair share (policy/fair_share.h).
  queue = fair_queue(std::move(queue), builds);
  auto running = running_view(now, nullptr);
  if (queue.empty() && running.empty()) {
    // Idle: still report the budget the next build would get.
    last_capacity_ = scheduler_.decide(now, snap, {}, {}).capacity;
    last_committed_ = 0;
    for (auto& [name, view] : node_view_) view.committed = 0;  // nothing runs on any node
    forecasts_.clear();
    return;
  }
  observe_running(now);
  if (auto nodes = launcher_.nodes()) {
    schedule_nodes(now, *nodes, std::move(queue), by_id, budgets, hold);
    return;
  }
  auto plan = scheduler_.decide(now, snap, queue, running, budgets, hold);
  last_capacity_ = plan.capacity;
  last_committed_ = plan.committed;
  forecasts_ = std::move(plan.forecasts);
  apply_plan(plan, by_id, now, "", nullptr);
}

void Engine::apply_plan(SchedulePlan& plan, QueuedRecords& by_id, double now, const std::string& node,
                        std::map<std::int64_t, std::string>* reasons) {
  for (const auto& d : plan.decisions) {
    if (d.kind == Decision::Kind::start) {
      auto it = by_id.find(d.unit);
      if (it == by_id.end()) continue;
      if (!storage_problem_.empty()) {
        // The start before this one could not be written (the scheduler was
        // told of every hold known before it decided): starting means
        // writing, and a unit that then ends could not be recorded.
        plan.wait_reasons[d.unit] = wait_reason_now(*it->second);
        continue;
      }
      const UnitRecord& unit = *it->second;
      alone_.erase(unit.id);
      forecasts_.erase(unit.id);
      if (unit.kind == UnitKind::external)
        admit_external(unit, d, now, node);
      else
        start_unit(unit, d, now, node);
      continue;
    }
    auto it = running_.find(d.unit);
    if (it == running_.end()) continue;
    Running& r = it->second;
    switch (d.kind) {
      case Decision::Kind::suspend:
        if (!r.suspended && !r.paused) {
          spdlog::warn("memory pressure: suspending {} ({})", r.unit.name, d.reason);
          signal_unit(r, SIGSTOP);
          record_event(r.unit.id, "suspend", d.reason);
        }
        r.suspended = true;
        r.suspended_at = now;
        r.note_frozen(now);
        break;
      case Decision::Kind::resume:
        if (r.suspended && !r.paused) {
          spdlog::info("resuming {} ({})", r.unit.name, d.reason);
          signal_unit(r, SIGCONT);
          record_event(r.unit.id, "resume", d.reason);
        }
        r.suspended = false;
        r.note_frozen(now);
        break;
      case Decision::Kind::requeue:
        spdlog::warn("memory pressure: stopping {} to run it later ({})", r.unit.name, d.reason);
        stop_unit(r, d.alone ? StopReason::requeue_alone : StopReason::requeue, now);
        break;
      case Decision::Kind::start: break;
    }
  }
  if (reasons) {
    for (auto& [id, reason] : plan.wait_reasons) reasons->emplace(id, node + ": " + reason);
    return;
  }
  write_wait_reasons(plan.wait_reasons, by_id);
}

void Engine::start_unit(const UnitRecord& unit, const Decision& d, double now, const std::string& node) {
  std::vector<std::string> argv = unit.argv;
  if (unit.kind == UnitKind::compile) {
    argv.push_back("--threads");
    argv.push_back(std::to_string(d.threads));
    for (auto& a : cache_args(unit)) argv.push_back(std::move(a));
  }
  auto build = store_.build(unit.build_id);
  const auto creds = build ? run_as(*build) : std::nullopt;
  const auto owner = file_owner(creds);
  make_owned_dir(fs::path(unit.output_path).parent_path().string(), owner);
  if (auto why = make_daemon_dir(fs::path(unit.log_path).parent_path().string(), owner); !why.empty())
    // Said here, where the cause is known: the unit's log cannot hold it.
    spdlog::error("unit {} of build {}: {}; its compiler cannot write its log", unit.name, unit.build_id, why);
  const std::string source = estimate_source_id(d.source, d.imported);
  store_.start_unit(unit.id, d.threads, d.estimate_bytes, clock_.wall(), source);
  try {
    store_.mark_build_started(unit.build_id, clock_.wall());
    if (build && build->state == BuildState::queued)
      store_.set_build_state(unit.build_id, BuildState::running, std::nullopt);
  } catch (const StoreError& err) {
    // Its row says running and nothing runs: it goes back to the queue like a
    // unit that ended, kept in memory until the database takes it.
    storage_failed(err.what());
    record_end(unit.id, never_started(unit, now, ExitOutcome::Action::requeue));
    return;
  }
  write_owned_file(unit.log_path, "$ " + join(argv, " ") + "\n", owner);
  const auto id = unit.id;
  const std::string temp_dir = unit_temp_dir(unit, unit.attempts + 1, node);
  if (!temp_dir.empty()) make_owned_dir(temp_dir, owner);
  auto pgid = launcher_.launch(LaunchSpec{id, argv, unit.log_path, creds, node, d.threads, d.estimate_bytes,
                                          options_.unit_max_file_size, temp_dir},
                               [this, id](ExitInfo info) { on_exit(id, info); });
  const uid_t owner_uid = build ? owner_of(*build) : options_.daemon_uid;
  if (!pgid) {
    discard_temp_dirs({temp_dir}, owner_uid);
    spdlog::error("unit {}: {}", unit.name, pgid.error());
    write_owned_file(unit.log_path, "fad: " + pgid.error() + "\n", owner);
    // Recorded like any failed end, so a full disk now cannot leave it shown running.
    record_end(id, never_started(unit, now, ExitOutcome::Action::fail_build));
    return;
  }
  Running r;
  r.unit = unit;
  r.unit.estimate_source = source;
  r.pgid = *pgid;
  r.node = node;
  r.temp_dir = temp_dir;
  r.owner = owner_uid;
  r.started_at = now;
  r.threads = d.threads;
  r.predicted = d.predicted;
  r.guess = d.guess;
  r.duration_guessed = d.duration_guessed;
  r.paused = build && paused(*build);
  r.note_frozen(now);
  r.started_epoch = epoch_now();
  r.attempt = unit.attempts + 1;
  r.estimate_bytes = d.estimate_bytes;
  // Read now, while the leader is fadd's unreaped child and the id surely its.
  const auto leader = launcher_.process_info(*pgid);
  if (leader) r.leader_start = leader->start_ticks;
  last_started_[r.unit.build_id] = now;
  running_.emplace(id, std::move(r));
  // Tracked before anything else can fail: a process fad does not know of
  // would be a unit shown running forever.
  try {
    store_.set_unit_pgid(id, *pgid, leader ? std::optional(leader->start_ticks) : std::nullopt);
    if (!node.empty()) store_.set_unit_node(id, node);
  } catch (const StoreError& err) {
    storage_failed(err.what());  // it runs and is tracked; only a crash now loses its group id
  }
  spdlog::info("started {} of build {}{} with {} thread(s), estimate {} ({})", unit.name, unit.build_id,
               node.empty() ? "" : " on " + node, d.threads, format_size(d.estimate_bytes), d.reason);
  best_effort([&] {
    append_build_log(unit.build_id, "started " + unit.name + " (threads " + std::to_string(d.threads) + ", estimate " +
                                        format_size(d.estimate_bytes) + ")\n");
  });
}

void Engine::Running::note_frozen(double now) {
  const bool frozen = suspended || paused || stopped_by_user || pending;
  if (frozen && frozen_since == 0) {
    frozen_since = now;
  } else if (!frozen && frozen_since > 0) {
    frozen_s += now - frozen_since;
    frozen_since = 0;
  }
}

double Engine::Running::run_time(double now) const {
  return std::max(0.0, now - started_at - frozen_s - (frozen_since > 0 ? now - frozen_since : 0));
}

std::optional<double> Engine::Running::asked_to_end_at() const {
  if (stop != StopReason::none) return stop_sent_at;
  if (time_over_at > 0) return time_over_at;
  return std::nullopt;
}

Engine::Ended Engine::never_started(const UnitRecord& unit, double now, ExitOutcome::Action action) {
  Ended e;
  e.run.unit = unit;
  e.run.started_at = now;
  e.finished_at = clock_.wall();
  e.outcome.action = action;
  e.launched = false;
  return e;
}

void Engine::stop_unit(Running& r, StopReason reason, double now) {
  if (r.stop != StopReason::none) return;
  r.stop = reason;
  r.stop_sent_at = now;
  if (r.pgid <= 0) {
    // An admitted external unit whose launcher has not started it yet: there
    // is nothing to signal; it ends here (the launcher polls again).
    deferred_exits_.push_back(r.unit.id);
    if (wake_) wake_();
    return;
  }
  signal_unit(r, SIGTERM);
  // A stopped process only acts on SIGTERM once continued.
  if (r.suspended || r.paused) signal_unit(r, SIGCONT);
}

bool Engine::group_is_ours(const Running& r) {
  // fadd's own children stay unreaped until fadd handled their end: their
  // ids cannot be given to another process before. A launcher reaps its
  // compiler itself, and a process-group id is a pid, handed out again once
  // the leader and every member are gone: a leader with another start time
  // is someone else's process, however the launcher reported it.
  if (!r.external || r.pgid <= 0) return true;
  const auto leader = launcher_.process_info(r.pgid);
  // No leader: either the group is empty (a signal reaches no one) or its
  // members keep the id from being reused.
  return !leader || leader->start_ticks == r.leader_start;
}

void Engine::signal_unit(const Running& r, int sig) {
  if (group_is_ours(r)) {
    launcher_.signal_group(r.pgid, sig);
    return;
  }
  spdlog::warn("unit {}: not signalling process group {}: its compiler is gone and the id now names another process",
               r.unit.name, r.pgid);
}

void Engine::on_exit(std::int64_t unit_id, ExitInfo info) {
  auto it = running_.find(unit_id);
  if (it == running_.end()) return;
  Ended e;
  e.run = std::move(it->second);
  running_.erase(it);
  e.run.peak = std::max(e.run.peak, info.peak_bytes);
  e.info = info;
  e.duration = e.run.run_time(clock_.now());
  e.finished_at = clock_.wall();
  if (wake_) wake_();
  discard_temp_dirs({e.run.temp_dir}, e.run.owner);
  prepare_end(e);
  record_end(unit_id, std::move(e));
}

void Engine::prepare_end(Ended& e) {
  // Everything here happens once, whatever the database says: the outcome is
  // decided, the link's output published and the observation taken now.
  const auto& u = e.run.unit;
  UnitExit facts;
  switch (e.run.stop) {
    case StopReason::none: facts.stop = StopCause::none; break;
    case StopReason::requeue: facts.stop = StopCause::requeue; break;
    case StopReason::requeue_alone: facts.stop = StopCause::requeue_alone; break;
    case StopReason::cancel: facts.stop = StopCause::cancel; break;
    case StopReason::shutdown: facts.stop = StopCause::shutdown; break;
  }
  facts.exit_code = e.info.exit_code;
  facts.signaled = e.info.signaled;
  facts.oom_killed = e.info.oom_killed;
  facts.peak = e.run.peak;
  facts.external = u.kind == UnitKind::external;
  facts.interrupted = e.info.interrupt_signal != 0;
  // fad's own kill of a unit (flooding its log, past its time) reads as lost on a cluster.
  facts.lost = e.info.lost && !e.run.log_over && e.run.time_over_at == 0;
  if (facts.lost && facts.stop == StopCause::none) facts.lost_runs = ++lost_runs_[u.id];
  if (facts.stop == StopCause::none && !facts.external && e.run.time_over_at == 0 &&
      (e.info.exit_code != 0 || e.info.signaled)) {
    // A compiler that cannot write its object fails like a broken source;
    // asked now, while the disk is still full, the difference is plain.
    const std::string out_dir = fs::path(u.output_path).parent_path().string();
    for (const auto& dir : {options_.state_dir, out_dir})
      if (options_.disk_nearly_full(dir)) {
        facts.disk_full = true;
        disk_hold_.insert(dir);
      }
    // A lock on the database is no reason for a compiler to fail.
    facts.disk_full |= storage_disk_full_;
  }
  if (e.info.oom_killed || facts.disk_full) {
    // Attempts include this run; unreadable (a broken database) counts as the last.
    facts.attempts = std::max(kMaxOomAttempts, kMaxDiskFullAttempts);
    best_effort([&] {
      if (const auto record = store_.unit(u.id)) facts.attempts = record->attempts;
    });
  }
  e.outcome = decide_exit(facts);
  if (e.outcome.action != ExitOutcome::Action::requeue) lost_runs_.erase(u.id);
  using Action = ExitOutcome::Action;
  e.ok = e.outcome.action == Action::succeed;
  const char* attempt_outcome = e.outcome.action == Action::cancelled ? "cancelled"
                                : e.outcome.oom_rerun                 ? "oom"
                                : e.outcome.disk_rerun                ? "disk_full"
                                : e.outcome.action == Action::requeue
                                    ? (e.run.stop == StopReason::shutdown ? "shutdown" : "requeued")
                                    : "failed";
  if (e.ok && u.kind == UnitKind::link) {
    std::error_code ec;
    fs::rename(u.output_path + ".tmp", u.output_path, ec);
    if (ec) {
      write_owned_file(u.log_path, "fad: cannot publish " + u.output_path + ": " + ec.message() + "\n", std::nullopt);
      e.ok = false;
      e.outcome.action = Action::fail_build;
    }
  }
  // For reports: the attempt's span and samples, kept whatever the database does next (never throws).
  record_attempt(e.run, e.ok ? "succeeded" : attempt_outcome, e.run.peak);
  if (!e.ok || e.run.taken_back) return;
  Observation obs;
  obs.key = estimate_key(u);  // a link too: its next estimate rests on its measured time
  obs.threads = e.run.threads;
  obs.profile = e.run.compiled.thinned(200);
  obs.profile.duration_s = e.duration;
  // Polling can miss a short spike that the unit's cgroup caught: lift the
  // highest sample to the true peak so estimates are never below it.
  obs.profile.lift_peak_to(e.run.peak);
  store_cached(u, e.run.started_at);
  HistoryRecord h;
  h.key = obs.key.exact();
  h.source = obs.key.source;
  h.content_hash = obs.key.content_hash;
  h.flags = obs.key.flags;
  h.archs = obs.key.archs;
  h.compiler = obs.key.compiler;
  h.family = obs.key.family;
  h.arch_count = obs.key.arch_count;
  h.scope = obs.key.scope;
  h.threads = e.run.threads;
  h.profile = obs.profile.serialize();
  e.history = std::move(h);
  e.learned = std::move(obs);
}

void Engine::record_end(std::int64_t unit_id, Ended e) {
  if (unrecorded_cancels_.count(e.run.unit.build_id)) {
    unrecorded_.insert_or_assign(unit_id, std::move(e));  // after its build's cancel
    return;
  }
  try {
    commit_end(unit_id, e);
    storage_ok();
  } catch (const StoreError& err) {
    // Persist before forgetting: the end stays here and is written again each
    // tick; until then the database still says running, so even a crash now
    // only requeues it.
    storage_failed(err.what());
    spdlog::error("recording the end of unit {}: {} (kept, retried each tick)", e.run.unit.name, err.what());
    unrecorded_.insert_or_assign(unit_id, std::move(e));
  }
}

void Engine::retry_unrecorded_cancels() {
  for (auto it = unrecorded_cancels_.begin(); it != unrecorded_cancels_.end();) {
    store_.cancel_build(it->first, it->second, "cancelled by user");  // throws again while the disk is full
    spdlog::info("build {}: its cancel is recorded", it->first);
    best_effort([&] { append_build_log(it->first, "build cancelled\n"); });
    it = unrecorded_cancels_.erase(it);
    storage_ok();
  }
}

bool Engine::paused(const BuildRecord& b) const {
  const auto asked = unrecorded_pauses_.find(b.id);
  return asked != unrecorded_pauses_.end() ? asked->second : b.state == BuildState::paused;
}

bool Engine::record_pause(const BuildRecord& b, bool pause) {
  if ((b.state == BuildState::paused) == pause) {
    unrecorded_pauses_.erase(b.id);  // undoes one not written yet: the database already says so
    return true;
  }
  try {
    store_.set_build_state(b.id, pause ? BuildState::paused : BuildState::queued, std::nullopt);
    unrecorded_pauses_.erase(b.id);
    if (!pause) update_build(b.id);
    return true;
  } catch (const StoreError& err) {
    storage_failed(err.what());
    spdlog::warn("build {} {}, not recorded yet ({}): written once the database can take it", b.id,
                 pause ? "paused" : "resumed", err.what());
    unrecorded_pauses_.insert_or_assign(b.id, pause);
    return false;
  }
}

void Engine::retry_unrecorded_pauses() {
  for (auto it = unrecorded_pauses_.begin(); it != unrecorded_pauses_.end();) {
    const std::int64_t id = it->first;
    const bool pause = it->second;
    const auto b = store_.build(id);
    if (!b || is_final(b->state)) {  // cancelled or ended meanwhile: nothing left to pause
      it = unrecorded_pauses_.erase(it);
      continue;
    }
    store_.set_build_state(id, pause ? BuildState::paused : BuildState::queued, std::nullopt);  // throws again
    it = unrecorded_pauses_.erase(it);
    if (!pause) update_build(id);
    spdlog::info("build {}: its {} is recorded", id, pause ? "pause" : "resume");
    best_effort([&] { append_build_log(id, pause ? "build paused\n" : "build resumed\n"); });
    storage_ok();
  }
}

void Engine::retry_unrecorded() {
  for (auto it = unrecorded_.begin(); it != unrecorded_.end();) {
    if (unrecorded_cancels_.count(it->second.run.unit.build_id)) {
      ++it;
      continue;
    }
    commit_end(it->first, it->second);  // throws again while the disk is full
    it = unrecorded_.erase(it);
    storage_ok();
  }
}

void Engine::commit_end(std::int64_t unit_id, Ended& e) {
  const auto& r = e.run;
  const auto& u = r.unit;
  if (!e.recorded) {
    using Action = ExitOutcome::Action;
    if (!e.info.peak_source.empty()) store_.set_unit_peak_source(unit_id, e.info.peak_source);
    switch (e.outcome.action) {
      case Action::requeue:
        // Stopped by fad or starved by the OOM killer, not failed: run it
        // again later, its estimate at least the floor.
        store_.requeue_unit(unit_id, r.peak, e.outcome.floor);
        e.recorded = true;
        if (e.outcome.alone) alone_.insert(unit_id);
        if (e.outcome.oom_rerun) {
          spdlog::warn(
              "unit {} of build {} was killed by the kernel's OOM killer at {}; requeued with an estimate of at "
              "least {}",
              u.name, u.build_id, format_size(r.peak), format_size(e.outcome.floor));
          append_build_log(u.build_id, "OOM-killed " + u.name + " at " + format_size(r.peak) + " (requeued)\n");
        } else if (e.outcome.disk_rerun) {
          spdlog::warn(
              "unit {} of build {} failed (exit code {}) while the disk was full; requeued to run once "
              "there is room",
              u.name, u.build_id, e.info.exit_code);
          append_build_log(u.build_id, "failed on a full disk: " + u.name + " (requeued)\n");
        } else if (e.outcome.lost_rerun) {
          append_build_log(u.build_id, "lost " + u.name + (r.node.empty() ? "" : " on " + r.node) + " (requeued)\n");
        } else {
          append_build_log(u.build_id, "stopped " + u.name + " (requeued)\n");
        }
        break;
      case Action::cancelled:
        store_.finish_unit(unit_id, UnitState::cancelled, known_exit_code(e.info), r.peak, e.duration, e.finished_at,
                           std::nullopt);
        e.recorded = true;
        if (e.info.interrupt_signal != 0 && r.stop == StopReason::none)
          append_build_log(u.build_id, "cancelled " + u.name + ": its launcher got " +
                                           signal_name(e.info.interrupt_signal) + " and passed it on, after " +
                                           std::to_string(int(e.duration)) + " s\n");
        break;
      case Action::succeed:
      case Action::fail:
      case Action::fail_build: {
        // The idempotent writes first: if the history row below fails, a retry repeats only these.
        if (e.ok && u.kind == UnitKind::link) store_.set_build_artifact(u.build_id, u.output_path);
        // Like make without -k: nothing new starts once a unit failed; `fad retry`
        // requeues. External builds are the build tool's to stop (ninja -k).
        if (!e.ok && e.outcome.action == Action::fail_build)
          store_.set_pending_units(u.build_id, UnitState::cancelled, false);
        store_.finish_unit(unit_id, e.ok ? UnitState::succeeded : UnitState::failed,
                           e.launched ? known_exit_code(e.info) : std::nullopt, r.peak, e.duration, e.finished_at,
                           e.history);
        e.recorded = true;
        if (e.learned) estimator_.learn(*e.learned);
        if (!e.ok && e.launched)
          spdlog::warn("unit {} of build {} failed{}", u.name, u.build_id,
                       failure_text(e.info, r.log_over, r.time_over_at > 0, options_));
        std::string summary =
            !e.launched ? "FAILED " + u.name + ": could not start\n"
                        : (e.ok ? "finished " : "FAILED ") + u.name + " in " + std::to_string(int(e.duration)) +
                              " s, peak " + format_size(r.peak) +
                              (e.ok ? "" : failure_text(e.info, r.log_over, r.time_over_at > 0, options_)) + "\n";
        std::uint64_t log_size = 0;
        auto excerpt = read_file_slice(u.log_path, 0, kLogExcerptBytes, &log_size);
        if (excerpt) summary += *excerpt;
        if (log_size > kLogExcerptBytes)
          summary += "\n[... " + std::to_string(log_size - kLogExcerptBytes) + " more bytes in " + u.log_path + "]\n";
        append_build_log(u.build_id, summary);
        break;
      }
    }
  }
  update_build(u.build_id);
}

void Engine::update_build(std::int64_t build_id) {
  auto b = store_.build(build_id);
  if (!b || is_final(b->state)) return;
  if (b->kind == "external") {
    // Its end is the build command's (close_build) or, for launches outside
    // fad run, a quiet spell (check_external); until then it is running.
    last_activity_[build_id] = clock_.now();
    if (b->state == BuildState::queued) {
      store_.set_build_state(build_id, BuildState::running, std::nullopt);
      // A session's first compile served from the cache starts it too.
      store_.mark_build_started(build_id, clock_.wall());
    }
    return;
  }
  const auto units = store_.units(build_id);
  int succeeded = 0, failed = 0, started = 0;
  std::string first_failed;
  bool live = false;
  // The build ended with its last unit, not when that end was written: after
  // a full-disk spell the ends are written late (ISO times compare as text).
  std::string ended;
  for (const auto& u : units) {
    if (u.finished_at && *u.finished_at > ended) ended = *u.finished_at;
    if (u.state == UnitState::succeeded) ++succeeded;
    if (u.state == UnitState::failed && first_failed.empty()) first_failed = u.name;
    if (u.state == UnitState::failed) ++failed;
    if (u.state != UnitState::queued || u.attempts > 0) ++started;
    if (running_.count(u.id)) live = true;
  }
  // A unit served from the cache started the build as much as one compiled:
  // without this a build showed "running" with no start time while its
  // other units still waited (written once: the first start stays).
  if (started > 0) store_.mark_build_started(build_id, clock_.wall());
  if (succeeded == static_cast<int>(units.size())) {
    store_.set_build_state(build_id, BuildState::succeeded, ended.empty() ? clock_.wall() : ended);
    cache_identity_.erase(build_id);
    append_build_log(build_id, "build succeeded\n");
    spdlog::info("build {} succeeded", build_id);
  } else if (failed > 0 && !live) {
    const std::string why = std::to_string(failed) + " unit(s) failed, first " + first_failed + "; see 'fad logs " +
                            std::to_string(build_id) + " " + first_failed + "'";
    store_.set_build_state(build_id, BuildState::failed, ended.empty() ? clock_.wall() : ended, why);
    cache_identity_.erase(build_id);
    append_build_log(build_id, "build failed: " + why + "\n");
    spdlog::warn("build {} failed: {}", build_id, why);
  } else if (b->state != BuildState::paused) {
    store_.set_build_state(build_id, started > 0 ? BuildState::running : BuildState::queued, std::nullopt);
  }
}

std::size_t Engine::load_history() {
  estimator_ = Estimator(options_.estimator);
  std::size_t learned = 0;
  for (const auto& h : store_.history()) {
    auto profile = Profile::parse(h.profile);
    if (!profile) continue;
    Observation obs;
    obs.key = UnitKey{h.source, h.content_hash, h.flags, h.archs, h.compiler, h.family, h.arch_count, h.scope};
    obs.threads = h.threads;
    obs.profile = std::move(*profile);
    obs.imported = h.origin == "imported";
    estimator_.learn(obs);
    ++learned;
  }
  history_loaded_ = true;
  return learned;
}

void Engine::trim_history() {
  // One row per finished unit would grow for ever (and be read at every
  // start); the estimator only ever uses the newest few per key.
  last_history_trim_ = clock_.now();
  const auto gone = store_.trim_history(Estimator::kKeepPerKey, kMaxHistoryKeysPerScope);
  if (gone == 0) return;
  spdlog::info(
      "history: dropped {} profile(s) older than the newest {} of their unit, or of the units "
      "least recently seen past {} per user",
      gone, Estimator::kKeepPerKey, kMaxHistoryKeysPerScope);
  // What the estimator learned since the start grew as the table did: it
  // learns again from what is left, so a long-running fadd stays bounded too.
  if (history_loaded_) load_history();
}

std::string Engine::build_dir(std::int64_t id) const { return options_.state_dir + "/builds/" + std::to_string(id); }

void Engine::append_build_log(std::int64_t build_id, const std::string& text) {
  // The build's owner matters only for a root fadd; the lookup is a cheap row read.
  std::optional<FileOwner> owner;
  if (options_.daemon_uid == 0)
    if (auto b = store_.build(build_id)) owner = file_owner(run_as(*b));
  make_daemon_dir(build_dir(build_id), owner);
  // Unit names, commands and compiler output come from users: `fad logs`
  // prints this file, and an escape sequence in it must not reach a terminal.
  write_owned_file(build_dir(build_id) + "/build.log", "[" + clock_.wall() + "] " + printable_lines(text), owner);
}

void Engine::begin_shutdown() {
  shutting_down_ = true;
  const double now = clock_.now();
  for (auto it = running_.begin(); it != running_.end();) {
    Running& r = it->second;
    if (!r.external) {
      stop_unit(r, StopReason::shutdown, now);
      ++it;
      continue;
    }
    // A launcher's compile belongs to its build tool: stopped, it would fail
    // that build (its launcher cannot rerun it without fadd). It runs on, as
    // when fadd crashes; the next start records it left to its launcher. A
    // compile fadd froze is continued first, or it would never end.
    if (r.pgid > 0 && (r.suspended || r.paused)) signal_unit(r, SIGCONT);
    if (r.pgid > 0) launcher_.release(r.pgid, ProcessLauncher::Leftovers::keep);
    it = running_.erase(it);
  }
}

}  // namespace fad
