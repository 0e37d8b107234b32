// plan_build over a temp kernels dir: which units, their argv, and keys that
// change with what is compiled (sources, shared headers, archs, compiler).
#include <catch2/catch.hpp>

#include <algorithm>

#include "daemon/planner.h"
#include "fakes.h"

namespace fad {
namespace {

using Catch::Contains;
using test::TempDir;
using test::write_file;

struct PlannerFixture {
  TempDir tmp{"fad-planner"};
  std::string kernels = tmp / "kernels";
  std::string state = tmp / "state";

  PlannerFixture() {
    write_file(tmp.path() / "kernels" / "manifest.json", R"({
      "version": 1, "library": "fad_x", "include_dirs": ["include"],
      "flags": ["-O3", "-std=c++17"], "link_flags": ["-lcudart"],
      "units": [
        {"name": "fwd_a", "source": "src/fwd_a.cu", "family": "fwd", "prior": {"peak_bytes": 1000, "duration_s": 2}},
        {"name": "fwd_b", "source": "src/fwd_b.cu", "family": "fwd", "flags": ["-DB"]},
        {"name": "bwd_a", "source": "src/bwd_a.cu", "family": "bwd"}
      ]})");
    for (const char* n : {"fwd_a", "fwd_b", "bwd_a"})
      write_file(tmp.path() / "kernels" / "src" / (std::string(n) + ".cu"), std::string("// ") + n + "\n");
    write_file(tmp.path() / "kernels" / "include" / "common.cuh", "// v1\n");
    write_file(tmp.path() / "kernels" / "include" / "detail" / "deep.h", "// deep v1\n");
  }

  Manifest manifest() {
    auto m = load_manifest(kernels);
    REQUIRE(m);
    return *m;
  }

  Result<std::vector<UnitRecord>> plan(std::vector<Arch> archs = {Arch{90, 0}}, std::string glob = "*",
                                       std::string version = "V13.0-test") {
    Toolchain tc = test::fake_toolchain();
    tc.version = std::move(version);
    return plan_build(manifest(), PlanRequest{std::move(archs), std::move(glob), tc, kernels, state});
  }
};

std::vector<std::string> names(const std::vector<UnitRecord>& units) {
  std::vector<std::string> out;
  for (const auto& u : units) out.push_back(u.name);
  return out;
}

}  // namespace

TEST_CASE("planner: one compile unit per manifest unit, the link unit last", "[planner]") {
  PlannerFixture f;
  auto units = f.plan({Arch{90, 0}, Arch{120, 0}});
  REQUIRE(units);
  REQUIRE(names(*units) == std::vector<std::string>{"fwd_a", "fwd_b", "bwd_a", "link"});
  const std::string build = f.state + "/builds/{build}";

  const auto& a = (*units)[0];
  CHECK(a.kind == UnitKind::compile);
  CHECK(a.seq == 0);
  CHECK(a.source == "src/fwd_a.cu");
  CHECK(a.family == "fwd");
  CHECK(a.archs == std::vector<std::string>{"9.0", "12.0"});
  CHECK(a.output_path == build + "/obj/fwd_a.o");
  CHECK(a.log_path == build + "/logs/fwd_a.log");
  CHECK(a.compiler == "V13.0-test");
  CHECK(a.prior_peak == 1000);
  CHECK(a.prior_duration_s == Approx(2));
  CHECK(a.argv == std::vector<std::string>{"/opt/fake/nvcc", "-c", f.kernels + "/src/fwd_a.cu", "-o",
                                           build + "/obj/fwd_a.o", "-O3", "-std=c++17", "-I" + f.kernels + "/include",
                                           "-gencode", "arch=compute_90,code=sm_90", "-gencode",
                                           "arch=compute_120,code=sm_120"});

  // Unit flags follow the manifest's; include paths are not part of the key flags.
  const auto& b = (*units)[1];
  CHECK(b.argv == std::vector<std::string>{"/opt/fake/nvcc", "-c", f.kernels + "/src/fwd_b.cu", "-o",
                                           build + "/obj/fwd_b.o", "-O3", "-std=c++17", "-DB",
                                           "-I" + f.kernels + "/include", "-gencode", "arch=compute_90,code=sm_90",
                                           "-gencode", "arch=compute_120,code=sm_120"});
  CHECK(b.flags == "-O3 -std=c++17 -DB");
  CHECK(a.flags == "-O3 -std=c++17");

  const auto& link = units->back();
  CHECK(link.kind == UnitKind::link);
  CHECK(link.seq == 3);
  CHECK(link.output_path == build + "/lib/libfad_x.so");
  CHECK(link.output_path == artifact_path(build, f.manifest()));
  CHECK(link.log_path == build + "/logs/link.log");
  CHECK(link.argv == std::vector<std::string>{"/opt/fake/nvcc", "-shared", "-o", build + "/lib/libfad_x.so.tmp",
                                              build + "/obj/fwd_a.o", build + "/obj/fwd_b.o", build + "/obj/bwd_a.o",
                                              "-lcudart", "-gencode", "arch=compute_90,code=sm_90", "-gencode",
                                              "arch=compute_120,code=sm_120"});
}

