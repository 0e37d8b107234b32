// Interception no build script escapes: `fad run` preloads libfad-intercept.so,
// so a script that sets PYTORCH_NVCC itself and calls a toolkit's nvcc by
// absolute path (from several processes at once, through sh, python, env -i
// and a differently named link) still has every compile scheduled as a unit
// of the build. Without the library the same script escapes fad.
#include <unistd.h>

#include <catch2/catch.hpp>

#include "harness.h"

using namespace fad::test;

namespace {

constexpr int kSources = 8;

/// A toolkit at `toolkit` whose bin/nvcc is a copy of the fake compiler (its
/// resolved path is named nvcc, as a real toolkit's is), and a project of
/// kSources sources with a build script that bypasses PATH and fad's shim.
fs::path write_escaping_project(const fs::path& dir, const fs::path& toolkit) {
  fs::create_directories(toolkit / "bin");
  fs::copy_file(FAD_FAKE_NVCC_BIN, toolkit / "bin" / "nvcc");
  // Another name resolving to the toolkit's nvcc.
  fs::create_symlink(toolkit / "bin" / "nvcc", toolkit / "bin" / "cuda-compiler");
  fs::create_directories(dir / "out");
  for (int i = 0; i < kSources; ++i)
    std::ofstream(dir / ("k" + std::to_string(i) + ".cu")) << "// fake-nvcc: peak_mb=20 duration_s=0.3\n";
  const std::string nvcc = (toolkit / "bin" / "nvcc").string();
  std::ofstream script(dir / "build.sh");
  script << "#!/bin/bash\nset -e\ncd \"$(dirname \"$0\")\"\n"
         << "export PYTORCH_NVCC=" << nvcc << "  # as flash-attention 3's setup.py does\n"
         << "export PATH=/usr/bin:/bin          # fad's shim is gone from PATH\n"
         << "unset CMAKE_CUDA_COMPILER_LAUNCHER\n"
         // Not a compile: passes through fad launch to the compiler, once (setup.py asks nvcc -V).
         << "\"$PYTORCH_NVCC\" --version | grep -q 'Cuda compilation tools'\n"
         << "pids=()\n"
         << "for i in 0 1 2 3; do \"$PYTORCH_NVCC\" -c k$i.cu -o out/k$i.o -gencode arch=compute_90,code=sm_90 & "
            "pids+=($!); done\n"
         << "python3 -c 'import subprocess, sys; sys.exit(subprocess.call([\"" << nvcc
         << "\", \"-c\", \"k4.cu\", \"-o\", \"out/k4.o\"]))' &\npids+=($!)\n"
         << "env -i FAD_FAKE_LOG=\"$FAD_FAKE_LOG\" " << nvcc << " -c k5.cu -o out/k5.o &\npids+=($!)\n"
         << toolkit.string() << "/bin/cuda-compiler -c k6.cu -o out/k6.o &\npids+=($!)\n"
         << "sh -c '" << nvcc << " -c k7.cu -o out/k7.o' &\npids+=($!)\n"
         << "for p in \"${pids[@]}\"; do wait $p; done\n"
         << "echo built; ls out | wc -l\n";
  script.close();
  fs::permissions(dir / "build.sh", fs::perms::owner_all);
  return dir / "build.sh";
}

}  // namespace

TEST_CASE("every nvcc a build script runs by absolute path is a unit of the fad run build",
          "[integration][intercept]") {
  Daemon d;
  d.write_kernels({});
  d.start();
  const auto script = write_escaping_project(d.dir() / "project", d.dir() / "cuda-13.0");
  const std::map<std::string, std::string> env{{"FAD_SOCKET", d.socket()}, {"FAD_FAKE_LOG", d.fake_log_path()}};
  auto r = run({FAD_FAD_BIN, "run", "--name", "escaping", "--", script.string()}, env, 120);
  INFO(r.out << r.err << d.daemon_log());
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("built\n" + std::to_string(kSources)) != std::string::npos);
  const json b = find_build(d.status_all(), "escaping");
  REQUIRE(b.is_object());
  CHECK(b.at("state") == "succeeded");
  CHECK(b.at("units").at("total") == kSources);
  CHECK(b.at("units").at("succeeded") == kSources);
  CHECK(d.fake_log().size() == static_cast<std::size_t>(kSources));  // each compiled once, through fad
  // No other build: nothing was grouped by session outside fad run.
  CHECK(d.status_all().at("builds").size() == 1);
}

TEST_CASE("without the preloaded library the same script escapes fad", "[integration][intercept]") {
  Daemon d;
  d.write_kernels({});
  d.start();
  const auto script = write_escaping_project(d.dir() / "project", d.dir() / "cuda-13.0");
  const std::map<std::string, std::string> env{{"FAD_SOCKET", d.socket()},
                                               {"FAD_INTERCEPT_LIB", (d.dir() / "no-such-lib.so").string()}};
  auto r = run({FAD_FAD_BIN, "run", "--name", "escaping", "--", script.string()}, env, 120);
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  const json b = find_build(d.status_all(), "escaping");
  REQUIRE(b.is_object());
  CHECK(b.at("units").at("total") == 0);  // the compiles ran, unseen
}

TEST_CASE("fad run raises MAX_JOBS only when fadd answers", "[integration][intercept]") {
  TempDir tmp;
  const std::vector<std::string> probe{FAD_FAD_BIN, "run", "--", "/bin/sh", "-c", "echo \"jobs=${MAX_JOBS:-unset}\""};
  auto without = run(probe, {{"FAD_SOCKET", (tmp.path() / "nobody.sock").string()}});
  INFO(without.err);
  CHECK(without.exit_code == 0);
  CHECK(without.out.find("jobs=unset") != std::string::npos);
  CHECK(without.err.find("not reachable") != std::string::npos);
  Daemon d;
  d.write_kernels({});
  d.start();
  auto with = run(probe, {{"FAD_SOCKET", d.socket()}});
  CHECK(with.exit_code == 0);
  CHECK(with.out.find("jobs=unset") == std::string::npos);
  CHECK(with.out.find("jobs=") != std::string::npos);
}
