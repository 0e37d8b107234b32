// The engine and the compile cache: a launcher's cache hit is recorded without
// being scheduled; bundled units are stored when they succeed and restored at
// the next submit, never launched. Fakes for clock, memory and processes; a
// real cache directory and a real (script) compiler for the cache's side.
#include <catch2/catch.hpp>

#include "fakes.h"

using namespace fad;
using namespace fad::test;

namespace {

LaunchRequest launch_request(const std::string& dir, bool cached) {
  write_file(fs::path(dir) / "k.cu", "__global__ void k() {}\n");
  LaunchRequest req;
  req.session = 77;
  req.cwd = dir;
  req.argv = {"/opt/cuda/bin/nvcc", "-c", dir + "/k.cu", "-o", dir + "/k.o"};
  req.source = dir + "/k.cu";
  req.output = dir + "/k.o";
  req.archs = {"9.0"};
  req.content_hash = "0123456789abcdef";
  req.compiler_version = "Build cuda_13.0.r13.0/compiler.x";
  req.cached = cached;
  return req;
}

/// Makes `f`'s engine again with a compile cache in `cache_dir` and a real
/// (script) compiler for the cache to identify (its --version).
void engine_with_cache(EngineFixture& f, const fs::path& cache_dir) {
  const fs::path nvcc = f.tmp / "toolkit/bin/nvcc";
  write_file(nvcc, "#!/bin/sh\necho 'Cuda compilation tools, release 13.0'\n");
  fs::permissions(nvcc, fs::perms::owner_all);
  f.options.cache = CacheSettings{cache_dir, 1ull << 30};
  f.engine = std::make_unique<Engine>(f.options, *f.store, f.clock, f.probe, f.launcher,
                                      [nvcc](const ToolchainQuery&, ToolchainCallback done) {
                                        Toolchain tc = fake_toolchain();
                                        tc.path = nvcc.string();
                                        tc.file_identity = compiler_file_identity(tc.path);
                                        done(Result<Toolchain>(tc));
                                      });
}

}  // namespace

TEST_CASE("engine: a cache hit reported by a launcher is recorded, cached, and never scheduled", "[engine][cache]") {
  EngineFixture f;
  f.make_engine();
  auto r = f.engine->launch(f.me, launch_request(f.tmp.str(), true));
  REQUIRE(r.ok);
  CHECK(r.result.at("state") == "succeeded");
  const auto unit_id = r.result.at("unit_id").get<std::int64_t>();
  auto u = f.store->unit(unit_id);
  REQUIRE(u);
  CHECK(u->state == UnitState::succeeded);
  CHECK(u->cached);
  CHECK(u->attempts == 0);
  CHECK(u->exit_code == std::optional<int>(0));
  // The launcher's own figures are used: no file read, no compiler run.
  CHECK(u->content_hash == "0123456789abcdef");
  CHECK(u->compiler == "Build cuda_13.0.r13.0/compiler.x");
  CHECK(f.toolchain_lookups == 0);
  f.engine->tick();
  CHECK(f.launcher.launches.empty());
  auto poll = f.engine->launch_poll(f.me, UnitRequest{unit_id});
  REQUIRE(poll.ok);
  CHECK(poll.result.at("state") == "succeeded");
  // The status shows it as such.
  auto status = f.engine->status(f.me, StatusRequest{u->build_id});
  REQUIRE(status.ok);
  const auto& build = status.result.at("builds").at(0);
  CHECK(build.at("cache_hits") == 1);
  CHECK(build.at("unit_list").at(0).at("cached") == true);
  // Its session build started with it (from a re-probe: a session of cache
  // hits only was "running" with no start, then "queued" for its whole life).
  CHECK(build.at("state") == "running");
  CHECK(f.store->build_started_at(u->build_id).has_value());
}

TEST_CASE("engine: a launch that names its compiler version is not probed, and is admitted with an estimate",
          "[engine][cache]") {
  EngineFixture f;
  f.make_engine();
  auto r = f.engine->launch(f.me, launch_request(f.tmp.str(), false));
  REQUIRE(r.ok);
  CHECK(f.toolchain_lookups == 0);
  const auto unit_id = r.result.at("unit_id").get<std::int64_t>();
  f.engine->tick();
  auto poll = f.engine->launch_poll(f.me, UnitRequest{unit_id});
  REQUIRE(poll.ok);
  CHECK(poll.result.at("state") == "admitted");
  CHECK(poll.result.at("estimate_bytes").get<std::uint64_t>() > 0);
  CHECK_FALSE(f.store->unit(unit_id)->cached);
}

TEST_CASE("engine: bundled units are stored in the cache when they succeed and restored at the next submit",
          "[engine][cache]") {
  EngineFixture f;
  engine_with_cache(f, f.tmp / "cache");
  const auto first = f.submit({"9.0"});
  f.engine->tick();
  REQUIRE(f.launcher.live() == kCompileUnits);
  for (const auto& name : kCompileUnits) {
    const auto u = *f.unit(first, name);
    // Each compile is asked for a dependency file beside its object.
    const auto& argv = f.launcher.find(name)->spec.argv;
    REQUIRE(std::find(argv.begin(), argv.end(), u.output_path + ".d") != argv.end());
    // What nvcc would write; the header is older than the compile's start.
    write_file(u.output_path, "object of " + name);
    write_file(u.output_path + ".d", u.output_path + " : " + f.kernels + "/src/" + name + ".cu \\\n    " + f.kernels +
                                         "/include/common.cuh\n");
    f.launcher.exit(name, 0);
  }
  f.engine->tick();
  write_file(f.artifact(first) + ".tmp", "lib");
  f.launcher.exit("link", 0);
  REQUIRE(f.build_state(first) == BuildState::succeeded);

  const auto launches_before = f.launcher.launches.size();
  const auto second = f.submit({"9.0"});
  for (const auto& name : kCompileUnits) {
    const auto u = *f.unit(second, name);
    CHECK(u.state == UnitState::succeeded);
    CHECK(u.cached);
    CHECK(slurp(u.output_path) == "object of " + name);
  }
  // Its units served, it has started, though its link waits for a tick.
  CHECK(f.build_state(second) == BuildState::running);
  CHECK(f.store->build_started_at(second).has_value());
  f.engine->tick();
  // Only the link runs.
  REQUIRE(f.launcher.launches.size() == launches_before + 1);
  CHECK(f.launcher.launches.back().spec.log_path.find("link") != std::string::npos);

  // A changed header: every unit compiles again.
  write_file(f.kernels + "/include/common.cuh", "#pragma once\nint changed;\n");
  const auto third = f.submit({"9.0"});
  for (const auto& name : kCompileUnits) CHECK_FALSE(f.unit(third, name)->cached);
}

TEST_CASE("engine: a root fadd compiles without a cache directory others can write", "[engine][cache]") {
  if (::geteuid() != 0) {
    WARN("SKIP: needs root (the engine runs as root only then)");
    return;
  }
  for (const mode_t mode : {0755, 02775}) {
    EngineFixture f;
    const fs::path dir = f.tmp / "cache";
    fs::create_directories(dir);
    ::chmod(dir.c_str(), mode);
    REQUIRE(f.options.daemon_uid == 0);
    engine_with_cache(f, dir);
    const auto id = f.submit({"9.0"});
    f.engine->tick();
    // With a cache, each compile is asked for the dependency file it stores by.
    const auto u = *f.unit(id, "a_one");
    const auto& argv = f.launcher.find("a_one")->spec.argv;
    const bool caching = std::find(argv.begin(), argv.end(), u.output_path + ".d") != argv.end();
    CHECK(caching == (mode == 0755));
  }
}
