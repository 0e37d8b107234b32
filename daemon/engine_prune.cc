// Retention: finished builds' outputs and logs (STATE/builds/ID/) are deleted
// once they are older than an age, by `fad prune` or by fadd itself once a
// day. The database rows stay, marked pruned, so `fad history` still lists the
// builds; the estimator's unit_history is never touched, so what fad learned
// about each unit survives every prune.
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>

#include <spdlog/spdlog.h>

#include "common/duration.h"
#include "common/size.h"
#include "common/time_text.h"
#include "daemon/engine.h"
#include "daemon/responses.h"

namespace fad {

namespace fs = std::filesystem;

namespace {

// The RFC 3339 time `seconds` before `wall` (same format, so that stored
// times compare as strings); nullopt when `wall` does not parse. An age older
// than 1970 (--older-than 999999999w) is 1970: no build is that old.
std::optional<std::string> rfc3339_before(const std::string& wall, std::int64_t seconds) {
  const auto now = parse_rfc3339(wall);
  if (!now) return std::nullopt;
  return format_rfc3339(std::max(0.0, *now - static_cast<double>(seconds)));
}

/// What a prune could not do, said in one bounded line: the first few in
/// full, the rest counted (a prune of thousands of builds on a full disk
/// would otherwise answer with a line past the protocol's limit).
class Failures {
 public:
  void add(const std::string& what) {
    if (shown_.size() < kShown)
      shown_.push_back(what);
    else
      ++more_;
  }
  bool empty() const { return shown_.empty(); }
  std::string text() const {
    std::string out;
    for (const auto& s : shown_) out += (out.empty() ? "" : "; ") + s;
    if (more_) out += "; and " + std::to_string(more_) + " more";
    return out;
  }

