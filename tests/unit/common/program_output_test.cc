// Running a program and reading how it ended: restart's check tells fadd's
// usage error (2) from other failures by run_program's exit code.
#include "common/program_output.h"

#include <catch2/catch.hpp>

namespace fad {
namespace {

TEST_CASE("run_program: the exit code and both output streams, in order") {
  auto run = run_program({"/bin/sh", "-c", "echo out; echo err >&2; exit 2"}, 10);
  REQUIRE(run);
  CHECK(run->exit_code == 2);
  CHECK(run->signal == 0);
  CHECK(run->output == "out\nerr\n");
}

TEST_CASE("run_program: a program killed by a signal reads as 128 + N, and names the signal") {
  auto run = run_program({"/bin/sh", "-c", "kill -TERM $$"}, 10);
  REQUIRE(run);
  CHECK(run->signal == 15);
  CHECK(run->exit_code == 143);
  auto output = program_output({"/bin/sh", "-c", "kill -TERM $$"}, 10);
  REQUIRE_FALSE(output);
  CHECK(output.error().find("signal 15") != std::string::npos);
}

TEST_CASE("run_program: only a program that cannot start, or overruns, is an error") {
  auto missing = run_program({"/no/such/program"}, 10);
  REQUIRE_FALSE(missing);
  CHECK(missing.error().find("cannot run /no/such/program") != std::string::npos);
  auto slow = run_program({"/bin/sleep", "30"}, 1);
  REQUIRE_FALSE(slow);
  CHECK(slow.error() == "/bin/sleep did not answer within 1 s");
  auto failed = program_output({"/bin/sh", "-c", "echo why; exit 3"}, 10);
  REQUIRE_FALSE(failed);
  CHECK(failed.error() == "/bin/sh failed (exit code 3): why\n");
}

}  // namespace
}  // namespace fad
