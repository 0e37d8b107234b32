// The Slurm output parsers over text captured from a real slurmctld and
// slurmd (Slurm 22.05, tests/fixtures/slurm/; each file ends with the
// command's exit status as "rc=N", which the parsers must skip).
#include <catch2/catch.hpp>

#include "daemon/slurm_parse.h"
#include "fakes.h"

namespace fad {
namespace {

std::string fixture(const std::string& name) { return test::slurp(std::string(FAD_FIXTURES_DIR) + "/slurm/" + name); }

}  // namespace

using namespace slurm;

TEST_CASE("slurm: hostlists expand ranges, lists and zero padding", "[slurm]") {
  CHECK(expand_hostlist("fadnode[1-2]") == std::vector<std::string>{"fadnode1", "fadnode2"});
  CHECK(expand_hostlist("n[01-03,7],gpu1") == std::vector<std::string>{"n01", "n02", "n03", "n7", "gpu1"});
  CHECK(expand_hostlist("single") == std::vector<std::string>{"single"});
  CHECK(expand_hostlist("rack[1-2]-a") == std::vector<std::string>{"rack1-a", "rack2-a"});
  CHECK(expand_hostlist("n[3-1]").empty());
  CHECK(expand_hostlist("n[1-").empty());
  CHECK(expand_hostlist("").empty());
}

TEST_CASE("slurm: memory sizes as sstat and scontrol print them", "[slurm]") {
  CHECK(parse_memory("4524K") == 4524ull * 1024);
  CHECK(parse_memory("12M") == 12ull << 20);
  CHECK(parse_memory("1.5G") == 3ull << 29);
  CHECK(parse_memory("0") == 0u);
  CHECK(parse_memory("100") == 100ull * 1024);
  CHECK_FALSE(parse_memory(""));
  CHECK_FALSE(parse_memory("K"));
  CHECK_FALSE(parse_memory("12X"));
  CHECK_FALSE(parse_memory("-3M"));
}

TEST_CASE("slurm: scontrol show node -o gives each node's CPUs and memory", "[slurm]") {
  auto nodes = parse_show_node(fixture("scontrol_show_node.txt"));
  REQUIRE(nodes.size() == 2);
  CHECK(nodes[0].name == "fadnode1");
  CHECK(nodes[0].cpus == 2);
  CHECK(nodes[0].memory == 3072ull << 20);
  CHECK(nodes[0].state == "ALLOCATED");
  CHECK(nodes[1].name == "fadnode2");
}

TEST_CASE("slurm: scontrol show job -d -o gives the allocation per node", "[slurm]") {
  auto job = parse_show_job(fixture("scontrol_show_job_running.txt"));
  REQUIRE(job);
  CHECK(job->id == 1);
  CHECK(job->state == "RUNNING");
  CHECK(job_state_running(job->state));
  REQUIRE(job->nodes.size() == 2);
  CHECK(job->nodes[1].name == "fadnode2");
  CHECK(job->nodes[1].cpus == 2);
  CHECK(job->nodes[1].memory == 3072ull << 20);

  auto failed = parse_show_job(fixture("scontrol_show_job_node_fail.txt"));
  REQUIRE(failed);
  CHECK(failed->state == "NODE_FAIL");
  CHECK(failed->reason == "NodeDown");
  CHECK_FALSE(job_state_running(failed->state));
  CHECK(failed->nodes.size() == 2);  // names only, without the detail

  CHECK_FALSE(parse_show_job(fixture("scontrol_show_job_invalid.txt")));
}

TEST_CASE("slurm: salloc's job id, pending or granted", "[slurm]") {
  CHECK(parse_salloc_job_id(fixture("salloc_granted.txt")) == 3);
  CHECK(salloc_granted(fixture("salloc_granted.txt")));
  CHECK(parse_salloc_job_id(fixture("salloc_pending.txt")) == 2);
  CHECK_FALSE(salloc_granted(fixture("salloc_pending.txt")));
  CHECK_FALSE(parse_salloc_job_id(fixture("salloc_controller_down.txt")));
  CHECK(controller_unreachable(fixture("salloc_controller_down.txt")));
  CHECK(controller_unreachable(fixture("squeue_controller_down.txt")));
  CHECK_FALSE(controller_unreachable(fixture("squeue_job_invalid.txt")));
}

TEST_CASE("slurm: running steps and their MaxRSS", "[slurm]") {
  auto steps = parse_squeue_steps(fixture("squeue_steps.txt"));
  REQUIRE(steps.size() == 2);
  CHECK(steps[0].id == "1.5");
  CHECK(steps[0].name == "fad-u41");
  CHECK(steps[1].node == "fadnode2");
  CHECK(parse_squeue_steps(fixture("squeue_job_running.txt")).empty());  // a job line, not a step

  auto rss = parse_sstat_max_rss(fixture("sstat_steps.txt"));
  CHECK(rss.size() == 2);
  CHECK(rss["1.5"] == 1736ull * 1024);
  CHECK(rss["1.6"] == 3000ull * 1024);
}

TEST_CASE("slurm: how a step ended, from srun's messages", "[slurm]") {
  CHECK(classify_srun(fixture("srun_node_fail.txt")) == StepEnd::node_failure);
  CHECK(classify_srun(fixture("srun_job_cancelled.txt")) == StepEnd::allocation_gone);
  CHECK(classify_srun(fixture("srun_time_limit.txt")) == StepEnd::allocation_gone);
  CHECK(classify_srun(fixture("srun_no_job.txt")) == StepEnd::allocation_gone);
  // Cancelled as the step was created, or as its task was launched (srun exits 168 then).
  CHECK(classify_srun(fixture("srun_step_after_cancel.txt")) == StepEnd::allocation_gone);
  CHECK(classify_srun(fixture("srun_credential_revoked.txt")) == StepEnd::allocation_gone);
  // srun also says "Expired or invalid job" here, but it only could not ask.
  CHECK(classify_srun(fixture("srun_controller_down.txt")) == StepEnd::controller_unreachable);
  CHECK(classify_srun("slurmstepd-fadnode1: error: Detected 1 oom-kill event(s) in StepId=1.1.\n"
                      "srun: error: fadnode1: task 0: Out Of Memory\n") == StepEnd::out_of_memory);
  CHECK(classify_srun("nvcc fatal   : Unknown option '-foo'\n") == StepEnd::normal);
  CHECK(classify_srun("") == StepEnd::normal);
}

TEST_CASE("slurm: srun's messages that say the job itself is ending", "[slurm]") {
  // Its time limit, and steps refused as it completes: a new allocation is
  // asked for at once (a check still reads the job running for seconds).
  CHECK(allocation_ending(fixture("srun_time_limit.txt")));
  CHECK(allocation_ending(fixture("srun_step_after_cancel.txt")));
  CHECK(allocation_ending(fixture("srun_no_job.txt")));
  // Cancelled (the check sees it), a node failure, slurmctld away: not this.
  CHECK_FALSE(allocation_ending(fixture("srun_job_cancelled.txt")));
  CHECK_FALSE(allocation_ending(fixture("srun_node_fail.txt")));
  CHECK_FALSE(allocation_ending(fixture("srun_controller_down.txt")));
}

}  // namespace fad
