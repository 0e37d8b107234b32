// When a launcher continues its own compiler. fadd freezes a launched compile
// (SIGSTOP of its process group) under memory pressure or `fad pause`, and
// only fadd continues it. A fadd that is killed and restarted continues it at
// start; one that is killed and never comes back would leave the compile, and
// the build tool waiting on it, stopped for ever. The launcher is the one
// process still there to notice: once its compiler has stayed stopped with
// no fadd listening for a while, it continues the compile itself, as it
// compiles without fadd when fadd is gone from the start.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <optional>
#include <string>

namespace fad::client {

/// Long enough for systemd to restart fadd (2 s) and fadd to continue its
/// frozen compiles itself; short against the build it holds up.
inline constexpr std::chrono::seconds kOrphanGrace{30};

class OrphanWatch {
 public:
  using Clock = std::chrono::steady_clock;
  explicit OrphanWatch(Clock::duration grace = kOrphanGrace) : grace_(grace) {}

  /// One look at the compiler. `fadd_there` is asked only while it is
  /// stopped (it costs a connection). True once it has been stopped with no
  /// fadd there for the whole grace, every look between included: time to
  /// continue it. A running compiler, or a fadd seen once, starts the count
  /// again.
  bool orphaned(bool stopped, const std::function<bool()>& fadd_there, Clock::time_point now);

 private:
  Clock::duration grace_;
  std::optional<Clock::time_point> alone_since_;
};

/// Whether something listens on `socket_path`: false only when nothing can
/// (no such socket, or connection refused). A socket this user may not use,
/// or a full backlog, counts as there: only fadd's absence is acted on.
bool daemon_listening(const std::string& socket_path);

/// Whether a fadd is there to continue the compile: the one that admitted it
/// (`fadd_pid`, 0 when unknown) is still alive (a cleaner of old files may
/// have deleted its socket), or some fadd listens at the socket (a restarted
/// one continues its predecessor's frozen compiles, and may freeze them
/// again). Gone only when neither holds.
bool fadd_there(pid_t fadd_pid, const std::string& socket_path);

}  // namespace fad::client
