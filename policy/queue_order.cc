// Longest first within each build, each build keeping its places; see queue_order.h.
#include "policy/queue_order.h"

#include <algorithm>
#include <map>

namespace fad {

std::vector<std::size_t> longest_first_within_builds(const std::vector<QueueRank>& ranks) {
  std::map<std::int64_t, std::vector<std::size_t>> slots;  // a build's places, in the given order
  for (std::size_t i = 0; i < ranks.size(); ++i) slots[ranks[i].build_id].push_back(i);
  std::vector<std::size_t> order(ranks.size());
  for (auto& [build, places] : slots) {
    std::vector<std::size_t> units = places;
    std::stable_sort(units.begin(), units.end(), [&](std::size_t a, std::size_t b) {
      if (ranks[a].probe != ranks[b].probe) return ranks[a].probe;
      if (ranks[a].duration_s != ranks[b].duration_s) return ranks[a].duration_s > ranks[b].duration_s;
      return ranks[a].tie_break > ranks[b].tie_break;
    });
    for (std::size_t k = 0; k < places.size(); ++k) order[places[k]] = units[k];
  }
  return order;
}

}  // namespace fad
