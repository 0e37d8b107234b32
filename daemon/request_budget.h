// How much of fadd's event loop one user's requests may take. Requests run on
// the thread that also schedules compiles and reacts to memory pressure, so a
// user asking for the report of a huge build in a loop, from many connections,
// would slow fadd down for everyone. Each user has a bucket of loop time, as
// Slurm rate-limits RPCs per user (Slurm counts requests; a report and a ping
// differ a thousandfold, so this counts seconds): it holds up to `burst`,
// refills at `share` seconds per second, and a request runs only while the
// bucket is not in debt; what it took is taken out afterwards. A user over
// their share is slowed down, never refused: `fad status --watch` just ticks
// slower. Pure: the caller says what time it is.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <map>
#include <string_view>

namespace fad {

struct RequestLimits {
  double share = 0.25;                     ///< of the loop's time, per user, sustained
  std::chrono::duration<double> burst{1};  ///< what a user may take at once after a quiet spell
};

class RequestBudget {
 public:
  using Clock = std::chrono::steady_clock;
  using Seconds = std::chrono::duration<double>;
  using Limits = RequestLimits;

  explicit RequestBudget(Limits limits = {});

  /// How long `uid`'s next request waits before it runs; zero: now.
  std::chrono::milliseconds wait(uid_t uid, Clock::time_point now) const;
  /// Takes `cost` (the loop time a request of `uid` took) out of its bucket.
  void charge(uid_t uid, Clock::duration cost, Clock::time_point now);
  /// Users whose bucket is not full (the others need no entry).
  std::size_t tracked() const { return buckets_.size(); }

 private:
  struct Bucket {
    double seconds = 0;  ///< the level at `at`; negative: in debt
    Clock::time_point at;
  };
  double level(const Bucket& b, Clock::time_point now) const;
  void forget_full(Clock::time_point now);

  Limits limits_;
  std::map<uid_t, Bucket> buckets_;
};

/// Whether a request line is a compile launcher's (launch, launch_poll,
/// launch_started, launch_finished): those draw on a share of their own, so
/// a user's report loop never holds them. A launcher has deadlines (fadd
/// requeues an admission whose compiler has not started within 60 s, and a
/// launcher takes a fadd silent for 60 s as gone and compiles around it), so
/// holding them for the other requests' debt would turn a user's own report
/// loop into compiles fadd does not see. Each is cheap (a build's launchers
/// take a few percent of fadd's time), so their own share holds back only a
/// flood of them. A type spelled with escapes ("\u006caunch") is not told
/// apart: such a request waits with the others.
bool runs_at_once(std::string_view line);
/// The longest request line runs_at_once() accepts.
inline constexpr std::size_t kLauncherLineBytes = 64 * 1024;

}  // namespace fad
