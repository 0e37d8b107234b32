// A budget that holds whatever the estimates say, with real processes in a
// memory cgroup that stands in for a small VM or a container: units that lie
// about their size can only get themselves OOM-killed (and rerun) under the
// hard limit fadd puts on its units, never a process beside fad; and a memory
// hog sharing fadd's cgroup is left its memory. Needs root and the cgroup v1
// memory controller (skips, saying so, elsewhere).
#include <signal.h>
#include <sys/wait.h>

#include <catch2/catch.hpp>

#include "harness.h"
#include "test_cgroup.h"

using namespace fad::test;

namespace {

constexpr std::uint64_t kMiB = 1ull << 20;

/// A process outside fad holding `mib` MiB inside `cg` (the fake compiler
/// replaying a flat profile for ten minutes), started and grown before return.
struct Bystander {
  pid_t pid = -1;
  Bystander(const TestCgroup& cg, const fs::path& dir, int mib, int oom_score_adj) {
    std::ofstream(dir / "bystander.tsv") << "1\t" << mib << "\n600\t" << mib << "\n";
    std::ofstream(dir / "bystander.cu") << "// holds memory\n";
    pid = start_process(
        cg.wrap({FAD_FAKE_NVCC_BIN, "-c", (dir / "bystander.cu").string(), "-o", (dir / "bystander.o").string()}),
        {{"FAD_FAKE_PROFILE", (dir / "bystander.tsv").string()}}, dir / "bystander.out", dir / "bystander.out");
    REQUIRE(pid > 0);
    // The kernel kills the process with the highest score first: a browser
    // tab, say, marks itself a likely victim like this.
    std::ofstream("/proc/" + std::to_string(pid) + "/oom_score_adj") << oom_score_adj;
    REQUIRE(
        wait_for([&] { return rss_of(pid) >= static_cast<std::uint64_t>(mib - 8) * kMiB; }, std::chrono::seconds(30)));
  }
  bool alive() const { return !poll_process(pid); }
  ~Bystander() {
    if (pid > 0) {
      ::kill(pid, SIGKILL);
      wait_process(pid, 10);
    }
  }
};

/// Sets every unit's manifest prior in the test kernels dir.
void set_priors(Daemon& d, std::uint64_t peak_bytes, double duration_s) {
  auto manifest = json::parse(std::ifstream(fs::path(d.kernels_dir()) / "manifest.json"));
  for (auto& u : manifest["units"]) u["prior"] = {{"peak_bytes", peak_bytes}, {"duration_s", duration_s}};
  std::ofstream(fs::path(d.kernels_dir()) / "manifest.json") << manifest.dump(2);
}

}  // namespace

TEST_CASE("units that lie about their size only hurt themselves: a process beside fad keeps its memory",
          "[integration][oom][hard_limit]") {
  TestCgroup vm(1200 * kMiB, "hard-limit");
  if (!vm.ok()) {
    WARN("SKIP: needs root and the cgroup v1 memory controller; the hard-limit test did not run");
    return;
  }
  Daemon d;
  // A 400 MiB process outside fad, the likeliest victim if the VM ran out.
  Bystander bystander(vm, d.dir(), 400, 1000);
  // Three units whose manifest says 50 MiB, each reaching 250 MiB: admitted
  // together under a 400 MiB budget, they would reach 750 MiB, and with the
  // bystander more than the VM holds.
  d.write_kernels({{"fwd_a", "peak_mb=250 duration_s=3"},
                   {"fwd_b", "peak_mb=250 duration_s=3"},
                   {"fwd_c", "peak_mb=250 duration_s=3"}});
  set_priors(d, 50 * kMiB, 3);
  d.set_wrapper(vm.wrap({}));
  d.start({"--cores", "16", "--memory-budget", "400M", "--reserve", "0"});
  const auto id = d.submit({"--arch", "9.0"});
  const auto b = d.wait_final(id, 180);
  const auto log = d.daemon_log();
  INFO(log);
  CHECK(log.find("fad's units together are limited to 400.0 MiB") != std::string::npos);
  // The units ran into their own limit and were OOM-killed there, and rerun...
  CHECK(vm.limit_hits_below() > 0);
  CHECK(log.find("killed by the kernel's OOM killer") != std::string::npos);
  CHECK(b.at("state") == "succeeded");
  // ...while the VM itself never ran out and the bystander kept its memory.
  CHECK(vm.limit_hits() == 0);
  CHECK(bystander.alive());
  CHECK(rss_of(bystander.pid) >= 392 * kMiB);
  d.terminate();
}

TEST_CASE("a memory hog in fadd's own cgroup is left its memory: fad plans within the limit less the hog",
          "[integration][hard_limit]") {
  TestCgroup container(1024 * kMiB, "container");
  if (!container.ok()) {
    WARN("SKIP: needs root and the cgroup v1 memory controller; the container test did not run");
    return;
  }
  Daemon d;
  Bystander hog(container, d.dir(), 400, 0);
  // Six honest 150 MiB units: with the limit alone in view (922 MiB after the
  // 10% reserve) all six would start, 900 MiB beside the hog's 400.
  d.write_kernels({{"u1", "peak_mb=150 duration_s=3"},
                   {"u2", "peak_mb=150 duration_s=3"},
                   {"u3", "peak_mb=150 duration_s=3"},
                   {"u4", "peak_mb=150 duration_s=3"},
                   {"u5", "peak_mb=150 duration_s=3"},
                   {"u6", "peak_mb=150 duration_s=3"}});
  set_priors(d, 150 * kMiB, 3);
  d.set_wrapper(container.wrap({}));
  d.start({"--cores", "16"});
  const auto id = d.submit({"--arch", "9.0"});
  const auto b = d.wait_final(id, 180);
  INFO(d.daemon_log());
  CHECK(b.at("state") == "succeeded");
  // fad's units stayed within the limit less the hog: the container never ran out.
  CHECK(b.at("peak_bytes").get<std::uint64_t>() <= (1024 - 400) * kMiB);
  CHECK(container.limit_hits() == 0);
  CHECK(hog.alive());
  int reruns = 0;
  const json build_now = d.status(id);  // named: a range-for over a temporary's member would dangle
  for (const auto& u : build_now.at("unit_list")) reruns += u.at("attempts").get<int>() > 1;
  CHECK(reruns == 0);
  d.terminate();
}