 private:
  static constexpr std::size_t kShown = 3;
  std::vector<std::string> shown_;
  std::size_t more_ = 0;
};

}  // namespace

void Engine::set_tree_remover(TreeRemover remover) {
  remove_trees_ = std::move(remover);
  // What a stopped fadd left in the trash (its worker stops mid-tree).
  std::error_code ec;
  std::vector<std::string> left;
  for (fs::directory_iterator it(trash_dir(), ec), end; !ec && it != end; it.increment(ec))
    left.push_back(it->path().string());
  if (left.empty()) return;
  remove_trees_(std::move(left), false, trash_dir(), 0, [](std::vector<TreeResult> results) {
    std::uint64_t bytes = 0;
    std::size_t failed = 0;
    for (const auto& r : results) {
      bytes += r.bytes;
      if (!r.error.empty()) spdlog::warn("emptying the trash: {}", r.error);
      failed += !r.error.empty();
    }
    spdlog::info("emptied the trash a stopped fadd left: {} of {} entries, {}", results.size() - failed, results.size(),
                 format_size(bytes));
  });
}

std::string Engine::unit_temp_dir(const UnitRecord& unit, int attempt, const std::string& node) const {
  if (!node.empty()) return "";
  // Per attempt: a compiler of the last one may still be on its way out.
  return build_dir(unit.build_id) + "/tmp/" + std::to_string(unit.id) + "-" + std::to_string(attempt);
}

void Engine::discard_temp_dirs(std::vector<std::string> dirs, uid_t owner) {
  std::vector<std::string> moved;
  std::error_code ec;
  for (const auto& dir : dirs) {
    // Empty, as nvcc leaves it when it ends by itself: removed here. Else (a
    // killed compiler's files) renamed at once, deleted by the worker: a
    // big unit's temporaries are large, and the user may have made it a tree
    // of any shape.
    if (dir.empty() || ::rmdir(dir.c_str()) == 0 || errno == ENOENT) continue;
    const std::string to =
        trash_dir() + "/tmp-" + fs::path(dir).filename().string() + "-" + std::to_string(++trash_serial_);
    fs::create_directories(trash_dir(), ec);
    if (::rename(dir.c_str(), to.c_str()) == 0)
      moved.push_back(to);
    else if (errno != ENOENT)
      spdlog::warn("cannot move {} to the trash: {}", dir, std::strerror(errno));
  }
  if (moved.empty() || !remove_trees_) return;
  remove_trees_(std::move(moved), false, trash_dir(), owner, [](std::vector<TreeResult> results) {
    for (const auto& r : results)
      if (!r.error.empty()) spdlog::warn("deleting a unit's temporary files: {}", r.error);
  });
}

void Engine::discard_stale_build_dirs() {
  // A known build's tmp/ holds what the compilers of a stopped fadd left.
  // A directory under builds/ that no build of the database owns is another
  // database's (fad.db deleted, emptied or replaced while builds existed):
  // the new build given its number, perhaps another user's, must not find
  // the old one's logs and outputs in it. It is moved out of builds/, and
  // kept: a database restored from a backup (or a recovered copy) may own
  // it still, and fadd never deletes a finished build's files on a guess.
  std::error_code ec;
  const std::string builds = options_.state_dir + "/builds";
  const std::string aside = options_.state_dir + "/orphaned";
  std::vector<std::string> moved;
  for (fs::directory_iterator it(builds, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.empty() || name.size() > 18 || name.find_first_not_of("0123456789") != std::string::npos) continue;
    if (const auto build = store_.build(std::stoll(name))) {
      // What the compilers of a stopped fadd left: none of them runs now.
      std::vector<std::string> temps;
      std::error_code tec;
      for (fs::directory_iterator t(it->path() / "tmp", tec), end_t; !tec && t != end_t; t.increment(tec))
        temps.push_back(t->path().string());
      discard_temp_dirs(std::move(temps), owner_of(*build));
      continue;
    }
    // Private like the state dir: what is inside keeps its owners and modes.
    if (::mkdir(aside.c_str(), 0700) != 0 && errno != EEXIST) {
      spdlog::warn("{} belongs to no build fadd knows, and cannot be moved aside to {}: {}", it->path().string(), aside,
                   std::strerror(errno));
      continue;
    }
    const std::string target =
        aside + "/" + name + "-" + std::to_string(::time(nullptr)) + "-" + std::to_string(++trash_serial_);
    if (::rename(it->path().c_str(), target.c_str()) != 0) {
      spdlog::warn("{} belongs to no build fadd knows, and cannot be moved aside to {}: {}", it->path().string(),
                   target, std::strerror(errno));
      continue;
    }
    moved.push_back(target);
  }
  if (moved.empty()) return;
  spdlog::warn(
      "{} build director{} under {} belong to no build in the database (was fad.db deleted, emptied or "
      "replaced?); moved, kept, to {} (first {}): if the database was replaced by mistake, stop fadd, restore "
      "it and move them back; otherwise delete them",
      moved.size(), moved.size() == 1 ? "y" : "ies", builds, aside, moved.front());
}

void Engine::prune(const Caller& caller, const PruneRequest& req, Reply done) {
  const std::optional<std::int64_t> age = req.older_than_s ? req.older_than_s : options_.retention_s;
  if (!age)
    return done(error_response(
        ErrorCode::usage,
        "no age to prune by: the 'retention' config key is \"never\"; pass --older-than AGE (e.g. 30d)"));
  const bool limited = !caller.is_root();
  if (limited && pruning_.count(caller.uid))
    return done(error_response(ErrorCode::failed,
                               "a prune of yours is still deleting or counting its builds' files; "
                               "try again once it has answered"));
  const std::string now = clock_.wall();
  auto cutoff = rfc3339_before(now, *age);
  if (!cutoff) return done(error_response(ErrorCode::internal, "cannot compute the prune cutoff from the time " + now));
  prune_builds(caller, store_.prunable_builds(*cutoff), req.dry_run,
               "older than " + format_age(*age) + " (finished before " + *cutoff + ")",
               [age = *age, done = std::move(done)](Response r) {
                 if (r.ok) r.result["older_than_s"] = age;
                 done(std::move(r));
               });
}

void Engine::prune_builds(const Caller& caller, std::vector<BuildRecord> candidates, bool dry_run,
                          const std::string& why, Reply done) {
  const bool limited = !caller.is_root();
  const std::string now = clock_.wall();
  std::error_code ec;
  if (!dry_run) fs::create_directories(trash_dir(), ec);
  if (ec) return done(error_response(ErrorCode::failed, "cannot create " + trash_dir() + ": " + ec.message()));
  // On the event loop only what is one system call per build: the rename into
  // the trash and the mark. Walking and deleting what the build's user wrote
  // (any number of files, any depth) is the tree remover's, off the loop.
  std::vector<BuildRecord> chosen;
  std::vector<std::string> trees;
  Failures failures;
  bool unwritable = false;  // a mark failed: the rest are kept in memory untried
  for (auto& b : candidates) {
    // Each user prunes their own builds; root (and the retention) every build.
    if (!caller.is_root() && owner_of(b) != caller.uid) continue;
    if (unmarked_prunes_.count(b.id)) continue;  // gone already, its mark still to be written
    // A cancelled build may still be stopping its compilers; they write to
    // its logs until they exit. Its turn comes on the next prune.
    bool stopping = false;
    for (const auto& [uid, r] : running_) stopping |= r.unit.build_id == b.id;
    if (stopping) continue;
    std::string tree = build_dir(b.id);
    if (!dry_run) {
      const std::string moved = trash_dir() + "/" + std::to_string(b.id) + "-" + std::to_string(++trash_serial_);
      if (::rename(tree.c_str(), moved.c_str()) != 0 && errno != ENOENT) {
        failures.add(tree + ": " + std::strerror(errno));
        continue;
      }
      try {
        if (!unwritable) store_.mark_pruned(b.id, now);
      } catch (const StoreError& e) {
        // A full disk is when a prune matters most, and the mark is what
        // fails then: the tree is deleted all the same and the mark kept here,
        // written on the first tick the database takes it. Until then fadd
        // treats the build as pruned; a crash before then leaves a build
        // marked with outputs the next prune finds gone, which it marks.
        storage_failed(e.what());
        spdlog::error("prune: cannot mark build {} pruned: {} (kept, retried each tick)", b.id, e.what());
        unwritable = true;
      }
      if (unwritable) unmarked_prunes_[b.id] = now;
      tree = moved;
    }
    trees.push_back(std::move(tree));
    chosen.push_back(std::move(b));
  }
  // Nothing to delete: answered now, not behind other prunes' deletions.
  const TreeRemover now_or_worker = trees.empty() ? inline_tree_remover() : remove_trees_;
  const bool held = limited && !trees.empty();
  if (held) pruning_.insert(caller.uid);
  now_or_worker(
      std::move(trees), dry_run, trash_dir(), caller.uid,
      [this, held, uid = caller.uid, why, dry_run, chosen = std::move(chosen), failures = std::move(failures),
       done = std::move(done)](std::vector<TreeResult> results) mutable {
        if (held) pruning_.erase(uid);
        json builds = json::array();
        std::uint64_t freed = 0;
        for (std::size_t i = 0; i < chosen.size() && i < results.size(); ++i) {
          const auto& b = chosen[i];
          const auto& r = results[i];
          // A tree that could not all be deleted is still gone from
          // the build (it is in the trash); the error says what is left.
          if (!r.error.empty()) failures.add(r.error);
          freed += r.bytes;
          builds.push_back(
              {{"id", b.id}, {"name", b.name}, {"finished_at", b.finished_at.value_or("")}, {"bytes", r.bytes}});
        }
        if (!dry_run && !builds.empty())
          spdlog::info("pruned {} finished build(s) {}, freed {}", builds.size(), why, format_size(freed));
        if (!failures.empty()) {
          spdlog::warn("prune: cannot delete {}", failures.text());
          return done(error_response(ErrorCode::failed, "cannot delete " + failures.text()));
        }
        done(ok_response({{"dry_run", dry_run}, {"bytes", freed}, {"builds", builds}}));
      });
}

void Engine::retry_unmarked_prunes() {
  for (auto it = unmarked_prunes_.begin(); it != unmarked_prunes_.end();) {
    store_.mark_pruned(it->first, it->second);  // throws again while the disk is full
    it = unmarked_prunes_.erase(it);
    storage_ok();
  }
}

std::optional<std::string> Engine::pruned_on(const BuildRecord& b) const {
  if (b.pruned_at) return b.pruned_at;
  const auto it = unmarked_prunes_.find(b.id);
  if (it == unmarked_prunes_.end()) return std::nullopt;
  return it->second;
}

void Engine::apply_keep_limit(double now) {
  if (shutting_down_ || (options_.keep_builds_per_user <= 0 && options_.keep_records_per_user <= 0)) return;
  if (last_keep_check_ && now - *last_keep_check_ < kKeepCheckEveryS) return;
  last_keep_check_ = now;
  const std::uint64_t finished = store_.builds_finished();
  if (keep_seen_finished_ != finished) {
    keep_seen_finished_ = finished;
    keep_builds_again_ = true;
    records_due_ = now;
  }
  if (const int keep = options_.keep_builds_per_user; keep > 0 && keep_builds_again_) {
    auto past = store_.builds_past_newest(keep);
    // Pruning goes on off the loop and may fail: look again until none is left.
    keep_builds_again_ = !past.empty();
    // Grouped per user, so that the log says whose builds went.
    std::map<uid_t, std::vector<BuildRecord>> over;
    for (auto& b : past) over[owner_of(b)].push_back(std::move(b));
    for (auto& [uid, builds] : over)
      prune_builds(Caller{}, std::move(builds), false,
                   "of " + user_name(uid) + " past their newest " + std::to_string(keep) + " (keep_builds_per_user)",
                   [](Response r) {
                     if (!r.ok) spdlog::warn("keep_builds_per_user: {}", r.message);
                   });
  }
  apply_record_limit(now);
}

void Engine::apply_record_limit(double now) {
  const int keep = options_.keep_records_per_user;
  // A write the database refused (a full disk) and still held here may name
  // the rows: nothing goes until it is written.
  if (keep <= 0 || now < records_due_ || !storage_problem_.empty() || !unrecorded_.empty() ||
      !unwritten_attempts_.empty())
    return;
  // The hourly allowances are counted again from these rows after a restart.
  const auto wall = parse_rfc3339(clock_.wall());
  if (!wall) return;
  std::map<uid_t, std::vector<BuildRecord>> unpruned;
  std::map<uid_t, int> deleted;
  int units = 0;
  auto past = store_.records_past_newest(keep, kRecordsPerPass);
  // Unless something is left for the next minute, nothing needs a look until
  // a build finishes, or the oldest one still too recent has aged.
  bool again = false;
  std::optional<double> aged;
  for (auto& b : past) {
    const auto finished = parse_rfc3339(b.finished_at.value_or(""));
    if (finished && *finished > *wall - kRecordsKeptS) {
      // Passed over, not the end of the pass: in the order they finished,
      // one recorded in the future (the clock has stepped back since) is
      // followed by older ones that may go.
      const double left = *finished + kRecordsKeptS - *wall;
      aged = aged ? std::min(*aged, left) : left;
      continue;
    }
    // A record outlives its build's files, never the other way round: an
    // unpruned one is pruned first (whatever keep_builds_per_user says), and
    // its rows go on a later pass, once the mark is written.
    if (!pruned_on(b)) {
      unpruned[owner_of(b)].push_back(std::move(b));
      again = true;
    } else if (unmarked_prunes_.count(b.id) || units >= kRecordUnitsPerPass) {
      again = true;
    } else {
      units += store_.delete_build(b.id);
      ++deleted[owner_of(b)];
    }
  }
  if (again || (!aged && past.size() == static_cast<std::size_t>(kRecordsPerPass)))
    records_due_ = now;
  else
    records_due_ = aged ? now + *aged : std::numeric_limits<double>::infinity();
  for (const auto& [uid, n] : deleted)
    spdlog::info("deleted the records of {} finished build(s) of {} past their newest {} (keep_records_per_user)", n,
                 user_name(uid), keep);
  for (auto& [uid, builds] : unpruned)
    prune_builds(Caller{}, std::move(builds), false,
                 "of " + user_name(uid) + " past their newest " + std::to_string(keep) +
                     " records (keep_records_per_user; the records go next)",
                 [](Response r) {
                   if (!r.ok) spdlog::warn("keep_records_per_user: {}", r.message);
                 });
}

void Engine::apply_retention(double now) {
  if (!options_.retention_s || shutting_down_) return;
  if (last_retention_ && now - *last_retention_ < options_.retention_every_s) return;
  last_retention_ = now;
  PruneRequest req;
  req.older_than_s = options_.retention_s;
  // Root's view: the retention covers every user's builds.
  prune(Caller{}, req, [](Response r) {
    if (!r.ok) spdlog::warn("retention: {}", r.message);
  });
}

}  // namespace fad
