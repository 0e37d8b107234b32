// Slurm command lines fadd runs, the step report's round trip, and the
// probe's checks.
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include "daemon/slurm_commands.h"
#include "daemon/slurm_executor.h"
#include "daemon/step_report.h"
#include "daemon/step_wrapper.h"
#include "fakes.h"

namespace fad {

using namespace slurm;

namespace {
bool has(const std::vector<std::string>& argv, const std::string& arg) {
  return std::find(argv.begin(), argv.end(), arg) != argv.end();
}
}  // namespace

TEST_CASE("slurm: a unit's step asks for fad's threads and memory on fad's node, in the allocation", "[slurm]") {
  SlurmConfig config;
  config.extra_args = {"--qos=build"};
  StepRequest req{
      42, 812, "gpu07", 4, (3ull << 30) + 1, "/opt/fad/bin/fad-step", "/state/slurm/steps/u42.report", 1700000000000};
  auto argv = srun_prefix(config, req);
  CHECK(argv.front() == "srun");
  for (const char* arg : {"--jobid=812", "--exact", "--overlap", "--nodes=1", "--ntasks=1", "--cpus-per-task=4",
                          "--mem=3073M", "--job-name=fad-u42", "--nodelist=gpu07", "--qos=build"})
    CHECK(has(argv, arg));
  // The wrapper and its options close the prefix; the compiler follows.
  REQUIRE(argv.size() >= 7);
  CHECK(std::vector<std::string>(argv.end() - 6, argv.end()) ==
        std::vector<std::string>{"/opt/fad/bin/fad-step", "--report", "/state/slurm/steps/u42.report", "--launched-ms",
                                 "1700000000000", "--"});
  CHECK(unit_of_step_name("fad-u42") == 42);
  CHECK(unit_of_step_name("fad-probe") == 0);
  CHECK(unit_of_step_name("fad-u") == 0);

  // Job per unit: no allocation, the job asks for its own time and partition.
  config.job_per_unit = true;
  config.partition = "build";
  req.job_id = 0;
  argv = srun_prefix(config, req);
  CHECK_FALSE(has(argv, "--overlap"));
  CHECK(has(argv, "--partition=build"));
  CHECK(has(argv, "--time=8:00:00"));
}

TEST_CASE("slurm: the pilot allocation holds whole nodes and survives a node's failure", "[slurm]") {
  SlurmConfig config;
  config.nodes = 4;
  config.time_limit = "12:00:00";
  config.account = "ml";
  auto argv = salloc_argv(config);
  for (const char* arg :
       {"salloc", "--no-shell", "--no-kill", "--exclusive", "--mem=0", "--nodes=4", "--time=12:00:00", "--account=ml"})
    CHECK(has(argv, arg));
  CHECK(scancel_argv("812.3", "STOP") == std::vector<std::string>{"scancel", "--quiet", "--signal=STOP", "812.3"});
  CHECK(scancel_argv("812.3", "") == std::vector<std::string>{"scancel", "--quiet", "812.3"});
}

TEST_CASE("step report: written atomically and read back, unknown text refused", "[slurm]") {
  test::TempDir tmp("fad-step");
  StepReport r;
  r.node = "gpu07";
  r.step = "812.3";
  r.source = "cgroup";
  r.launched_ms = 1700000000000;
  r.started_ms = 1700000000090;
  r.usage = 1;
  r.peak = 5ull << 30;
  r.oom_kills = 1;
  r.limit = 6ull << 30;
  r.done = true;
  r.exit_code = 137;
  r.signal = 9;
  r.terminated = true;
  r.error = "two\nlines";
  REQUIRE(write_step_report(tmp / "r", r));
  auto back = StepReport::parse(test::slurp(tmp / "r"));
  REQUIRE(back);
  CHECK(back->node == "gpu07");
  CHECK(back->step == "812.3");
  CHECK(back->peak == 5ull << 30);
  CHECK(back->oom_kills == 1);
  CHECK(back->limit == 6ull << 30);
  CHECK(back->done);
  CHECK(back->terminated);
  CHECK(back->exit_code == 137);
  CHECK(back->started_ms - back->launched_ms == 90);
  CHECK(back->error == "two lines");
  CHECK_FALSE(StepReport::parse("fad-step 2\nnode=x\n"));
  CHECK_FALSE(StepReport::parse(""));
}

TEST_CASE("step wrapper: runs the program, reports its tree's memory and exit, outside Slurm", "[slurm]") {
  test::TempDir tmp("fad-step");
  StepOptions options;
  options.report_path = tmp / "r";
  options.launched_ms = epoch_ms();
  options.argv = {"/bin/sh", "-c", "exit 3"};
  options.sample_ms = 20;
  CHECK(run_step(options) == 3);
  auto r = StepReport::parse(test::slurp(tmp / "r"));
  REQUIRE(r);
  CHECK(r->done);
  CHECK(r->exit_code == 3);
  CHECK(r->started_ms >= options.launched_ms);
  bool v2 = false;
  CHECK(r->source == (step_cgroup_dir(&v2).empty() ? "rss" : "cgroup"));  // no Slurm step here: its tree

  options.argv = {tmp / "missing-program"};
  CHECK(run_step(options) == 127);
  r = StepReport::parse(test::slurp(tmp / "r"));
  REQUIRE(r);
  CHECK(r->error.find("cannot run") != std::string::npos);
}

TEST_CASE("probe: missing and unwritable paths are named", "[slurm]") {
  test::TempDir tmp("fad-probe");
  test::write_file(tmp.path() / "file", "x");
  std::filesystem::create_directories(tmp.path() / "dir");
  CHECK(probe_paths({tmp.str(), tmp / "file", tmp / "dir"}).empty());
  auto problems = probe_paths({tmp / "nope", tmp / "file"});
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].find(tmp / "nope") == 0);
}

