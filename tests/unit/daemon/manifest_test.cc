// parse_manifest and load_manifest: the good form, and errors naming the file
// and the offending unit.
#include <catch2/catch.hpp>

#include "daemon/manifest.h"
#include "fakes.h"

namespace fad {

using Catch::Contains;

TEST_CASE("manifest: a good manifest is parsed with defaults", "[manifest]") {
  auto m = parse_manifest(R"({
    "version": 1, "library": "fad_attention",
    "include_dirs": ["include", "src"], "flags": ["-O3"], "link_flags": ["-lcudart"],
    "units": [
      {"name": "fwd_a", "source": "src/fwd_a.cu", "family": "fwd", "flags": ["-DX"],
       "prior": {"peak_bytes": 204468224, "duration_s": 1.7}},
      {"name": "bwd_b", "source": "src/bwd_b.cu"}
    ]})",
                          "kernels/manifest.json");
  REQUIRE(m);
  CHECK(m->version == 1);
  CHECK(m->library == "fad_attention");
  CHECK(m->include_dirs == std::vector<std::string>{"include", "src"});
  CHECK(m->flags == std::vector<std::string>{"-O3"});
  CHECK(m->link_flags == std::vector<std::string>{"-lcudart"});
  REQUIRE(m->units.size() == 2);
  CHECK(m->units[0].name == "fwd_a");
  CHECK(m->units[0].source == "src/fwd_a.cu");
  CHECK(m->units[0].family == "fwd");
  CHECK(m->units[0].flags == std::vector<std::string>{"-DX"});
  CHECK(m->units[0].prior.peak_bytes == 204468224);
  CHECK(m->units[0].prior.duration_s == Approx(1.7));
  // Family defaults to the name; no prior means zeros.
  CHECK(m->units[1].family == "bwd_b");
  CHECK(m->units[1].flags.empty());
  CHECK(m->units[1].prior.peak_bytes == 0);
  CHECK(m->units[1].prior.duration_s == 0);
  CHECK_FALSE(m->units[1].required);
}

TEST_CASE("manifest: a unit may be required, and only by a boolean", "[manifest]") {
  auto m = parse_manifest(R"({"version": 1, "library": "x", "units": [
      {"name": "dispatch", "source": "src/dispatch.cu", "required": true}]})",
                          "m.json");
  REQUIRE(m);
  CHECK(m->units[0].required);
  auto bad = parse_manifest(R"({"version": 1, "library": "x", "units": [
      {"name": "dispatch", "source": "src/dispatch.cu", "required": "yes"}]})",
                            "m.json");
  REQUIRE_FALSE(bad);
  CHECK_THAT(bad.error(), Contains("m.json") && Contains("unit #1") && Contains("required"));
}

TEST_CASE("manifest: errors name the file and the unit", "[manifest]") {
  const std::string file = "/k/manifest.json";
  SECTION("not JSON") {
    auto m = parse_manifest("{ nope", file);
    REQUIRE_FALSE(m);
    CHECK_THAT(m.error(), Contains(file));
  }
  SECTION("missing version") {
    auto m = parse_manifest(R"({"library": "x", "units": [{"name": "a", "source": "a.cu"}]})", file);
    REQUIRE_FALSE(m);
    CHECK_THAT(m.error(), Contains(file) && Contains("version"));
  }
  SECTION("unsupported version") {
    auto m = parse_manifest(R"({"version": 2, "library": "x", "units": [{"name": "a", "source": "a.cu"}]})", file);
    REQUIRE_FALSE(m);
    CHECK_THAT(m.error(), Contains(file) && Contains("version"));
  }
  SECTION("missing library") {
    auto m = parse_manifest(R"({"version": 1, "units": [{"name": "a", "source": "a.cu"}]})", file);
    REQUIRE_FALSE(m);
    CHECK_THAT(m.error(), Contains(file) && Contains("library"));
  }
  SECTION("duplicate unit names") {
    auto m = parse_manifest(R"({"version": 1, "library": "x", "units": [
      {"name": "a", "source": "a.cu"}, {"name": "b", "source": "b.cu"}, {"name": "a", "source": "c.cu"}]})",
                            file);
    REQUIRE_FALSE(m);
    CHECK_THAT(m.error(), Contains(file) && Contains("unit #3") && Contains("duplicate") && Contains("'a'"));
  }
  SECTION("bad unit name") {
    auto m = parse_manifest(R"({"version": 1, "library": "x", "units": [
      {"name": "ok", "source": "a.cu"}, {"name": "Bad-Name", "source": "b.cu"}]})",
                            file);
    REQUIRE_FALSE(m);
    CHECK_THAT(m.error(), Contains(file) && Contains("unit #2") && Contains("Bad-Name"));
  }
  SECTION("unit without a source") {
    auto m = parse_manifest(R"({"version": 1, "library": "x", "units": [{"name": "a"}]})", file);
    REQUIRE_FALSE(m);
    CHECK_THAT(m.error(), Contains(file) && Contains("unit #1") && Contains("source"));
  }
  SECTION("units not an array") {
    auto m = parse_manifest(R"({"version": 1, "library": "x", "units": {"name": "a"}})", file);
    REQUIRE_FALSE(m);
    CHECK_THAT(m.error(), Contains(file) && Contains("units"));
  }
  SECTION("empty units") {
    auto m = parse_manifest(R"({"version": 1, "library": "x", "units": []})", file);
    REQUIRE_FALSE(m);
    CHECK_THAT(m.error(), Contains(file) && Contains("units"));
  }
  SECTION("flags not strings") {
    auto m = parse_manifest(R"({"version": 1, "library": "x", "units": [
      {"name": "a", "source": "a.cu", "flags": [1]}]})",
                            file);
    REQUIRE_FALSE(m);
    CHECK_THAT(m.error(), Contains(file) && Contains("unit #1") && Contains("flags"));
  }
}

TEST_CASE("manifest: load_manifest reads <kernels_dir>/manifest.json", "[manifest]") {
  test::TempDir tmp("fad-manifest");
  auto missing = load_manifest(tmp.str());
  REQUIRE_FALSE(missing);
  CHECK_THAT(missing.error(), Contains(tmp / "manifest.json"));

  test::write_kernels(tmp.path());
  auto m = load_manifest(tmp.str());
  REQUIRE(m);
  CHECK(m->library == "fad_test");
  CHECK(m->units.size() == 4);

  test::write_file(tmp.path() / "manifest.json", R"({"version": 1, "library": "x", "units": 3})");
  auto bad = load_manifest(tmp.str());
  REQUIRE_FALSE(bad);
  CHECK_THAT(bad.error(), Contains(tmp / "manifest.json"));
}

}  // namespace fad
