// Fair share between users; see fair_share.h.
#include "policy/fair_share.h"

#include <deque>
#include <limits>

namespace fad {

std::vector<std::size_t> fair_share_order(const std::vector<ShareCandidate>& queue,
                                          const std::map<uid_t, std::uint64_t>& held,
                                          const std::map<uid_t, double>& last_started) {
  const auto started = [&](uid_t uid) {
    const auto it = last_started.find(uid);
    return it == last_started.end() ? -std::numeric_limits<double>::infinity() : it->second;
  };
  // Each user's units, in queue order.
  std::map<uid_t, std::deque<std::size_t>> per_user;
  for (std::size_t i = 0; i < queue.size(); ++i) per_user[queue[i].uid].push_back(i);
  std::vector<std::size_t> order;
  order.reserve(queue.size());
  if (per_user.size() <= 1) {
    for (std::size_t i = 0; i < queue.size(); ++i) order.push_back(i);
    return order;
  }
  std::map<uid_t, std::uint64_t> share;
  for (const auto& [uid, units] : per_user) {
    auto it = held.find(uid);
    share[uid] = it == held.end() ? 0 : it->second;
  }
  while (!per_user.empty()) {
    auto best = per_user.end();
    for (auto it = per_user.begin(); it != per_user.end(); ++it) {
      if (best == per_user.end()) {
        best = it;
        continue;
      }
      const std::uint64_t a = share[it->first], b = share[best->first];
      const double a_started = started(it->first), b_started = started(best->first);
      const std::int64_t a_build = queue[it->second.front()].build_id, b_build = queue[best->second.front()].build_id;
      if (a < b || (a == b && (a_started < b_started || (a_started == b_started && a_build < b_build)))) best = it;
    }
    const std::size_t next = best->second.front();
    best->second.pop_front();
    order.push_back(next);
    share[best->first] += queue[next].cost;
    if (best->second.empty()) per_user.erase(best);
  }
  return order;
}

}  // namespace fad
