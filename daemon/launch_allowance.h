// How many compiles one user's launchers may have fadd record. Each recorded
// compile stays: a database row until the database is removed, and a log
// under the build's directory until the retention age. The per-build cap
// does not bound them, since a launch session build closes after 30 quiet
// seconds and the next launch opens another, so a user's loop of cache hits
// could fill the state disk for everyone. Each user has a bucket of
// `per_hour` compiles, refilled evenly over the hour, as Slurm limits the jobs
// a user may submit. Pure: the caller says what time it is.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <map>

namespace fad {

class LaunchAllowance {
 public:
  /// 0 = no limit.
  explicit LaunchAllowance(int per_hour);

  /// Takes one compile out of `uid`'s bucket at `now` (monotonic seconds);
  /// false, taking nothing, when the bucket holds less than one.
  bool take(uid_t uid, double now);
  /// Seconds until `uid` may record one more; 0: now.
  double wait_s(uid_t uid, double now) const;
  int per_hour() const { return per_hour_; }
  /// Users whose bucket is not full (the others need no entry).
  std::size_t tracked() const { return buckets_.size(); }

 private:
  struct Bucket {
    double level = 0;  ///< compiles left at `at`
    double at = 0;
  };
  double level(const Bucket& b, double now) const;

  int per_hour_;
  std::map<uid_t, Bucket> buckets_;
};

}  // namespace fad
