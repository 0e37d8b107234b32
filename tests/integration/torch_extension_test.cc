// PyTorch's own path: a CUDA extension of ours (tests/torch_extension) built
// with torch.utils.cpp_extension through `fad run`, in a virtualenv this test
// makes with torch from PyPI. Skips, saying why, where nvcc is missing or torch
// cannot be installed (no network, no wheel for this CUDA major).
#include <cstdlib>
#include <regex>

#include <catch2/catch.hpp>

#include "harness.h"

using namespace fad::test;

namespace {

/// nvcc's CUDA major version ("release 13.0" -> 13); 0 when unreadable.
int cuda_major(const std::string& nvcc) {
  const auto version = run({nvcc, "--version"});
  std::smatch m;
  if (version.exit_code != 0 || !std::regex_search(version.out, m, std::regex("release (\\d+)\\."))) return 0;
  return std::stoi(m[1]);
}

/// The pip requirement for a torch whose CUDA major is nvcc's. PyPI's default
/// torch wheels are built for CUDA 13 from 2.11 on; pinned so every run
/// tests the same torch.
std::string torch_requirement(int major) {
  if (const char* r = std::getenv("FAD_TORCH_REQUIREMENT"); r && *r) return r;
  return major == 13 ? "torch==2.13.0" : "torch";
}

std::string last_line(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text.substr(text.rfind('\n') + 1);  // npos + 1 == 0: the whole text
}

/// What installing torch holds on disk at once: its wheels (about 3 GiB with
/// the CUDA libraries) beside the venv they unpack to (about 5 GiB).
constexpr std::uintmax_t kTorchInstallBytes = 8ull << 30;

/// A virtualenv holding torch (made once, kept in the build dir: the download is
/// GBs). Empty, with `why` set, when it cannot be had.
fs::path torch_venv(int major, std::string* why) {
  const char* env = std::getenv("FAD_TORCH_VENV");
  const fs::path venv = env && *env ? fs::path(env) : fs::path(FAD_BINARY_DIR) / "torch-venv";
  const auto python = (venv / "bin" / "python").string();
  const std::string probe = "import torch; print(torch.version.cuda or 'cpu')";
  auto have = run({python, "-c", probe});
  if (have.exit_code != 0) {
    // Filling the disk would fail the tests running beside this one.
    std::error_code ec;
    fs::create_directories(venv.parent_path(), ec);
    const auto space = fs::space(venv.parent_path(), ec);
    if (ec || space.available < kTorchInstallBytes) {
      *why = "installing torch takes about " + std::to_string(kTorchInstallBytes >> 30) + " GiB and " +
             venv.parent_path().string() + " has " +
             (ec ? "an unknown amount" : std::to_string(space.available >> 20) + " MiB") + " free";
      return {};
    }
    auto made = run({"python3", "-m", "venv", venv.string()}, {}, 120);
    if (made.exit_code == 127) {
      *why = "no python3 on PATH";
      return {};
    }
    if (made.exit_code != 0) {
      *why = "cannot make a virtualenv (" + last_line(made.out + made.err) + "); apt-get install python3-venv";
      return {};
    }
    auto installed = run({python, "-m", "pip", "install", "--no-cache-dir", "--quiet", torch_requirement(major),
                          "ninja", "setuptools", "wheel"},
                         {}, 600);
    if (installed.exit_code != 0) {
      *why = "cannot install " + torch_requirement(major) + " from PyPI: " + last_line(installed.out + installed.err);
      fs::remove_all(venv, ec);  // a half-installed torch is GiBs that nothing uses
      return {};
    }
    have = run({python, "-c", probe});
  }
  const auto cuda = last_line(have.out);
  if (have.exit_code != 0 || cuda.substr(0, cuda.find('.')) != std::to_string(major)) {
    *why = "torch in " + venv.string() + " is built for CUDA '" + cuda + "' but nvcc is CUDA " + std::to_string(major) +
           " (set FAD_TORCH_REQUIREMENT)";
    return {};
  }
  return venv;
}

}  // namespace