TEST_CASE("planner: the glob selects units by name", "[planner]") {
  PlannerFixture f;
  auto fwd = f.plan({Arch{90, 0}}, "fwd_*");
  REQUIRE(fwd);
  CHECK(names(*fwd) == std::vector<std::string>{"fwd_a", "fwd_b", "link"});
  // The link only takes the selected objects.
  CHECK(fwd->back().argv ==
        std::vector<std::string>{"/opt/fake/nvcc", "-shared", "-o", f.state + "/builds/{build}/lib/libfad_x.so.tmp",
                                 f.state + "/builds/{build}/obj/fwd_a.o", f.state + "/builds/{build}/obj/fwd_b.o",
                                 "-lcudart", "-gencode", "arch=compute_90,code=sm_90"});

  auto one = f.plan({Arch{90, 0}}, "*_a");
  REQUIRE(one);
  CHECK(names(*one) == std::vector<std::string>{"fwd_a", "bwd_a", "link"});
  CHECK((*one)[1].seq == 1);
}

TEST_CASE("planner: a required unit joins every selection that is not empty", "[planner]") {
  PlannerFixture f;
  write_file(f.tmp.path() / "kernels" / "manifest.json", R"({
    "version": 1, "library": "fad_x", "include_dirs": ["include"], "flags": [],
    "units": [
      {"name": "fwd_a", "source": "src/fwd_a.cu"},
      {"name": "bwd_a", "source": "src/bwd_a.cu"},
      {"name": "dispatch", "source": "src/fwd_b.cu", "required": true}
    ]})");
  auto fwd = f.plan({Arch{90, 0}}, "fwd_*");
  REQUIRE(fwd);
  CHECK(names(*fwd) == std::vector<std::string>{"fwd_a", "dispatch", "link"});
  // The link takes the required unit's object too.
  CHECK(std::find(fwd->back().argv.begin(), fwd->back().argv.end(), f.state + "/builds/{build}/obj/dispatch.o") !=
        fwd->back().argv.end());
  auto all = f.plan({Arch{90, 0}}, "*");
  REQUIRE(all);
  CHECK(names(*all) == std::vector<std::string>{"fwd_a", "bwd_a", "dispatch", "link"});
  // A glob that selects nothing else still fails, naming units.
  auto none = f.plan({Arch{90, 0}}, "nothing*");
  REQUIRE_FALSE(none);
  CHECK_THAT(none.error(), Contains("nothing*"));
}

TEST_CASE("planner: a glob matching nothing fails, naming some units", "[planner]") {
  PlannerFixture f;
  auto none = f.plan({Arch{90, 0}}, "nothing*");
  REQUIRE_FALSE(none);
  CHECK_THAT(none.error(), Contains("nothing*") && Contains("fwd_a") && Contains("fwd_b") && Contains("bwd_a"));
}

