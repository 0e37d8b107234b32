// Whether a process or a process group exists.
#include "common/process_exists.h"

#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

namespace fad {
namespace {

TEST_CASE("process_exists: this process, init (another user's when not root) and a reaped child") {
  CHECK(process_exists(::getpid()));
  CHECK(process_exists(1));  // EPERM for a user: it exists all the same
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) ::_exit(0);
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  CHECK_FALSE(process_exists(child));
  // 0 and negative ids name groups or everyone to kill(): never a process.
  CHECK_FALSE(process_exists(0));
  CHECK_FALSE(process_exists(-1));
}

TEST_CASE("group_exists: this process's group, never 0 or 1") {
  CHECK(group_exists(::getpgrp()));
  CHECK_FALSE(group_exists(0));
  CHECK_FALSE(group_exists(1));
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::setpgid(0, 0);
    ::_exit(0);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  CHECK_FALSE(group_exists(child));
}

}  // namespace
}  // namespace fad
