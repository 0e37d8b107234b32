// How many records of a kind (launched compiles, builds) one user may have
// fadd write. Each stays: a database row until the database is removed, and
// a log under the build's directory until the retention age. The limits on
// what a user holds open do not bound them, since what closes makes room for
// more (a launch session build closes after 30 quiet seconds, a build that is
// cancelled at once is no longer open), so a user's loop could fill the state
// disk for everyone. Each user has a bucket of `per_hour`, refilled evenly
// over the hour, as Slurm limits the jobs a user may submit. Pure: the
// caller says what time it is.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <map>

namespace fad {

class HourlyAllowance {
 public:
  /// 0 = no limit.
  explicit HourlyAllowance(int per_hour);

  /// Takes one record out of `uid`'s bucket at `now` (monotonic seconds);
  /// false, taking nothing, when the bucket holds less than one.
  bool take(uid_t uid, double now);
  /// Seconds until `uid` may record one more; 0: now.
  double wait_s(uid_t uid, double now) const;
  int per_hour() const { return per_hour_; }
  /// Users whose bucket is not full (the others need no entry).
  std::size_t tracked() const { return buckets_.size(); }

 private:
  struct Bucket {
    double level = 0;  ///< records left at `at`
    double at = 0;
  };
  double level(const Bucket& b, double now) const;

  int per_hour_;
  std::map<uid_t, Bucket> buckets_;
};

}  // namespace fad
