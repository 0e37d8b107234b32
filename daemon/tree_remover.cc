// Tree walks from directory descriptors; see tree_remover.h.
#include "daemon/tree_remover.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>
#include <random>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <spdlog/spdlog.h>

namespace fad {

namespace {

// Names for what is moved up into the spill dir: a serial keeps this fadd's
// walks apart (an unfinished one leaves parts for the next), and a random
// token keeps them from what an earlier fadd left there (in a container fadd
// has the same pid each time); the rename never replaces either way.
std::atomic<std::uint64_t> g_moved_serial{0};
const std::string& moved_prefix() {
  static const std::string prefix = [] {
    std::random_device rd;
    char buf[32];
    std::snprintf(buf, sizeof buf, "deep-%08x%08x-", rd(), rd());
    return std::string(buf);
  }();
  return prefix;
}

struct Walk {
  Walk(bool count_only, int spill_fd, const std::function<bool()>& halt)
      : count_only(count_only), spill_fd(spill_fd), halt(halt) {}

  const bool count_only;
  const int spill_fd;  ///< -1 when counting
  const std::function<bool()>& halt;
  std::uint64_t bytes = 0;
  bool stopped = false;
  std::string error;
  std::vector<std::string> spilled;  ///< names moved into the spill dir, still to delete

  bool halted() {
    if (!stopped && halt()) stopped = true;
    return stopped;
  }

  // Moves `name` (in `dir_fd`) into the spill dir under a name no other
  // entry there has; nullopt with errno set when it cannot.
  std::optional<std::string> move_up(int dir_fd, const char* name) {
    for (int tries = 0; tries < 16; ++tries) {
      std::string moved = moved_prefix() + std::to_string(++g_moved_serial);
      if (::renameat2(dir_fd, name, spill_fd, moved.c_str(), RENAME_NOREPLACE) == 0) return moved;
      if (errno != EEXIST) return std::nullopt;
    }
    return std::nullopt;
  }

  void fail(const std::string& what) {
    if (error.empty()) error = what + ": " + std::strerror(errno);
  }