TEST_CASE("planner: an unreadable source fails naming it", "[planner]") {
  PlannerFixture f;
  std::filesystem::remove(f.tmp.path() / "kernels" / "src" / "fwd_b.cu");
  auto units = f.plan();
  REQUIRE_FALSE(units);
  CHECK_THAT(units.error(), Contains("fwd_b.cu"));
}

TEST_CASE("planner: the content hash follows the source and the shared headers", "[planner]") {
  PlannerFixture f;
  auto before = f.plan();
  REQUIRE(before);

  SECTION("identical inputs give identical keys") {
    auto again = f.plan();
    REQUIRE(again);
    for (std::size_t i = 0; i < before->size(); ++i) {
      CHECK((*again)[i].content_hash == (*before)[i].content_hash);
      CHECK((*again)[i].key == (*before)[i].key);
    }
    CHECK((*before)[0].content_hash != (*before)[1].content_hash);
  }
  SECTION("a header in include_dirs") {
    write_file(f.tmp.path() / "kernels" / "include" / "common.cuh", "// v2\n");
    auto after = f.plan();
    REQUIRE(after);
    for (std::size_t i = 0; i < 3; ++i) {
      CHECK((*after)[i].content_hash != (*before)[i].content_hash);
      CHECK((*after)[i].key != (*before)[i].key);
    }
  }
  SECTION("a header in a subdirectory of include_dirs") {
    write_file(f.tmp.path() / "kernels" / "include" / "detail" / "deep.h", "// deep v2\n");
    auto after = f.plan();
    REQUIRE(after);
    CHECK((*after)[0].content_hash != (*before)[0].content_hash);
  }
  SECTION("a non-header file in include_dirs does not count") {
    write_file(f.tmp.path() / "kernels" / "include" / "README.txt", "notes\n");
    auto after = f.plan();
    REQUIRE(after);
    CHECK((*after)[0].content_hash == (*before)[0].content_hash);
  }
  SECTION("one source changes only its own unit") {
    write_file(f.tmp.path() / "kernels" / "src" / "fwd_a.cu", "// fwd_a edited\n");
    auto after = f.plan();
    REQUIRE(after);
    CHECK((*after)[0].content_hash != (*before)[0].content_hash);
    CHECK((*after)[1].content_hash == (*before)[1].content_hash);
    CHECK((*after)[2].content_hash == (*before)[2].content_hash);
  }
}

TEST_CASE("planner: the key includes the archs and the compiler version", "[planner]") {
  PlannerFixture f;
  auto one = f.plan({Arch{90, 0}});
  auto two = f.plan({Arch{90, 0}, Arch{120, 0}});
  auto other_nvcc = f.plan({Arch{90, 0}}, "*", "V12.8-test");
  REQUIRE(one);
  REQUIRE(two);
  REQUIRE(other_nvcc);
  const auto& k1 = (*one)[0].key;
  CHECK_THAT(k1, Contains((*one)[0].content_hash) && Contains("V13.0-test") && Contains("9.0"));
  CHECK(k1 == unit_key((*one)[0]).exact());  // the key the estimator learns under
  CHECK_THAT((*two)[0].key, Contains("9.0,12.0"));
  CHECK((*two)[0].key != k1);
  CHECK((*other_nvcc)[0].key != k1);
  CHECK_THAT((*other_nvcc)[0].key, Contains("V12.8-test"));
  // The content hash itself does not depend on archs or compiler.
  CHECK((*two)[0].content_hash == (*one)[0].content_hash);
  CHECK((*other_nvcc)[0].content_hash == (*one)[0].content_hash);
  // The link key follows the compiler too.
  CHECK(other_nvcc->back().key != one->back().key);
}

TEST_CASE("planner: content_hash is 16 hex digits of FNV-1a", "[planner]") {
  CHECK(content_hash("") == "cbf29ce484222325");
  CHECK(content_hash("a") == "af63dc4c8601ec8c");
  CHECK(content_hash("a") != content_hash("b"));
}

}  // namespace fad
