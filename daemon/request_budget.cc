// Per-user buckets of event-loop time; see request_budget.h.
#include "daemon/request_budget.h"

#include <algorithm>
#include <cmath>

#include "common/protocol.h"

namespace fad {

namespace {
// Past this many tracked users, the full buckets are dropped (a full bucket is
// the same as none), so a parade of uids cannot grow the map.
constexpr std::size_t kForgetAbove = 256;
}  // namespace

bool runs_at_once(std::string_view line) {
  // Every request is asked: no parse for the ones that cannot be.
  if (line.size() > kLauncherLineBytes || line.find("launch") == std::string_view::npos) return false;
  // Parsed for real: a "type" inside a string of another request is no type.
  const auto request = parse_request(line);
  if (!request) return false;
  const std::string& t = request->type;
  return t == "launch" || t == "launch_poll" || t == "launch_started" || t == "launch_finished";
}

RequestBudget::RequestBudget(Limits limits) : limits_(limits) {
  limits_.share = std::clamp(limits_.share, 1e-3, 1.0);
  limits_.burst = std::max(limits_.burst, Seconds(0));
}

double RequestBudget::level(const Bucket& b, Clock::time_point now) const {
  const double idle = std::max(0.0, Seconds(now - b.at).count());
  return std::min(limits_.burst.count(), b.seconds + idle * limits_.share);
}

std::chrono::milliseconds RequestBudget::wait(uid_t uid, Clock::time_point now) const {
  auto it = buckets_.find(uid);
  if (it == buckets_.end()) return std::chrono::milliseconds(0);
  const double debt = -level(it->second, now);
  if (debt <= 0) return std::chrono::milliseconds(0);
  // Rounded up: a wait that ends a hair early would find the bucket still in
  // debt and wait again for nothing.
  return std::chrono::milliseconds(static_cast<long long>(std::ceil(debt / limits_.share * 1000.0)));
}

void RequestBudget::charge(uid_t uid, Clock::duration cost, Clock::time_point now) {
  auto it = buckets_.find(uid);
  const double before = it == buckets_.end() ? limits_.burst.count() : level(it->second, now);
  const double after = before - std::max(0.0, Seconds(cost).count());
  if (after >= limits_.burst.count()) {
    if (it != buckets_.end()) buckets_.erase(it);
    return;
  }
  buckets_[uid] = Bucket{after, now};
  if (buckets_.size() > kForgetAbove) forget_full(now);
}

void RequestBudget::forget_full(Clock::time_point now) {
  for (auto it = buckets_.begin(); it != buckets_.end();)
    it = level(it->second, now) >= limits_.burst.count() ? buckets_.erase(it) : std::next(it);
}

}  // namespace fad
