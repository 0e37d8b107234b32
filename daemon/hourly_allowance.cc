// Per-user buckets of records; see hourly_allowance.h.
#include "daemon/hourly_allowance.h"

#include <algorithm>

namespace fad {

namespace {
// Past this many tracked users, the full buckets are dropped (a full bucket is
// the same as none), so a parade of uids cannot grow the map.
constexpr std::size_t kForgetAbove = 256;
}  // namespace

HourlyAllowance::HourlyAllowance(int per_hour) : per_hour_(std::max(0, per_hour)) {}

double HourlyAllowance::level(const Bucket& b, double now) const {
  const double refill = std::max(0.0, now - b.at) * per_hour_ / 3600.0;
  return std::min<double>(per_hour_, b.level + refill);
}

bool HourlyAllowance::take(uid_t uid, double now) {
  if (per_hour_ == 0) return true;
  auto it = buckets_.find(uid);
  const double before = it == buckets_.end() ? per_hour_ : level(it->second, now);
  if (before < 1) return false;
  buckets_[uid] = Bucket{before - 1, now};
  if (buckets_.size() > kForgetAbove)
    for (auto b = buckets_.begin(); b != buckets_.end();)
      b = level(b->second, now) >= per_hour_ ? buckets_.erase(b) : std::next(b);
  return true;
}

double HourlyAllowance::wait_s(uid_t uid, double now) const {
  if (per_hour_ == 0) return 0;
  auto it = buckets_.find(uid);
  if (it == buckets_.end()) return 0;
  const double missing = 1 - level(it->second, now);
  return missing <= 0 ? 0 : missing * 3600.0 / per_hour_;
}

}  // namespace fad
