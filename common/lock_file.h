// STATE/fadd.lock, fadd's one-per-state-dir lock: what fadd writes in it and
// `fad daemon start` and `stop` read. The flock is what counts; the text only
// informs: the holder's pid on the first line; once it has begun to stop, a
// line saying so; once it listens, a line naming its socket (last, so that an
// older fad still finds the stopping mark on the second line).
#pragma once

#include <string>
#include <string_view>

namespace fad {

inline constexpr std::string_view kLockFileName = "fadd.lock";
/// The second line of a stopping fadd's lock file: its socket is closed while
/// its compilers end, which takes seconds (the kill grace for one that
/// ignores SIGTERM).
inline constexpr std::string_view kStoppingMark = "stopping";
/// Begins the line naming the socket the holder listens at.
inline constexpr std::string_view kSocketMark = "socket ";

/// What a lock file says of its holder.
struct LockText {
  long pid = 0;  ///< 0: no file, not a regular file, or no pid on its first line
  bool stopping = false;
  /// The socket it listens at; empty before it listens (or from an older fadd).
  std::string socket;
};

/// Reads the lock file's text without trusting it: anyone who may write the
/// state dir may have put a FIFO (whose open would block), a link or a huge
/// file there. Never blocks, never follows a link, reads at most a page.
LockText read_lock_text(const std::string& path);

/// Whether a process holds an exclusive flock on `path`: fadd's lock file
/// (a regular file, never through a link) or its state dir (a directory,
/// through links: a configured state dir may be one). Never blocks; anything
/// else is "not held".
bool lock_held(const std::string& path);

}  // namespace fad
