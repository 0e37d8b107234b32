// Pressure response with real processes: units that use far more than their
// prior pushes fad's usage over its budget; fad stops admitting, suspends the
// newest unit, stops and requeues it after its grace with its observed peak as
// the new estimate, never touches the oldest, and the build still succeeds.
#include <catch2/catch.hpp>

#include "harness.h"

using namespace fad::test;

TEST_CASE("over budget: newest units are suspended, then requeued with their peak, the build succeeds",
          "[integration][long][pressure]") {
  Daemon d;
  // Five units whose manifest prior says 100 MiB; each really ramps to 400 MiB
  // over 3 s and then holds 160 MiB: together they overrun the 512 MiB budget
  // for longer than a suspended unit's grace.
  d.write_kernels({{"fwd_a", "peak_mb=400 duration_s=15"},
                   {"fwd_b", "peak_mb=400 duration_s=15"},
                   {"fwd_c", "peak_mb=400 duration_s=15"},
                   {"fwd_d", "peak_mb=400 duration_s=15"},
                   {"fwd_e", "peak_mb=400 duration_s=15"}});
  {
    auto manifest = json::parse(std::ifstream(fs::path(d.kernels_dir()) / "manifest.json"));
    for (auto& u : manifest["units"]) u["prior"] = {{"peak_bytes", 100u << 20}, {"duration_s", 20}};
    std::ofstream(fs::path(d.kernels_dir()) / "manifest.json") << manifest.dump(2);
  }
  // The reserve puts the cgroup hard limit (budget + half the reserve, 2.5 GiB)
  // above all five units' peaks together: fad, not the kernel, reacts here,
  // however slowly a loaded machine lets it.
  d.start({"--memory-budget", "512M", "--reserve", "4G", "--cores", "16"});
  const auto id = d.submit({"--arch", "9.0"});
  const auto b = d.wait_final(id, 300);
  const auto log = d.daemon_log();
  INFO(log);
  REQUIRE(b.at("state") == "succeeded");

  CHECK(log.find("memory pressure: suspending") != std::string::npos);
  CHECK(log.find("to run it later") != std::string::npos);  // stopped and requeued after its grace

  const auto units = d.status(id).at("unit_list");
  // The oldest unit (the first fad started) is never suspended or stopped: it ran once.
  const auto started = log.find("started fwd_");
  REQUIRE(started != std::string::npos);
  const std::string first = log.substr(started + 8, 5);
  int requeued = 0;
  for (const auto& u : units) {
    if (u.at("kind") != "compile") continue;
    if (u.at("name") == first) CHECK(u.at("attempts") == 1);
    if (u.at("attempts").get<int>() > 1) {
      ++requeued;
      // Requeued with its observed peak: the next estimate is no longer the 100 MiB prior.
      CHECK(u.at("estimate_bytes").get<std::uint64_t>() > (200u << 20));
    }
  }
  CHECK(requeued >= 1);
  CHECK(log.find("suspending " + first) == std::string::npos);
}
