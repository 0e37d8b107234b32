// Admissions a user's launchers let lapse: admitted, and no compiler started
// within the start timeout (a client that only polls, or one that ends before
// starting). Such a client would hold a core from everyone's compiles 15 s at
// a time, in turn with every other user; counted per user, since a client
// makes new units at will. Pure: the caller says what time it is.
//
// - The first lapse within the hour is forgiven: once may be a Ctrl-Z at the
//   wrong moment; again is a pattern.
// - Lapses closer together than the start timeout are one: a build stopped
//   just as several of its compiles were admitted is one pause, not many.
// - From the second on, the user's launched compiles are held: the start
//   timeout, then twice as long each time, up to 10 minutes. After a hold
//   they are admitted one at a time until a compiler starts, so such a client
//   holds one core a few percent of the time.
// - An hour without a lapse, and all is forgotten.
#pragma once

#include <sys/types.h>

#include <map>
#include <optional>

namespace fad {

class LapsedAdmissions {
 public:
  /// How long an admission may wait for its compiler before it lapses.
  static constexpr double kStartTimeoutS = 15;
  static constexpr double kMaxHoldS = 600;
  static constexpr double kMemoryS = 3600;

  struct Hold {
    int count = 0;       ///< lapses within the hour that led to it
    double seconds = 0;  ///< how long it lasts in all
  };

  /// Counts a lapse of `uid`'s at `now` (monotonic seconds); the hold it
  /// starts, if any.
  std::optional<Hold> note(uid_t uid, double now);
  /// Whether `uid`'s launched compiles are admitted one at a time (it let two
  /// or more lapse within the hour).
  bool one_at_a_time(uid_t uid, double now) const;
  /// The hold on `uid`'s launched compiles at `now`, if one lasts.
  std::optional<Hold> hold(uid_t uid, double now) const;

 private:
  struct Record {
    int count = 0;
    double last = 0;  ///< when the last one was counted (and its hold began)
  };
  /// The hold `count` lapses within the hour lead to; seconds 0: none.
  static Hold hold_for(int count);
  std::map<uid_t, Record> records_;
};

}  // namespace fad
