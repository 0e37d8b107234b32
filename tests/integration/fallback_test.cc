// Safe without the daemon: fadd is killed in the middle of `fad run -- ninja
// -j 16` of heavy units inside a memory cgroup standing in for a small VM. The
// launchers that lose it wait for memory on their own (machine-wide claims)
// instead of all compiling at once: no OOM kill, and the build succeeds.
// Needs root and the cgroup v1 memory controller (skips, saying so, elsewhere).
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <sstream>

#include <catch2/catch.hpp>

#include "harness.h"
#include "test_cgroup.h"

using namespace fad::test;

TEST_CASE("fadd killed in the middle of fad run -- ninja -j 16: no OOM kill, the build succeeds",
          "[integration][long][fallback][oom]") {
  constexpr int kUnits = 16;
  TestCgroup vm(1200u << 20, "fallback");
  if (!vm.ok()) {
    WARN("SKIP: needs root and the cgroup v1 memory controller; the fadd-killed fallback test did not run");
    return;
  }
  Daemon d;
  d.write_kernels({});
  // What the launchers read too: a compile is expected to need 350 MiB.
  std::ofstream(d.dir() / "test-config.json") << R"({"poll_interval_ms": 100, "unit_memory_prior": "350M"})";
  d.set_wrapper(vm.wrap({}));
  d.start({"--cores", "16"});
  // Each unit really holds 300 MiB for most of its 3 s: four at once overrun the 1.2 GiB.
  const auto project = write_ninja_project(d.dir() / "project", kUnits, "peak_mb=300 duration_s=3",
                                           std::string(FAD_FAD_BIN) + " launch");
  const std::map<std::string, std::string> env{{"FAD_SOCKET", d.socket()},
                                               {"FAD_CONFIG", (d.dir() / "test-config.json").string()},
                                               {"FAD_FAKE_LOG", d.fake_log_path()},
                                               {"FAD_CACHE_SIZE", "0"}};
  const pid_t build =
      start_process(vm.wrap({FAD_FAD_BIN, "run", "--name", "heavy", "--", "ninja", "-C", project.string(), "-j", "16"}),
                    env, d.dir() / "build.out", d.dir() / "build.out");
  REQUIRE(build > 0);
  // fadd dies once a few units have started under it.
  REQUIRE(wait_for([&] { return d.fake_log().size() >= 3; }, std::chrono::seconds(60)));
  d.kill9();
  const int code = wait_process(build, 300);
  std::ifstream out_file(d.dir() / "build.out");
  std::stringstream out;
  out << out_file.rdbuf();
  INFO(out.str() << d.daemon_log());
  CHECK(code == 0);
  int objects = 0;
  for (const auto& e : fs::directory_iterator(project)) objects += e.path().extension() == ".o";
  CHECK(objects == kUnits);
  // Each unit compiled exactly once: none was killed and rerun.
  CHECK(d.fake_log().size() == static_cast<std::size_t>(kUnits));
  CHECK(vm.oom_kills() == 0);
  CHECK(out.str().find("compiling without fadd") != std::string::npos);
  // Every launcher waiting in the gone fadd went around it; said once, not once each.
  const std::string text = out.str();
  std::size_t said = 0;
  for (auto at = text.find("compiling without fadd"); at != std::string::npos;
       at = text.find("compiling without fadd", at + 1))
    ++said;
  CHECK(said == 1);
}