TEST_CASE("a PyTorch CUDA extension builds with torch.utils.cpp_extension through fad run",
          "[integration][long][launcher][nvcc][torch]") {
  const auto nvcc = find_tool({"/usr/local/cuda/bin/nvcc", "/usr/bin/nvcc"});
  if (nvcc.empty() || std::getenv("FAD_SKIP_REAL_NVCC")) {
    WARN("SKIP: needs nvcc (or FAD_SKIP_REAL_NVCC is set); the PyTorch extension was not built");
    return;
  }
  std::string why;
  const auto venv = torch_venv(cuda_major(nvcc), &why);
  if (venv.empty()) {
    WARN("SKIP: " << why << "; the PyTorch extension was not built");
    return;
  }

  Daemon d;
  d.write_kernels({});
  d.start({"--nvcc", nvcc});
  const auto src = d.dir() / "ext";
  fs::copy(fs::path(FAD_SOURCE_DIR) / "tests" / "torch_extension", src, fs::copy_options::recursive);
  const auto python = (venv / "bin" / "python").string();
  const char* path = std::getenv("PATH");
  const std::map<std::string, std::string> env{
      {"FAD_SOCKET", d.socket()},
      {"CUDA_HOME", fs::path(nvcc).parent_path().parent_path().string()},
      {"TORCH_CUDA_ARCH_LIST", "9.0"},  // no GPU to ask; one arch keeps it quick
      {"PATH", (venv / "bin").string() + ":" + (path ? path : "/usr/bin:/bin")}};
  // The way users build: setup.py hands ninja an nvcc rule whose compiler is
  // $PYTORCH_NVCC, which `fad run` points at its shim.
  auto build = run({FAD_FAD_BIN, "run", "--name", "torch-ext", "--", "/bin/sh", "-c", "cd \"$0\" && exec \"$@\"",
                    src.string(), python, "setup.py", "build_ext", "--inplace"},
                   env, 600);
  INFO(build.out << build.err << d.daemon_log());
  REQUIRE(build.exit_code == 0);
  fs::path module;
  for (const auto& e : fs::directory_iterator(src))
    if (e.path().filename().string().rfind("fad_torch_probe", 0) == 0 && e.path().extension() == ".so")
      module = e.path();
  REQUIRE(!module.empty());

  const auto all = d.status_all();
  INFO(all.dump(2));
  const json ext = find_build(all, "torch-ext");
  REQUIRE(ext.is_object());
  CHECK(ext.at("state") == "succeeded");
  const auto units = d.status(ext.at("id")).at("unit_list");
  REQUIRE(units.size() == 2);  // the two .cu files; probe.cpp goes to the host compiler
  for (const auto& u : units) {
    CHECK(u.at("state") == "succeeded");
    CHECK(u.at("peak_bytes").get<std::uint64_t>() > (20u << 20));
    const std::string name = u.at("name");
    CHECK((name.find("row_softmax") != std::string::npos || name.find("rms_norm") != std::string::npos));
  }

  const auto cuobjdump = find_tool({(fs::path(nvcc).parent_path() / "cuobjdump").string(),
                                    std::string(FAD_SOURCE_DIR) + "/.tools/bin/cuobjdump", "/usr/bin/cuobjdump"});
  if (cuobjdump.empty()) {
    WARN("NOTE: no cuobjdump; the extension's SASS archs were not checked");
  } else {
    auto elf = run({cuobjdump, "--list-elf", module.string()});
    INFO(elf.out << elf.err);
    CHECK(elf.out.find("sm_90") != std::string::npos);
  }

  auto check = run({python, (src / "check.py").string()}, {{"PYTHONPATH", src.string()}}, 300);
  INFO(check.out << check.err);
  REQUIRE(check.exit_code == 0);
  if (check.out.find("SKIP") != std::string::npos)
    WARN("NOTE: no GPU; the extension was built and imported, its kernels were not run");
}
