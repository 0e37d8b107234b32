// The learning key of a launched compile: where its project sits is left out,
// so a kernel rebuilt from another checkout or pip directory is known.
#include <catch2/catch.hpp>

#include "daemon/engine.h"
#include "daemon/launch_key.h"
#include "fakes.h"

namespace fad {
namespace {

using test::EngineFixture;

/// torch's cpp_extension as pip runs it: ninja in build/temp.* under pip's
/// fresh directory, nvcc given absolute paths under it.
LaunchRequest pip_launch(const std::string& pip_dir) {
  const std::string src = pip_dir + "/csrc/flash_attn/src/flash_fwd_hdim64_fp16_sm80.cu";
  const std::string obj = pip_dir + "/build/temp.linux-x86_64-cpython-311/csrc/flash_fwd_hdim64_fp16_sm80.o";
  LaunchRequest l;
  l.session = 5;
  l.cwd = pip_dir + "/build/temp.linux-x86_64-cpython-311";
  l.source = src;
  l.output = obj;
  l.argv = {"/usr/local/cuda/bin/nvcc",
            "--generate-dependencies-with-compile",
            "--dependency-output",
            obj + ".d",
            "-I" + pip_dir + "/csrc/flash_attn",
            "-I/venv/lib/python3.11/site-packages/torch/include",
            "-c",
            src,
            "-o",
            obj,
            "-O3",
            "-gencode",
            "arch=compute_90,code=sm_90",
            "--threads",
            "4"};
  l.archs = {"sm_90"};
  l.content_hash = "sha256:same-content";
  return l;
}

}  // namespace

TEST_CASE("launch key: the same kernel built in two pip directories has one key, without its files and threads",
          "[launch_key]") {
  const auto a = pip_launch("/tmp/pip-req-build-ab12cd34");
  const auto b = pip_launch("/tmp/pip-req-build-zz99yy88");
  const LaunchKey ka = launch_key(a.argv, a.cwd, a.source, true);
  const LaunchKey kb = launch_key(b.argv, b.cwd, b.source, true);
  CHECK(ka.source == "<root>/csrc/flash_attn/src/flash_fwd_hdim64_fp16_sm80.cu");
  CHECK(ka.flags ==
        "--generate-dependencies-with-compile -I<root>/csrc/flash_attn "
        "-I/venv/lib/python3.11/site-packages/torch/include -c -O3 -gencode arch=compute_90,code=sm_90");
  CHECK(ka.family == "flash_fwd_hdim_fp_sm");
  CHECK(kb.source == ka.source);
  CHECK(kb.flags == ka.flags);
  // What still tells compiles apart stays: another include outside the root,
  // another arch.
  auto c = pip_launch("/tmp/pip-req-build-ab12cd34");
  c.argv[5] = "-I/venv2/include";
  CHECK(launch_key(c.argv, c.cwd, c.source, true).flags != ka.flags);
  c = pip_launch("/tmp/pip-req-build-ab12cd34");
  c.argv[12] = "arch=compute_80,code=sm_80";
  CHECK(launch_key(c.argv, c.cwd, c.source, true).flags != ka.flags);
  // The joined form of the dependency file is left out too.
  c = pip_launch("/tmp/pip-req-build-ab12cd34");
  c.argv[2] = "--dependency-output=" + c.output + ".d";
  c.argv.erase(c.argv.begin() + 3);
  CHECK(launch_key(c.argv, c.cwd, c.source, true).flags == ka.flags);
}

TEST_CASE("launch key: a call without the source's content hash keeps its absolute paths", "[launch_key]") {
  // An older launcher, or a source it could not read: "<root>/k.cu" alone
  // would make every project's k.cu one unit.
  const auto a = pip_launch("/tmp/pip-req-build-ab12cd34");
  const LaunchKey k = launch_key(a.argv, a.cwd, a.source, false);
  CHECK(k.source == a.source);
  CHECK(k.flags.find("-I/tmp/pip-req-build-ab12cd34/csrc/flash_attn") != std::string::npos);
  CHECK(k.flags.find("<root>") == std::string::npos);
  const auto b = pip_launch("/tmp/pip-req-build-zz99yy88");
  CHECK(launch_key(b.argv, b.cwd, b.source, false).source != k.source);
}

TEST_CASE("launch key: an options file is named as given, never relabelled", "[launch_key]") {
  // Its name says nothing of what it lists: the same name in two projects
  // may hold different archs or defines.
  auto a = pip_launch("/tmp/pip-req-build-ab12cd34");
  auto b = pip_launch("/tmp/pip-req-build-zz99yy88");
  a.argv.insert(a.argv.end(), {"-optf", "/tmp/pip-req-build-ab12cd34/archs.opt", "@/tmp/pip-req-build-ab12cd34/x.rsp"});
  b.argv.insert(b.argv.end(), {"-optf", "/tmp/pip-req-build-zz99yy88/archs.opt", "@/tmp/pip-req-build-zz99yy88/x.rsp"});
  const LaunchKey ka = launch_key(a.argv, a.cwd, a.source, true);
  CHECK(ka.flags.find("-optf /tmp/pip-req-build-ab12cd34/archs.opt @/tmp/pip-req-build-ab12cd34/x.rsp") !=
        std::string::npos);
  CHECK(launch_key(b.argv, b.cwd, b.source, true).flags != ka.flags);
  CHECK(ka.source == "<root>/csrc/flash_attn/src/flash_fwd_hdim64_fp16_sm80.cu");  // the rest as before
}

TEST_CASE("launch key: a launch without a content hash is not the same unit as another project's",
          "[launch_key][engine]") {
  EngineFixture f;
  f.make_engine().recover();
  auto a = pip_launch("/tmp/pip-req-build-ab12cd34");
  auto b = pip_launch("/tmp/pip-req-build-zz99yy88");
  a.content_hash.reset();
  b.content_hash.reset();
  const auto first = f.engine->launch(f.me, a);
  const auto second = f.engine->launch(f.me, b);
  REQUIRE(first.ok);
  REQUIRE(second.ok);
  const auto ua = f.store->unit(first.result.at("unit_id").get<std::int64_t>());
  const auto ub = f.store->unit(second.result.at("unit_id").get<std::int64_t>());
  CHECK(ua->key != ub->key);
  CHECK(ua->source == a.source);
}

TEST_CASE("launch key: a kernel learnt in one pip directory is known exactly in the next", "[launch_key][engine]") {
  EngineFixture f;
  f.make_engine().recover();
  const auto first = f.engine->launch(f.me, pip_launch("/tmp/pip-req-build-ab12cd34"));
  REQUIRE(first.ok);
  const auto unit = first.result.at("unit_id").get<std::int64_t>();
  f.engine->tick();
  const int pid = 41000;
  f.launcher.processes[pid] = ProcessInfo{f.me.pid, pid, f.me.uid, 0};
  REQUIRE(f.engine->launch_started(f.me, LaunchStartedRequest{unit, pid}).ok);
  f.launcher.memory[pid] = 3ull << 30;
  for (int i = 0; i < 20; ++i) {
    f.clock.advance(1);
    f.engine->tick();
  }
  f.launcher.gone.insert(pid);
  REQUIRE(f.engine->launch_finished(f.me, LaunchFinishedRequest{unit, 0, false}).ok);
  REQUIRE(f.store->unit(unit)->state == UnitState::succeeded);

  const auto second = f.engine->launch(f.me, pip_launch("/tmp/pip-req-build-zz99yy88"));
  REQUIRE(second.ok);
  const auto next = second.result.at("unit_id").get<std::int64_t>();
  CHECK(f.store->unit(next)->key == f.store->unit(unit)->key);
  f.engine->tick();
  CHECK(f.store->unit(next)->estimate_source == "exact");
  // Measured at 3 GiB: admitted at that, not at the 5 GiB prior.
  CHECK(f.store->unit(next)->estimate_bytes < (4ull << 30));
  CHECK(f.store->unit(next)->estimate_bytes >= (3ull << 30));

  // Another project laid out alike (or a later version) with other content
  // at that path is not the same source: only its family speaks for it.
  auto other = pip_launch("/tmp/pip-req-build-0ther000");
  other.content_hash = "sha256:other-content";
  const auto third = f.engine->launch(f.me, other);
  REQUIRE(third.ok);
  const auto third_id = third.result.at("unit_id").get<std::int64_t>();
  f.engine->tick();
  CHECK(f.store->unit(third_id)->estimate_source == "family");
}

}  // namespace fad
