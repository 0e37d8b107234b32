// Running a program and reading how it ended: restart's check tells fadd's
// usage error (2) from other failures by the exit code, doctor keeps what a
// timed-out trial compile printed, and a timeout takes the program's children too.
#include "common/program_output.h"

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

#include <catch2/catch.hpp>

namespace fad {
namespace {

TEST_CASE("run_program: the exit code and both output streams, in order, and stderr left out on request") {
  ProgramRun run = run_program({"/bin/sh", "-c", "echo out; echo err >&2; exit 2"}, 10);
  REQUIRE(run.started);
  CHECK_FALSE(run.timed_out);
  CHECK(run.exit_code == 2);
  CHECK(run.signal == 0);
  CHECK(run.output == "out\nerr\n");
  ProgramRunOptions quiet;
  quiet.with_stderr = false;
  CHECK(run_program({"/bin/sh", "-c", "echo out; echo err >&2"}, 10, quiet).output == "out\n");
  ProgramRunOptions capped;
  capped.max_output = 4096;
  const ProgramRun big = run_program({"/bin/sh", "-c", "head -c 100000 /dev/zero"}, 10, capped);
  CHECK(big.exit_code == 0);  // read to the end, not stalled on a full pipe
  CHECK(big.output.size() <= 4096 + 4096);
}

TEST_CASE("run_program: a program killed by a signal reads as 128 + N, and program_output names the signal") {
  ProgramRun run = run_program({"/bin/sh", "-c", "kill -TERM $$"}, 10);
  REQUIRE(run.started);
  CHECK(run.signal == 15);
  CHECK(run.exit_code == 143);
  auto output = program_output({"/bin/sh", "-c", "kill -TERM $$"}, 10);
  REQUIRE_FALSE(output);
  CHECK(output.error().find("signal 15") != std::string::npos);
}

TEST_CASE("run_program: a bare name is a path unless PATH is to be searched") {
  const ProgramRun bare = run_program({"sh", "-c", "exit 0"}, 10);
  CHECK_FALSE(bare.started);
  CHECK(bare.error.find("cannot run sh") == 0);
  ProgramRunOptions search;
  search.search_path = true;
  CHECK(run_program({"sh", "-c", "exit 0"}, 10, search).exit_code == 0);
}

// Gone, or only a zombie waiting for init to reap it.
bool dead(long pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return true;
  const auto paren = line.rfind(')');
  return paren != std::string::npos && paren + 2 < line.size() && line[paren + 2] == 'Z';
}

TEST_CASE("run_program: at the time limit the program and what it started are killed, its output kept") {
  // The child sleeps with the pipe open: killing only the shell would leave
  // it running (a trial compile's cicc), and holding the pipe.
  const ProgramRun slow = run_program({"/bin/sh", "-c", "sleep 60 & echo $!; wait"}, 1);
  CHECK(slow.timed_out);
  CHECK(slow.signal == 9);
  const long child = std::atol(slow.output.c_str());
  REQUIRE(child > 0);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!dead(child) && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  CHECK(dead(child));
  auto failed = program_output({"/bin/sh", "-c", "echo why; exit 3"}, 10);
  REQUIRE_FALSE(failed);
  CHECK(failed.error() == "/bin/sh failed (exit code 3): why\n");
  auto missing = program_output({"/no/such/program"}, 10);
  REQUIRE_FALSE(missing);
  CHECK(missing.error().find("cannot run /no/such/program") == 0);
}

}  // namespace
}  // namespace fad
