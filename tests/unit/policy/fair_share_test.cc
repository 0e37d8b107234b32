// Fair share between users: which user's unit the scheduler considers next.
#include <catch2/catch.hpp>

#include "policy/fair_share.h"

using fad::fair_share_order;
using fad::ShareCandidate;

namespace {
constexpr std::uint64_t kGiB = 1ull << 30;

/// The uids in the order fair share puts the queue.
std::vector<uid_t> users_in_order(const std::vector<ShareCandidate>& q, const std::map<uid_t, std::uint64_t>& held) {
  std::vector<uid_t> out;
  for (auto i : fair_share_order(q, held)) out.push_back(q[i].uid);
  return out;
}
}  // namespace

TEST_CASE("fair share: one user keeps the queue's own order", "[fair_share]") {
  std::vector<ShareCandidate> q{{1000, 3, 4 * kGiB}, {1000, 1, kGiB}, {1000, 2, 2 * kGiB}};
  CHECK(fair_share_order(q, {{1000, 50 * kGiB}}) == std::vector<std::size_t>{0, 1, 2});
  CHECK(fair_share_order({}, {}).empty());
}

TEST_CASE("fair share: a big submit does not keep another user's unit waiting", "[fair_share]") {
  // Alice queued 4 units first (build 1), Bob one unit later (build 2); nothing runs.
  std::vector<ShareCandidate> q{
      {1000, 1, 4 * kGiB}, {1000, 1, 4 * kGiB}, {1000, 1, 4 * kGiB}, {1000, 1, 4 * kGiB}, {1001, 2, 4 * kGiB}};
  // Both hold nothing: the oldest build goes first, then Bob (0 < 4 GiB), then Alice's rest.
  CHECK(users_in_order(q, {}) == std::vector<uid_t>{1000, 1001, 1000, 1000, 1000});
  // Alice's units already hold 20 GiB: Bob first.
  CHECK(users_in_order(q, {{1000, 20 * kGiB}}) == std::vector<uid_t>{1001, 1000, 1000, 1000, 1000});
}

TEST_CASE("fair share: users alternate by committed memory, costs counted as placed", "[fair_share]") {
  // Alice's units are small (1 GiB), Bob's big (4 GiB): Alice gets several
  // slots for each of Bob's, keeping their committed memory level.
  std::vector<ShareCandidate> q;
  for (int i = 0; i < 6; ++i) q.push_back({1000, 1, kGiB});
  for (int i = 0; i < 2; ++i) q.push_back({1001, 2, 4 * kGiB});
  CHECK(users_in_order(q, {}) == std::vector<uid_t>{1000, 1001, 1000, 1000, 1000, 1000, 1001, 1000});
  // Within a user, the queue's order is kept.
  auto order = fair_share_order(q, {});
  std::vector<std::size_t> alice;
  for (auto i : order)
    if (q[i].uid == 1000) alice.push_back(i);
  CHECK(alice == std::vector<std::size_t>{0, 1, 2, 3, 4, 5});
}

TEST_CASE("fair share: ties go to the user with the oldest build at the head", "[fair_share]") {
  std::vector<ShareCandidate> q{{1002, 9, kGiB}, {1001, 4, kGiB}, {1003, 7, kGiB}};
  CHECK(users_in_order(q, {}) == std::vector<uid_t>{1001, 1003, 1002});
}

TEST_CASE("fair share: users holding nothing take turns, the one started least recently first", "[fair_share]") {
  // One slot (or memory for one unit): whenever it frees, both hold nothing.
  // Bob's big build is older; Alice's was submitted after it.
  std::vector<ShareCandidate> q{{1001, 1, kGiB}, {1001, 1, kGiB}, {1000, 2, kGiB}};
  const auto first = [&](const std::map<uid_t, double>& started) { return q[fair_share_order(q, {}, started)[0]].uid; };
  CHECK(first({}) == 1001);                            // nobody started anything: the oldest build
  CHECK(first({{1001, 10.0}}) == 1000);                // Bob had the last turn: Alice's
  CHECK(first({{1001, 10.0}, {1000, 20.0}}) == 1001);  // then Bob's again
  // Holding memory still comes first: Alice, holding more, waits whoever started last.
  CHECK(q[fair_share_order(q, {{1000, 4 * kGiB}}, {{1001, 10.0}})[0]].uid == 1001);
}
