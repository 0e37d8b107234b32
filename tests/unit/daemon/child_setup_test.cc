// What a compiler inherits from fadd's child setup, checked in a real forked
// child: the file size limit it may not raise, and fadd's own lower one kept.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <cstdint>

#include "daemon/child_setup.h"

namespace fad {
namespace {

struct Limit {
  rlim_t soft = 0;
  rlim_t hard = 0;
};

/// Forks; the child starts with RLIMIT_FSIZE `start`, runs the setup and
/// writes the limits it ends with to a pipe.
Limit limit_after_setup(Limit start, std::uint64_t max_file_bytes) {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::close(fds[0]);
    rlimit lim{start.soft, start.hard};
    if (::setrlimit(RLIMIT_FSIZE, &lim) != 0) ::_exit(2);
    ChildSetup setup;
    setup.parent = ::getppid();
    setup.max_file_bytes = max_file_bytes;
    if (setup.run_in_child() != 0) ::_exit(3);
    if (::getrlimit(RLIMIT_FSIZE, &lim) != 0) ::_exit(4);
    const Limit got{lim.rlim_cur, lim.rlim_max};
    const bool written = ::write(fds[1], &got, sizeof got) == static_cast<ssize_t>(sizeof got);
    ::_exit(written ? 0 : 5);
  }
  ::close(fds[1]);
  Limit got;
  const ssize_t n = ::read(fds[0], &got, sizeof got);
  ::close(fds[0]);
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  REQUIRE(n == static_cast<ssize_t>(sizeof got));
  return got;
}

}  // namespace

TEST_CASE("child setup: a unit's file size limit is set hard, and never raises a lower one", "[child_setup]") {
  constexpr rlim_t kMiB = 1 << 20;
  // From no limit: soft and hard both, so the compiler cannot lift it again.
  auto set = limit_after_setup({RLIM_INFINITY, RLIM_INFINITY}, 16 * kMiB);
  CHECK(set.soft == 16 * kMiB);
  CHECK(set.hard == 16 * kMiB);
  // fadd started under a lower soft limit: kept, and the hard one still capped.
  auto lower_soft = limit_after_setup({2 * kMiB, RLIM_INFINITY}, 16 * kMiB);
  CHECK(lower_soft.soft == 2 * kMiB);
  CHECK(lower_soft.hard == 16 * kMiB);
  // A lower hard limit is never raised (it could not be, but nor is it tried).
  auto lower_hard = limit_after_setup({4 * kMiB, 8 * kMiB}, 16 * kMiB);
  CHECK(lower_hard.soft == 4 * kMiB);
  CHECK(lower_hard.hard == 8 * kMiB);
  // 0 leaves what fadd had.
  auto none = limit_after_setup({3 * kMiB, RLIM_INFINITY}, 0);
  CHECK(none.soft == 3 * kMiB);
  CHECK(none.hard == RLIM_INFINITY);
}

}  // namespace fad