  // Counts and (unless counting) empties the directory open as `fd`, which it
  // closes. Every name is looked at with AT_SYMLINK_NOFOLLOW and every
  // directory opened with O_NOFOLLOW from its parent's descriptor, so a swap
  // of a directory for a link mid-walk makes an open fail, never a descent
  // into the link's target.
  void empty(int fd, int depth) {
    DIR* d = ::fdopendir(fd);
    if (!d) {
      fail("cannot read a directory");
      ::close(fd);
      return;
    }
    // Deleting while reading may make readdir skip names: read again until a
    // pass deletes nothing (a few passes at most: a process still writing
    // there could otherwise keep the walk going for ever).
    bool again = true;
    for (int pass = 0; again && pass < 8 && !halted(); ++pass) {
      again = false;
      ::rewinddir(d);
      while (dirent* e = ::readdir(d)) {
        if (halted()) break;
        const char* name = e->d_name;
        if (std::strcmp(name, ".") == 0 || std::strcmp(name, "..") == 0) continue;
        struct stat st {};
        if (::fstatat(::dirfd(d), name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;  // gone meanwhile
        if (S_ISDIR(st.st_mode)) {
          if (!count_only && depth + 1 >= kMaxTreeDepth) {
            // Too deep to hold another descriptor: moved up, deleted later.
            if (auto moved = move_up(::dirfd(d), name)) {
              spilled.push_back(std::move(*moved));
              again = true;
            } else {
              fail("cannot move a deep directory into the trash");
            }
            continue;
          }
          if (count_only && depth + 1 >= kMaxTreeDepth) continue;
          const int sub = ::openat(::dirfd(d), name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
          if (sub < 0) {
            // Swapped for a link or a file since fstatat: delete that instead.
            if ((errno == ELOOP || errno == ENOTDIR) && !count_only && ::unlinkat(::dirfd(d), name, 0) == 0)
              again = true;
            else if (errno != ENOENT)
              fail("cannot open a directory");
            continue;
          }
          empty(sub, depth + 1);
          // A walk halted in there left it unfinished, not failed: the next
          // slice goes on from it (whether it is empty depends on readdir's order).
          if (!count_only && !stopped) {
            if (::unlinkat(::dirfd(d), name, AT_REMOVEDIR) == 0)
              again = true;
            else if (errno != ENOENT)
              fail("cannot remove a directory");
          }
        } else {
          if (S_ISREG(st.st_mode)) bytes += static_cast<std::uint64_t>(st.st_size);
          if (!count_only) {
            if (::unlinkat(::dirfd(d), name, 0) == 0)
              again = true;
            else if (errno != ENOENT)
              fail("cannot remove a file");
          }
        }
      }
      if (count_only) break;
    }
    ::closedir(d);
  }
};

}  // namespace

TreeResult remove_tree_until(const std::string& dir, bool count_only, const std::string& spill,
                             const std::function<bool()>& halt) {
  TreeResult out;
  out.path = dir;
  const int top = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (top < 0) {
    // Not a directory (any more): what a user swapped in for a moved part;
    // a link is removed, never followed.
    if ((errno == ENOTDIR || errno == ELOOP) && !count_only) {
      struct stat st {};
      if (::lstat(dir.c_str(), &st) == 0 && S_ISREG(st.st_mode)) out.bytes = static_cast<std::uint64_t>(st.st_size);
      if (::unlink(dir.c_str()) == 0 || errno == ENOENT) return out;
    }
    if (errno != ENOENT) out.error = dir + ": cannot open: " + std::strerror(errno);
    return out;
  }
  int spill_fd = -1;
  if (!count_only) {
    spill_fd = ::open(spill.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (spill_fd < 0) {
      out.error = spill + ": cannot open: " + std::strerror(errno);
      ::close(top);
      return out;
    }
  }
  Walk walk(count_only, spill_fd, halt);
  walk.empty(top, 0);
  // What was too deep, flattened into the spill dir: each a tree of its own.
  while (!walk.spilled.empty() && !walk.halted()) {
    const std::string name = walk.spilled.back();
    walk.spilled.pop_back();
    const int fd = ::openat(spill_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
      // The build's user swapped a file or link in for the directory between
      // its check and the move: it is in the trash all the same, removed.
      if ((errno == ENOTDIR || errno == ELOOP) && ::unlinkat(spill_fd, name.c_str(), 0) == 0) continue;
      if (errno != ENOENT) walk.fail("cannot open a moved directory");
      continue;
    }
    walk.empty(fd, 0);
    if (walk.halted()) {  // still there, and still this walk's to finish
      walk.spilled.push_back(name);
      break;
    }
    if (::unlinkat(spill_fd, name.c_str(), AT_REMOVEDIR) != 0) walk.fail("cannot remove a moved directory");
  }
  if (spill_fd >= 0) ::close(spill_fd);
  for (const auto& name : walk.spilled) out.moved.push_back(spill + "/" + name);
  if (!count_only && !walk.halted() && ::rmdir(dir.c_str()) != 0 && errno != ENOENT) walk.fail("cannot remove");
  out.bytes = walk.bytes;
  out.unfinished = walk.stopped;
  if (!walk.error.empty()) out.error = dir + ": " + walk.error;
  return out;
}

TreeResult remove_tree_in_time(const std::string& dir, bool count_only, const std::string& spill,
                               const std::atomic<bool>& stop, const std::function<bool()>& out_of_time) {
  TreeResult out = remove_tree_until(dir, count_only, spill, [&] { return stop || out_of_time(); });
  if (stop) {
    out.unfinished = false;
    out.error = dir + ": stopped before the end (fadd is stopping); the rest goes at the next start";
  } else if (out.unfinished) {
    out.error = dir + (count_only ? ": counting took longer than its time slice; the figure is short"
                                  : ": not deleted within its time slice (is a process still writing there?); "
                                    "the rest goes after the other deletions waiting");
  }
  return out;
}

TreeResult remove_tree(const std::string& dir, bool count_only, const std::string& spill, const std::atomic<bool>& stop,
                       std::chrono::steady_clock::duration slice) {
  return remove_tree_in_time(dir, count_only, spill, stop,
                             past_deadline(std::chrono::steady_clock::now, std::chrono::steady_clock::now() + slice));
}

std::function<bool()> past_deadline(const std::function<std::chrono::steady_clock::time_point()>& clock,
                                    std::chrono::steady_clock::time_point deadline) {
  // A process of the build's user still writing into the tree would
  // otherwise keep the walk going for ever. The clock is read every 256
  // names, not on each; once late, every later walk sharing this halts at
  // its first name.
  return [clock, deadline, seen = 0u, late = false]() mutable {
    if (!late && (++seen & 255) == 0) late = clock() > deadline;
    return late;
  };
}

TreeRemover inline_tree_remover() {
  return [](std::vector<std::string> dirs, bool count_only, std::string spill, std::uint32_t /*owner*/,
            std::function<void(std::vector<TreeResult>)> done) {
    static const std::atomic<bool> never{false};
    std::vector<TreeResult> results;
    for (const auto& d : dirs) results.push_back(remove_tree(d, count_only, spill, never, std::chrono::hours(24)));
    done(std::move(results));
  };
}

std::size_t next_tree_job(const std::vector<std::uint32_t>& owners,
                          const std::map<std::uint32_t, std::uint64_t>& last_served) {
  // Rank 0 for root; else 1 + when last served (0 when never), so ties go to queue order.
  auto rank = [&](std::uint32_t owner) -> std::uint64_t {
    if (owner == 0) return 0;
    auto it = last_served.find(owner);
    return 1 + (it == last_served.end() ? 0 : it->second);
  };
  std::size_t best = 0;
  for (std::size_t i = 1; i < owners.size(); ++i)
    if (rank(owners[i]) < rank(owners[best])) best = i;
  return best;
}

std::uint32_t tree_turn(std::uint32_t owner, int slice) { return owner == 0 && slice > 1 ? kRootLeftovers : owner; }

TreeWorker::TreeWorker(boost::asio::io_context& io, std::chrono::steady_clock::duration slice, int max_slices,
                       std::function<std::chrono::steady_clock::time_point()> clock)
    : io_(io), slice_(slice), max_slices_(max_slices), clock_(std::move(clock)), thread_([this] { loop(); }) {}

TreeWorker::~TreeWorker() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
    jobs_.clear();
  }
  wake_.notify_all();
  thread_.join();
}

TreeRemover TreeWorker::remover() {
  return [this](std::vector<std::string> dirs, bool count_only, std::string spill, std::uint32_t owner,
                std::function<void(std::vector<TreeResult>)> done) {
    {
      std::lock_guard lock(mutex_);
      jobs_.push_back(Job{std::move(dirs), count_only, std::move(spill), owner, std::move(done)});
    }
    wake_.notify_one();
  };
}

void TreeWorker::loop() {
  for (;;) {
    Job job;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [this] { return stop_ || !jobs_.empty(); });
      if (stop_) return;
      auto turn_of = [](const Job& j) { return tree_turn(j.owner, j.slice); };
      std::vector<std::uint32_t> owners;
      owners.reserve(jobs_.size());
      for (const auto& j : jobs_) owners.push_back(turn_of(j));
      const auto next = jobs_.begin() + static_cast<std::ptrdiff_t>(next_tree_job(owners, last_served_));
      job = std::move(*next);
      jobs_.erase(next);
      last_served_[turn_of(job)] = ++served_;
    }
    std::vector<TreeResult> results;
    std::vector<std::string> unfinished;
    // The slice is the job's, all its trees together: a user pruning a
    // hundred builds they keep writing into holds the others up for one
    // slice per turn, not a hundred.
    const auto out_of_time = past_deadline(clock_, clock_() + slice_);
    for (const auto& d : job.dirs) {
      results.push_back(remove_tree_in_time(d, job.count_only, job.spill, stop_, out_of_time));
      const auto& r = results.back();
      if (!r.unfinished || job.count_only) continue;
      unfinished.push_back(d);
      unfinished.insert(unfinished.end(), r.moved.begin(), r.moved.end());
    }
    // What one slice could not finish goes back in the queue, behind the
    // other users' jobs (next_tree_job), so one tree (a user still writing
    // into it) never holds up the others; after max_slices_ it waits in the
    // trash for the next start.
    if (!unfinished.empty() && job.slice >= max_slices_) {
      spdlog::warn(
          "{} tree(s) still not deleted after {} slices of {} s (is a process still writing there?); "
          "left in {} until fadd's next start: {}",
          unfinished.size(), max_slices_, std::chrono::duration_cast<std::chrono::seconds>(slice_).count(), job.spill,
          unfinished.front());
    } else if (!unfinished.empty()) {
      std::lock_guard lock(mutex_);
      if (!stop_)
        jobs_.push_back(Job{std::move(unfinished), false, job.spill, job.owner,
                            [](std::vector<TreeResult> rest) {
                              for (const auto& r : rest)
                                if (!r.error.empty()) spdlog::warn("deleting a pruned tree: {}", r.error);
                            },
                            job.slice + 1});
    }
    // The answer is the event loop's business: the callback touches the store.
    boost::asio::post(
        io_, [done = std::move(job.done), results = std::move(results)]() mutable { done(std::move(results)); });
  }
}

}  // namespace fad
