// Fair share between users: the order in which queued units are offered to the
// scheduler when several users' builds wait. Pure code (no I/O, no clock).
//
// The policy: the next unit comes from the user who holds the smallest share of
// committed memory, counting both what their running units are predicted to
// hold and the units already placed ahead in this order (each at its estimated
// cost). Ties go to the user who had a unit started least recently (so users
// who hold nothing take turns when only one unit fits at a time), then to the
// one whose build at the head of their queue is the oldest. Within one user,
// the queue's own order (oldest build first, manifest order) is kept. With one
// user waiting, the order is unchanged.
//
// So a user who submits 300 units cannot keep another user's single unit
// waiting behind them, and a user whose units already hold most of the memory
// yields the next slot to one who holds less.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

namespace fad {

/// One queued unit as fair share sees it.
struct ShareCandidate {
  uid_t uid = 0;              ///< its build's owner
  std::int64_t build_id = 0;  ///< smaller = older
  std::uint64_t cost = 0;     ///< its estimated peak, bytes
};

/// The positions of `queue` in the order the scheduler should consider them.
/// `held`: bytes each user's running units are predicted to hold now (absent = 0).
/// `last_started`: when each user last had a unit started (absent: never).
std::vector<std::size_t> fair_share_order(const std::vector<ShareCandidate>& queue,
                                          const std::map<uid_t, std::uint64_t>& held,
                                          const std::map<uid_t, double>& last_started = {});

}  // namespace fad
