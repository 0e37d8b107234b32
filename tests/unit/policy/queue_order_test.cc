// Queue order within builds: probes, then longest first; builds keep their places.
#include "policy/queue_order.h"

#include <catch2/catch.hpp>

namespace fad {
namespace {

TEST_CASE("queue order: longest first within a build, builds keep the places they were given") {
  // An interleaved order between builds 1 and 2 (as a fair-share ordering may give).
  std::vector<QueueRank> ranks = {
      {1, false, 10, 0}, {2, false, 50, 0}, {1, false, 300, 0}, {2, false, 400, 0}, {1, false, 100, 0}};
  auto order = longest_first_within_builds(ranks);
  // Build 1 keeps places 0, 2, 4 (durations 300, 100, 10); build 2 places 1, 3 (400, 50).
  CHECK(order == std::vector<std::size_t>{2, 3, 4, 1, 0});
}

TEST_CASE("queue order: probes first, then the size tie-break, then the given order") {
  std::vector<QueueRank> ranks = {{1, false, 120, 10}, {1, true, 60, 0}, {1, false, 120, 99}, {1, false, 120, 10}};
  CHECK(longest_first_within_builds(ranks) == std::vector<std::size_t>{1, 2, 0, 3});
  CHECK(longest_first_within_builds({}).empty());
}

}  // namespace
}  // namespace fad
