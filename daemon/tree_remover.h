// Deleting, or measuring, finished builds' trees without stalling fadd. A
// build's directory holds what its compiles wrote as its user: a tree that
// user shapes (a million files, nesting thousands deep, a directory swapped
// for a symlink to /etc while it is walked). `fad prune` and the retention
// rename it into STATE/trash on the event loop (one system call), and a
// worker thread walks and deletes it there from directory descriptors,
// never following a link.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace boost::asio {
class io_context;
}

namespace fad {

struct TreeResult {
  std::string path;
  std::uint64_t bytes = 0;  ///< of the regular files found (symlinks not followed)
  std::string error;        ///< empty when all went well
  bool unfinished = false;  ///< its time slice ran out first (the rest is still there)
  /// Parts moved up into the spill dir and not yet deleted (unfinished or
  /// stopped): trees of their own, for the next slice.
  std::vector<std::string> moved;
};

/// Sums the sizes of the regular files under `dir` and, unless `count_only`,
/// deletes it. Never follows a symbolic link. A walk holds at most
/// kMaxTreeDepth descriptors: deeper directories are moved up into `spill` (a
/// directory on the same filesystem) and deleted from there; counting alone
/// does not look below that depth. A missing `dir` is 0 bytes, no error.
/// `stop` ends the walk early, with an error saying so; so does `slice`
/// running out (`unfinished`).
TreeResult remove_tree(const std::string& dir, bool count_only, const std::string& spill, const std::atomic<bool>& stop,
                       std::chrono::steady_clock::duration slice);
inline constexpr int kMaxTreeDepth = 64;

/// The walk itself: the same, halted (`unfinished`, no error of its own)
/// once `halt` says so; it is asked before each name.
TreeResult remove_tree_until(const std::string& dir, bool count_only, const std::string& spill,
                             const std::function<bool()>& halt);
/// remove_tree with the time check given: `out_of_time` is asked before each
/// name (past_deadline makes one several walks can share).
TreeResult remove_tree_in_time(const std::string& dir, bool count_only, const std::string& spill,
                               const std::atomic<bool>& stop, const std::function<bool()>& out_of_time);
/// True from the first look at `clock` (every 256 asks) past `deadline` on.
std::function<bool()> past_deadline(const std::function<std::chrono::steady_clock::time_point()>& clock,
                                    std::chrono::steady_clock::time_point deadline);
/// The worker's slice per job, all its trees together: a million files take
/// about 25 s.
inline constexpr std::chrono::seconds kTreeSlice{60};
/// Slices one tree gets before the worker leaves it in the trash for the next
/// start: a process still writing into it would keep the worker busy for ever.
inline constexpr int kMaxTreeSlices = 10;

/// What the Engine calls: measure or delete `dirs` (moving deep parts into
/// `spill`) for the user `owner` (0: root, or fadd's own retention), then
/// `done` with one result per dir, on the event loop.
using TreeRemover = std::function<void(std::vector<std::string> dirs, bool count_only, std::string spill,
                                       std::uint32_t owner, std::function<void(std::vector<TreeResult>)> done)>;

/// The same, synchronously: for tests and for a fadd without a worker.
TreeRemover inline_tree_remover();

/// Which of the queued jobs, by their owners in queue order, the worker takes
/// next: root's first (an administrator freeing a full disk waits for no
/// user), then the owner served least recently (`last_served`: owner -> the
/// serial of the job last taken for them; absent: never), the oldest job of
/// theirs. So a user whose trees need slice after slice delays each other
/// user by at most one slice per turn. `owners` must not be empty.
std::size_t next_tree_job(const std::vector<std::uint32_t>& owners,
                          const std::map<std::uint32_t, std::uint64_t>& last_served);
/// The turn root's further slices take (uid -1, which no user has): first
/// place is for root's new jobs, not for trees that keep needing more time
/// (one someone keeps writing into, in the retention or the trash left at
/// start); those take turns like a user's.
inline constexpr std::uint32_t kRootLeftovers = 0xffffffffu;
/// Whose turn a job's `slice`-th slice (from 1) for `owner` takes.
std::uint32_t tree_turn(std::uint32_t owner, int slice);

/// One worker thread taking jobs fairly (next_tree_job); results are posted to `io`.
class TreeWorker {
 public:
  /// Each job gets `slice` at a time (by `clock`), each tree `max_slices` in all.
  explicit TreeWorker(boost::asio::io_context& io, std::chrono::steady_clock::duration slice = kTreeSlice,
                      int max_slices = kMaxTreeSlices,
                      std::function<std::chrono::steady_clock::time_point()> clock = std::chrono::steady_clock::now);
  /// Stops the walk in progress (what is left stays in the trash, swept at
  /// the next start) and joins the thread; queued jobs are dropped.
  ~TreeWorker();
  TreeWorker(const TreeWorker&) = delete;
  TreeWorker& operator=(const TreeWorker&) = delete;

  TreeRemover remover();

 private:
  struct Job {
    std::vector<std::string> dirs;
    bool count_only = false;
    std::string spill;
    std::uint32_t owner = 0;
    std::function<void(std::vector<TreeResult>)> done;
    int slice = 1;  ///< which slice of these trees this is
  };
  void loop();

  boost::asio::io_context& io_;
  const std::chrono::steady_clock::duration slice_;
  const int max_slices_;
  const std::function<std::chrono::steady_clock::time_point()> clock_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Job> jobs_;
  std::map<std::uint32_t, std::uint64_t> last_served_;  ///< owner -> serial of their last job taken
  std::uint64_t served_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace fad
