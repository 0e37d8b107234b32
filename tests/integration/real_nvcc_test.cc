// The real thing: fadd compiling bundled kernel units with the installed nvcc
// and linking them into a library that holds SASS for the requested arch.
#include <cstdlib>

#include <catch2/catch.hpp>

#include "harness.h"

using namespace fad::test;

namespace {
std::string find_nvcc() {
  for (const char* candidate : {"/usr/local/cuda/bin/nvcc", "/usr/bin/nvcc"})
    if (::access(candidate, X_OK) == 0) return candidate;
  return {};
}
}  // namespace

// One heavy unit of the bundled library (16 kernels: FlashAttention-2's
// switches for one head dim, dtype and mask) for two archs, plus the dispatch
// unit the manifest requires.
TEST_CASE("real nvcc builds a bundled unit for two archs into a library with SASS for each", "[integration][nvcc]") {
  const auto nvcc = find_nvcc();
  if (nvcc.empty() || std::getenv("FAD_SKIP_REAL_NVCC")) {
    WARN("SKIP: no nvcc installed (or FAD_SKIP_REAL_NVCC set); the real-compiler build was not run");
    return;
  }
  Daemon d;
  // The bundled kernels, not a test copy.
  fs::create_symlink(fs::path(FAD_SOURCE_DIR) / "kernels", d.kernels_dir());
  d.start({"--nvcc", nvcc});
  auto r = d.fad(
      {"submit", "--arch", "sm_80", "--arch", "9.0", "--kernels", "fwd_hdim32_fp16_causal", "--wait", "--json"}, 3600);
  INFO(r.out << r.err << d.daemon_log());
  REQUIRE(r.exit_code == 0);
  // The same document as `fad status ID --json`.
  const auto build = json::parse(r.out).at("builds").at(0);
  CHECK(build.at("state") == "succeeded");
  CHECK(build.at("units").at("total") == 3);  // the unit, the required dispatch, the link
  const std::string artifact = build.at("artifact");
  REQUIRE(fs::exists(artifact));

  // cuobjdump: next to nvcc, or on PATH (scripts/setup.sh installs one when the
  // toolkit lacks it).
  std::string cuobjdump = "cuobjdump";
  for (const auto& candidate :
       {fs::path(nvcc).parent_path() / "cuobjdump", fs::path(FAD_SOURCE_DIR) / ".tools" / "bin" / "cuobjdump"})
    if (fs::exists(candidate)) cuobjdump = candidate.string();
  auto elf = run({cuobjdump, "--list-elf", artifact});
  INFO(elf.out << elf.err);
  CHECK(elf.exit_code == 0);
  // At least one cubin per unit and arch (nvcc's shared-library link adds one
  // of its own per arch), the same for both archs, and no other arch.
  auto count = [&](const std::string& arch) {
    std::size_t n = 0;
    for (auto pos = elf.out.find("." + arch + ".cubin"); pos != std::string::npos;
         pos = elf.out.find("." + arch + ".cubin", pos + 1))
      ++n;
    return n;
  };
  CHECK(count("sm_80") >= 2);
  CHECK(count("sm_90") == count("sm_80"));
  CHECK(elf.out.find("sm_75") == std::string::npos);

  // Measured: every compile's peak over its process tree is recorded, and
  // ptxas (--resource-usage, in the unit's log) spilled no register in any
  // kernel of the unit.
  const auto units = d.status(build.at("id")).at("unit_list");
  for (const auto& u : units) {
    if (u.at("kind") != "compile") continue;
    CHECK(u.at("peak_bytes").get<std::uint64_t>() > (50u << 20));
    if (u.at("name") != "fwd_hdim32_fp16_causal") continue;
    auto log = d.fad({"logs", std::to_string(build.at("id").get<long>()), "fwd_hdim32_fp16_causal"});
    INFO(log.out);
    CHECK(log.out.find("Used ") != std::string::npos);  // the resource report is there
    CHECK(log.out.find("bytes spill stores") != std::string::npos);
    std::size_t pos = 0, kernels = 0;
    while ((pos = log.out.find("bytes spill stores", pos)) != std::string::npos) {
      const auto line_start = log.out.rfind('\n', pos);
      CHECK(log.out.substr(line_start + 1, pos - line_start - 1).find(" 0 bytes stack frame, 0") != std::string::npos);
      ++pos, ++kernels;
    }
    CHECK(kernels >= 2 * 16);  // 16 kernels, each for two archs
  }
}

// The library built from a subset of units (one forward unit, the dispatch):
// it links, its self-test compiles against it and runs (on a GPU: correctness
// of what was built, compute-sanitizer, PyTorch's SDPA), or skips without a
// GPU. FAD_TEST_ALL_KERNELS=1 builds all 84 units instead (hours on 2 cores).
TEST_CASE("the bundled library builds through fad and its self-test runs, or skips without a GPU",
          "[integration][long][nvcc][selftest]") {
  const auto nvcc = find_nvcc();
  if (nvcc.empty() || std::getenv("FAD_SKIP_REAL_NVCC")) {
    WARN("SKIP: no nvcc installed (or FAD_SKIP_REAL_NVCC set); the library and its self-test were not built");
    return;
  }
  const bool all = std::getenv("FAD_TEST_ALL_KERNELS") != nullptr;
  Daemon d;
  fs::create_symlink(fs::path(FAD_SOURCE_DIR) / "kernels", d.kernels_dir());
  d.start({"--nvcc", nvcc});
  // The local GPU's arch when there is one (fad picks it), else Hopper.
  const bool gpu = run({"nvidia-smi", "--query-gpu=compute_cap", "--format=csv,noheader"}).exit_code == 0;
  std::vector<std::string> submit = {"submit", "--wait", "--json", "--kernels", all ? "*" : "fwd_hdim64_fp16_causal"};
  if (!gpu) submit.insert(submit.end(), {"--arch", "9.0"});
  auto r = d.fad(submit, all ? 6 * 3600 : 3600);
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  const auto build = json::parse(r.out).at("builds").at(0);
  CHECK(build.at("units").at("total") == (all ? 86 : 3));  // units, dispatch, link
  const fs::path lib = build.at("artifact").get<std::string>();

  const fs::path k = fs::path(FAD_SOURCE_DIR) / "kernels";
  const auto exe = d.dir() / "fad_attention_selftest";
  auto compile =
      run({nvcc, "-std=c++17", "-O2", "-I", (k / "include").string(), "-I", (k / "reference").string(), "-I",
           (k / "selftest").string(), (k / "selftest" / "fad_attention_selftest.cu").string(),
           (k / "selftest" / "attention_cases.cc").string(), (k / "reference" / "reference_attention.cc").string(),
           "-o", exe.string(), "-L" + lib.parent_path().string(), "-lfad_attention", "-Xlinker",
           "-rpath=" + lib.parent_path().string()},
          {}, 600);
  INFO(compile.out << compile.err);
  REQUIRE(compile.exit_code == 0);
  auto selftest = run({"bash", (k / "selftest" / "run_selftest.sh").string(), exe.string(), lib.string()}, {}, 3600);
  INFO(selftest.out << selftest.err);
  if (selftest.out.find("SKIP: no CUDA device") != std::string::npos) {
    WARN(
        "NOTE: no CUDA device; the self-test was built and linked against the fad-built library, its GPU run was not "
        "done");
    CHECK(selftest.exit_code == 0);
    CHECK(selftest.out.find("API argument checks: PASS") != std::string::npos);
  } else {
    CHECK(selftest.exit_code == 0);  // every built variant within tolerance, sanitizers clean
  }
}