TEST_CASE("slurm: a root fadd does not start another user's compile as a step (it would run as root)", "[slurm]") {
  // A build queued under the local executor, which runs it as its owner, may
  // meet the Slurm one after a restart: the step is refused, never run as root.
  test::TempDir state("fad-slurm-exec");
  boost::asio::io_context io;
  test::FakeClock clock;
  SlurmConfig config;
  config.job_per_unit = true;  // nothing asks Slurm for an allocation
  SlurmExecutor executor(io, clock, config, state.path().string(), {});
  REQUIRE_FALSE(executor.drops_rights());
  LaunchSpec spec{7, {"/bin/true"}, (state.path() / "u7.log").string(), Credentials{::geteuid() + 4001, 4001, {}}};
  bool ended = false;
  auto pid = executor.launch(spec, [&](ExitInfo) { ended = true; });
  REQUIRE_FALSE(pid);
  CHECK(pid.error() == "fadd runs as root and Slurm steps run with its rights, not with uid " +
                           std::to_string(::geteuid() + 4001) +
                           "'s: with executor slurm, each user runs a fadd of their own");
  io.poll();
  CHECK_FALSE(ended);
  CHECK_FALSE(std::filesystem::exists(spec.log_path));  // no srun was started for it
  executor.shutdown();
}

TEST_CASE(
    "a step's end: lost when Slurm says so, its wrapper was told to stop or was killed before its end, else the "
    "program's",
    "[slurm]") {
  using slurm::StepEnd;
  StepReport report;
  report.done = true;
  report.exit_code = 143;
  report.signal = SIGTERM;
  const ExitInfo srun{143, false};
  // Bug: a step whose allocation was cancelled, ending before srun printed
  // why, failed its unit (and the build) instead of running again.
  report.terminated = true;
  auto cancelled = step_exit(StepEnd::normal, report, srun);
  CHECK(cancelled.lost);
  CHECK_FALSE(cancelled.oom_killed);
  // A compiler that dies of SIGTERM by itself is its own failure.
  report.terminated = false;
  auto own = step_exit(StepEnd::normal, report, srun);
  CHECK_FALSE(own.lost);
  CHECK(own.exit_code == 143);
  CHECK(own.signaled);
  CHECK(step_exit(StepEnd::allocation_gone, report, srun).lost);
  CHECK(step_exit(StepEnd::node_failure, report, srun).lost);
  // Out of memory wins: it reruns with a higher estimate, not as lost.
  report.oom_kills = 1;
  auto oom = step_exit(StepEnd::normal, report, srun);
  CHECK(oom.oom_killed);
  CHECK_FALSE(oom.lost);
  CHECK(oom.exit_code == 128 + SIGKILL);
  // No report: srun's status, never a success.
  StepReport none;
  auto refused = step_exit(StepEnd::step_refused, none, ExitInfo{0, false});
  CHECK_FALSE(refused.lost);
  CHECK(refused.exit_code == 1);
  // Bug: a step that started as its allocation was cancelled ended in 0.14 s
  // with srun's 143, before its wrapper wrote anything or srun said why, and
  // failed its build instead of running again.
  auto cut = step_exit(StepEnd::normal, none, ExitInfo{143, false});
  CHECK(cut.lost);
  CHECK(cut.exit_code == 143);
  CHECK(step_exit(StepEnd::normal, none, ExitInfo{128 + SIGKILL, true}).lost);
  // Started but killed before it could report its end (SIGKILL after KillWait).
  StepReport started;
  started.started_ms = 1;
  CHECK(step_exit(StepEnd::normal, started, ExitInfo{128 + SIGKILL, false}).lost);
  // Not a kill: fad-step missing on the node, or srun's own error.
  auto missing = step_exit(StepEnd::normal, none, ExitInfo{2, false});
  CHECK_FALSE(missing.lost);
  CHECK(missing.exit_code == 2);
  CHECK_FALSE(step_exit(StepEnd::step_refused, none, ExitInfo{143, false}).lost);
}

}  // namespace fad
