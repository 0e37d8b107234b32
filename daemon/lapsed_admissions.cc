// Per-user lapsed admissions; see lapsed_admissions.h.
#include "daemon/lapsed_admissions.h"

#include <algorithm>
#include <cmath>

namespace fad {

std::optional<LapsedAdmissions::Hold> LapsedAdmissions::note(uid_t uid, double now) {
  // Users forgotten an hour on leave the table, so it holds only those who
  // lapsed within the hour (few, on any machine).
  for (auto it = records_.begin(); it != records_.end();)
    it = now - it->second.last > kMemoryS ? records_.erase(it) : std::next(it);
  Record& r = records_[uid];
  if (r.count > 0 && now - r.last < kStartTimeoutS) return std::nullopt;
  ++r.count;
  r.last = now;
  if (r.count < 2) return std::nullopt;
  return hold_for(r.count);
}

LapsedAdmissions::Hold LapsedAdmissions::hold_for(int count) {
  if (count < 2) return Hold{count, 0};
  return Hold{count, std::min(kMaxHoldS, kStartTimeoutS * std::ldexp(1.0, count - 2))};
}

bool LapsedAdmissions::one_at_a_time(uid_t uid, double now) const {
  const auto it = records_.find(uid);
  return it != records_.end() && it->second.count >= 2 && now - it->second.last <= kMemoryS;
}

std::optional<LapsedAdmissions::Hold> LapsedAdmissions::hold(uid_t uid, double now) const {
  const auto it = records_.find(uid);
  if (it == records_.end()) return std::nullopt;
  const Hold h = hold_for(it->second.count);
  if (it->second.last + h.seconds <= now) return std::nullopt;
  return h;
}

}  // namespace fad
