// What becomes of a unit when its process ends.
#include "policy/exit_outcome.h"

#include <catch2/catch.hpp>

namespace fad {
namespace {

using Action = ExitOutcome::Action;
constexpr std::uint64_t kGiB = 1ull << 30;

UnitExit ended(int code, bool signaled = false) {
  UnitExit e;
  e.exit_code = code;
  e.signaled = signaled;
  e.peak = 4 * kGiB;
  return e;
}

TEST_CASE("exit outcome: success, failure of a bundled and of a launched unit") {
  CHECK(decide_exit(ended(0)).action == Action::succeed);
  CHECK(decide_exit(ended(1)).action == Action::fail_build);
  UnitExit launched = ended(2);
  launched.external = true;
  CHECK(decide_exit(launched).action == Action::fail);  // the build tool decides about the rest
  // Killed by someone's signal (not the OOM killer): a failure.
  CHECK(decide_exit(ended(137, true)).action == Action::fail_build);
}

TEST_CASE("exit outcome: an OOM kill reruns the unit with its peak + 25%, up to three runs in all") {
  UnitExit e = ended(137, true);
  e.oom_killed = true;
  for (int attempt = 1; attempt < kMaxOomAttempts; ++attempt) {
    e.attempts = attempt;
    auto out = decide_exit(e);
    CHECK(out.action == Action::requeue);
    CHECK(out.oom_rerun);
    CHECK(out.floor == 5 * kGiB);
    CHECK_FALSE(out.alone);
  }
  e.attempts = kMaxOomAttempts;
  CHECK(decide_exit(e).action == Action::fail_build);
  e.external = true;
  CHECK(decide_exit(e).action == Action::fail);
}

TEST_CASE("exit outcome: nvcc exiting 137 after the OOM killer took its cicc is an OOM kill too") {
  // The driver is not the process killed: it reports its child's death in
  // its exit code, and only the unit's cgroup says it was the OOM killer.
  UnitExit e = ended(137);
  e.oom_killed = true;
  auto out = decide_exit(e);
  CHECK(out.action == Action::requeue);
  CHECK(out.oom_rerun);
  CHECK(out.floor == 5 * kGiB);
  e.exit_code = 1;
  CHECK(decide_exit(e).oom_rerun);
  // A compile that succeeded although something in its cgroup was killed
  // (a helper it could do without) succeeded.
  e.exit_code = 0;
  CHECK(decide_exit(e).action == Action::succeed);
  // Without the cgroup's count, exit 137 is the compiler's own failure.
  CHECK(decide_exit(ended(137)).action == Action::fail_build);
}

TEST_CASE("exit outcome: fad's own stops are never failures, whatever the exit status") {
  UnitExit e = ended(143, true);
  e.stop = StopCause::requeue;
  auto out = decide_exit(e);
  CHECK(out.action == Action::requeue);
  CHECK(out.floor == 4 * kGiB);  // its observed peak: it got that far
  CHECK_FALSE(out.alone);
  e.stop = StopCause::requeue_alone;
  out = decide_exit(e);
  CHECK(out.action == Action::requeue);
  CHECK(out.alone);
  CHECK(out.floor == 4 * kGiB);
  e.stop = StopCause::shutdown;
  out = decide_exit(e);
  CHECK(out.action == Action::requeue);
  CHECK(out.floor == 0);  // stopped for no fault of its size
  e.stop = StopCause::cancel;
  CHECK(decide_exit(e).action == Action::cancelled);
  e.exit_code = 0;
  e.signaled = false;
  CHECK(decide_exit(e).action == Action::cancelled);  // a cancel that raced its success stays a cancel
}

TEST_CASE("exit outcome: a failure on a full disk reruns a unit fadd runs, with no floor, up to three runs") {
  UnitExit e = ended(1);
  e.disk_full = true;
  for (int attempt = 1; attempt < kMaxDiskFullAttempts; ++attempt) {
    e.attempts = attempt;
    auto out = decide_exit(e);
    CHECK(out.action == Action::requeue);
    CHECK(out.disk_rerun);
    CHECK_FALSE(out.oom_rerun);
    CHECK(out.floor == 0);  // its memory had nothing to do with it
  }
  e.attempts = kMaxDiskFullAttempts;
  CHECK(decide_exit(e).action == Action::fail_build);
  // A launched compile's failure is its build tool's to handle, disk or not.
  e.attempts = 1;
  e.external = true;
  CHECK(decide_exit(e).action == Action::fail);
  // A success on a full disk is a success.
  UnitExit fine = ended(0);
  fine.disk_full = true;
  CHECK(decide_exit(fine).action == Action::succeed);
}

TEST_CASE("exit outcome: a lost Slurm step runs again with no floor, until its fifth loss, never as a success") {
  // srun can end 0 when the step's wrapper was told to stop: lost all the same.
  for (const int code : {0, 143}) {
    UnitExit e = ended(code, code != 0);
    e.lost = true;
    e.attempts = 9;  // other runs (OOM kills, fad's own stops) do not count
    for (int lost = 1; lost < kMaxLostRuns; ++lost) {
      e.lost_runs = lost;
      auto out = decide_exit(e);
      CHECK(out.action == Action::requeue);
      CHECK(out.lost_rerun);
      CHECK_FALSE(out.oom_rerun);
      CHECK(out.floor == 0);  // its memory had nothing to do with it
    }
    // Bug: every lost step requeued its unit, so a cluster that killed each
    // of its steps kept it cycling for ever.
    e.lost_runs = kMaxLostRuns;
    auto out = decide_exit(e);
    CHECK(out.action == Action::fail_build);
    CHECK_FALSE(out.lost_rerun);
    e.external = true;
    CHECK(decide_exit(e).action == Action::fail);
  }
  // fad's own stop of a unit whose step then reads as lost stays fad's stop.
  UnitExit cancelled = ended(143, true);
  cancelled.lost = true;
  cancelled.stop = StopCause::cancel;
  CHECK(decide_exit(cancelled).action == Action::cancelled);
}

TEST_CASE("exit outcome: a launched compile whose launcher was interrupted is cancelled, not failed or rerun") {
  UnitExit e = ended(130, true);
  e.external = true;
  e.interrupted = true;
  CHECK(decide_exit(e).action == Action::cancelled);
  // Its launcher leaves: neither an OOM kill nor a lost step brings a rerun.
  e.oom_killed = true;
  CHECK(decide_exit(e).action == Action::cancelled);
  e.oom_killed = false;
  e.lost = true;
  e.lost_runs = 1;
  CHECK(decide_exit(e).action == Action::cancelled);
  // A compile that finished before the signal could end it succeeded.
  UnitExit finished = ended(0);
  finished.external = true;
  finished.interrupted = true;
  CHECK(decide_exit(finished).action == Action::succeed);
  // A make that exits 2 on its own after the interrupt: cancelled too.
  UnitExit code = ended(2);
  code.external = true;
  code.interrupted = true;
  CHECK(decide_exit(code).action == Action::cancelled);
  // Not interrupted, the same exit is the build tool's failure.
  code.interrupted = false;
  CHECK(decide_exit(code).action == Action::fail);
}

}  // namespace
}  // namespace fad
