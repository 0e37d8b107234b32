// memory_settings_problem: settings that leave fad no memory on this machine.
#include <catch2/catch.hpp>

#include "daemon/options.h"

namespace fad {

using Catch::Contains;

namespace {
constexpr std::uint64_t kGiB = 1ull << 30;

MemorySnapshot machine(std::uint64_t total, std::optional<std::uint64_t> cgroup_limit = std::nullopt) {
  MemorySnapshot m;
  m.total = total;
  m.available = total / 2;
  m.cgroup_limit = cgroup_limit;
  return m;
}
}  // namespace

TEST_CASE("options: a reserve of all the memory there is is refused", "[options]") {
  Config c;
  c.reserve = Reserve{200 * kGiB, 0.0};
  CHECK_THAT(memory_settings_problem(c, machine(24 * kGiB)),
             Contains("reserve 200.0 GiB is all of the 24.0 GiB of memory this machine has"));
  c.reserve = Reserve{24 * kGiB, 0.0};
  CHECK_FALSE(memory_settings_problem(c, machine(24 * kGiB)).empty());
  // Inside a smaller cgroup (a WSL-sized VM), the cgroup's limit is what there is.
  c.reserve = Reserve{8 * kGiB, 0.0};
  CHECK(memory_settings_problem(c, machine(24 * kGiB)).empty());
  CHECK_THAT(memory_settings_problem(c, machine(24 * kGiB, 6 * kGiB)), Contains("fadd's cgroup allows"));
  CHECK(memory_settings_problem(c, machine(24 * kGiB, 64 * kGiB)).empty());
  // A percentage always leaves some; an unreadable machine (0) is not judged.
  c.reserve = Reserve{0, 99.0};
  CHECK(memory_settings_problem(c, machine(24 * kGiB)).empty());
  c.reserve = Reserve{kGiB, 0.0};
  CHECK(memory_settings_problem(c, machine(0)).empty());
}

}  // namespace fad
