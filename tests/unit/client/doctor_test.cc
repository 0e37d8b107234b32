// `fad doctor`'s pure checks on recorded facts: real nvcc, /proc, cgroup and
// torch-probe output under tests/fixtures/doctor/, one verdict per case.
#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

#include "client/cli.h"
#include "client/doctor_checks.h"

using namespace fad::client;
using fad::Arch;
using fad::MemInfo;

namespace {

std::string fixture(const std::string& name) {
  std::ifstream in(std::string(FAD_FIXTURES_DIR) + "/" + name, std::ios::binary);
  REQUIRE(in);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

MemInfo meminfo(const std::string& name) {
  auto parsed = fad::parse_meminfo(fixture(name));
  REQUIRE(parsed.ok());
  return *parsed;
}

bool has(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

NvccFacts nvcc_13() { return NvccFacts{"nvcc", "/usr/local/cuda/bin/nvcc", fixture("doctor/nvcc_version_13.0.txt")}; }

std::vector<Arch> buildable_13() { return fad::parse_nvcc_arch_list(fixture("nvcc_list_gpu_arch_13.0.txt")); }

TorchFacts torch(const std::string& name) {
  TorchFacts facts;
  facts.python_found = true;
  REQUIRE(parse_torch_probe(fixture(name), facts));
  return facts;
}

}  // namespace

// ---- nvcc -------------------------------------------------------------------

TEST_CASE("parse_nvcc_release reads release and build") {
  auto r13 = parse_nvcc_release(fixture("doctor/nvcc_version_13.0.txt"));
  REQUIRE(r13);
  CHECK(r13->major == 13);
  CHECK(r13->minor == 0);
  CHECK(r13->build == "V13.0.88");
  auto r124 = parse_nvcc_release(fixture("doctor/nvcc_version_12.4.txt"));
  REQUIRE(r124);
  CHECK(r124->major == 12);
  CHECK(r124->minor == 4);
  CHECK(r124->build == "V12.4.131");
  CHECK_FALSE(parse_nvcc_release(fixture("doctor/nvcc_version_wrapper.txt")));
  CHECK_FALSE(parse_nvcc_release("release x.y"));
}

TEST_CASE("nvcc found reports path and version") {
  Finding f = check_nvcc(nvcc_13());
  CHECK(f.status == Verdict::ok);
  CHECK(f.name == "nvcc");
  CHECK(f.detail == "/usr/local/cuda/bin/nvcc, CUDA 13.0 (V13.0.88)");
  CHECK(f.fix.empty());
}

TEST_CASE("missing nvcc fails with install, PATH and --nvcc advice") {
  Finding f = check_nvcc(NvccFacts{"nvcc", std::nullopt, std::nullopt});
  CHECK(f.status == Verdict::fail);
  CHECK(has(f.detail, "not found on PATH or in /usr/local/cuda/bin"));
  CHECK(has(f.fix, "install the CUDA toolkit"));
  CHECK(has(f.fix, "add /usr/local/cuda/bin to PATH"));
  CHECK(has(f.fix, "--nvcc"));

  Finding named = check_nvcc(NvccFacts{"/opt/cuda-12.4/bin/nvcc", std::nullopt, std::nullopt});
  CHECK(named.status == Verdict::fail);
  CHECK(has(named.detail, "'/opt/cuda-12.4/bin/nvcc' not found"));

  // The running fadd's default compiler is what its builds get: named as such.
  Finding fadds = check_nvcc(NvccFacts{"/opt/cuda-12.4/bin/nvcc", std::nullopt, std::nullopt, true});
  CHECK(fadds.status == Verdict::fail);
  CHECK(has(fadds.detail, "the running fadd's default compiler, not found here"));
  CHECK(has(fadds.fix, "restart fadd with --nvcc PATH"));
  // A bare name: looked up here, which may not be where fadd looks.
  Finding bare = check_nvcc(NvccFacts{"nosuchnvcc", std::nullopt, std::nullopt, true});
  CHECK(has(bare.detail, "not found here (on this shell's PATH; fadd looks on its own)"));
  NvccFacts found = nvcc_13();
  found.fadds_default = true;
  CHECK(check_nvcc(found).status == Verdict::ok);
  CHECK(has(check_nvcc(found).detail, "; fadd's default compiler"));
}

TEST_CASE("nvcc that does not run fails, a wrapper without a release warns") {
  CHECK(check_nvcc(NvccFacts{"nvcc", "/usr/bin/nvcc", std::nullopt}).status == Verdict::fail);
  Finding wrapper = check_nvcc(NvccFacts{"wrap", "/w/wrap", fixture("doctor/nvcc_version_wrapper.txt")});
  CHECK(wrapper.status == Verdict::warn);
  CHECK(has(wrapper.detail, "release unknown"));
}

// ---- archs ------------------------------------------------------------------

TEST_CASE("archs: a local GPU nvcc builds is ok") {
  ArchFacts facts{true, buildable_13(), {Arch{90, 0}}, {}};
  Finding f = check_archs(facts);
  CHECK(f.status == Verdict::ok);
  CHECK(has(f.detail, "GPUs 9.0"));
  CHECK(has(f.detail, "nvcc builds 7.5, 8.0"));
  CHECK(has(f.detail, "10.3, 11.0, 12.0"));  // sorted although nvcc lists 11.0 first
}

TEST_CASE("archs: no GPU and no --arch warns to pass --arch") {
  Finding f = check_archs(ArchFacts{true, buildable_13(), {}, {}});
  CHECK(f.status == Verdict::warn);
  CHECK(has(f.detail, "no GPU visible: pass --arch to fad submit"));
  CHECK(has(f.fix, "--arch 12.1"));
  // Naming archs answers the warning.
  CHECK(check_archs(ArchFacts{true, buildable_13(), {}, {Arch{120, 0}}}).status == Verdict::ok);
}

TEST_CASE("archs: a requested or local arch nvcc cannot build fails naming it and the buildable list") {
  Finding requested = check_archs(ArchFacts{true, buildable_13(), {Arch{90, 0}}, {Arch{70, 0}}});
  CHECK(requested.status == Verdict::fail);
  CHECK(has(requested.detail, "requested arch 7.0"));
  CHECK(has(requested.detail, "7.5, 8.0, 8.6"));
  CHECK(has(requested.fix, "--arch"));

  Finding local = check_archs(ArchFacts{true, buildable_13(), {Arch{61, 0}}, {}});
  CHECK(local.status == Verdict::fail);
  CHECK(has(local.detail, "local GPU arch 6.1"));
  CHECK(has(local.detail, "12.1"));
}

TEST_CASE("archs: skipped without nvcc") {
  CHECK(check_archs(ArchFacts{false, {}, {Arch{90, 0}}, {}}).status == Verdict::warn);
}

// ---- host compiler ---------------------------------------------------------------

TEST_CASE("host compiler: a trial compile that works is ok and names gcc") {
  Finding f = check_host_compiler(HostCompilerFacts{true, "12.2.0", true, false, ""});
  CHECK(f.status == Verdict::ok);
  CHECK(has(f.detail, "g++ 12.2.0"));
}

TEST_CASE("host compiler: nvcc rejecting gcc's version fails with a -ccbin fix") {
  Finding f =
      check_host_compiler(HostCompilerFacts{true, "14.2.0", false, false, fixture("doctor/nvcc_unsupported_gcc.txt")});
  CHECK(f.status == Verdict::fail);
  CHECK(has(f.detail, "g++ 14.2.0 rejected by nvcc"));
  CHECK(has(f.detail, "unsupported GNU version"));
  CHECK(has(f.fix, "install g++-13"));
  CHECK(has(f.fix, "-ccbin g++-13"));
  CHECK(has(f.fix, "NVCC_CCBIN=g++-13"));
}

TEST_CASE("host compiler: other failures fail with the error line, no g++ says install it") {
  Finding other = check_host_compiler(HostCompilerFacts{true, "12.2.0", false, false, "\nk.cu(1): error: oops\n"});
  CHECK(other.status == Verdict::fail);
  CHECK(has(other.detail, "k.cu(1): error: oops"));
  Finding no_gcc = check_host_compiler(HostCompilerFacts{true, std::nullopt, false, false, "sh: 1: gcc: not found"});
  CHECK(no_gcc.status == Verdict::fail);
  CHECK(has(no_gcc.fix, "install g++"));
  CHECK(check_host_compiler(HostCompilerFacts{true, "12.2.0", false, true, ""}).status == Verdict::fail);
}

// ---- torch -------------------------------------------------------------------

TEST_CASE("torch: absent python or torch is ok and skipped") {
  CHECK(check_torch(TorchFacts{}, std::nullopt).detail == "python3 not found, skipped");
  Finding missing = check_torch(torch("doctor/torch_probe_missing.txt"), fad::client::CudaRelease{13, 0, ""});
  CHECK(missing.status == Verdict::ok);
  CHECK(missing.detail == "not installed, skipped");
}

TEST_CASE("torch: matching CUDA is ok and names the ABI flag") {
  Finding f = check_torch(torch("doctor/torch_probe_cu130.txt"), CudaRelease{13, 0, ""});
  CHECK(f.status == Verdict::ok);
  CHECK(has(f.detail, "torch 2.9.0+cu130 (CUDA 13.0), cpython-312"));
  CHECK(has(f.detail, "-D_GLIBCXX_USE_CXX11_ABI=1"));
}

TEST_CASE("torch: CUDA major mismatch fails, minor mismatch warns") {
  // The probe's output starts with a torch warning line; the JSON line is still found.
  TorchFacts cu124 = torch("doctor/torch_probe_cu124.txt");
  Finding major = check_torch(cu124, CudaRelease{13, 0, ""});
  CHECK(major.status == Verdict::fail);
  CHECK(has(major.detail, "major versions differ"));
  CHECK(has(major.detail, "-D_GLIBCXX_USE_CXX11_ABI=0"));
  CHECK(has(major.detail, "cpython-311"));
  CHECK(has(major.fix, "cu130"));

  Finding minor = check_torch(cu124, CudaRelease{12, 6, ""});
  CHECK(minor.status == Verdict::warn);
  CHECK(has(minor.detail, "minor versions differ"));
  CHECK(check_torch(cu124, CudaRelease{12, 4, ""}).status == Verdict::ok);
}

TEST_CASE("torch: CPU-only, broken, timed out and unknown nvcc warn") {
  CHECK(check_torch(torch("doctor/torch_probe_cpu.txt"), CudaRelease{13, 0, ""}).status == Verdict::warn);
  Finding broken = check_torch(torch("doctor/torch_probe_broken.txt"), CudaRelease{13, 0, ""});
  CHECK(broken.status == Verdict::warn);
  CHECK(has(broken.detail, "libcudart.so.12"));
  TorchFacts slow;
  slow.python_found = true;
  slow.timed_out = true;
  CHECK(check_torch(slow, std::nullopt).status == Verdict::warn);
  CHECK(check_torch(torch("doctor/torch_probe_cu130.txt"), std::nullopt).status == Verdict::warn);
  TorchFacts garbage;
  CHECK_FALSE(parse_torch_probe("Traceback (most recent call last):\n", garbage));
}

// ---- memory, WSL, PSI ------------------------------------------------------------

TEST_CASE("memory: plenty is ok, under 8 GiB available warns") {
  auto big = fad::parse_meminfo(fixture("meminfo_wsl2.txt"));
  Finding ok = check_memory(big);
  CHECK(ok.status == Verdict::ok);
  CHECK(has(ok.detail, "total 15.5 GiB"));
  Finding small = check_memory(fad::parse_meminfo(fixture("doctor/meminfo_wsl_small.txt")));
  CHECK(small.status == Verdict::warn);
  CHECK(has(small.detail, "heavy CUDA units need 4-7 GiB each"));
  CHECK(check_memory(fad::parse_meminfo(fixture("meminfo_no_available.txt"))).status == Verdict::fail);
}

TEST_CASE("wsl: detection from /proc/version") {
  CHECK(is_wsl(fixture("doctor/proc_version_wsl2.txt")));
  CHECK(is_wsl(fixture("doctor/proc_version_wsl1.txt")));
  CHECK_FALSE(is_wsl(fixture("doctor/proc_version_debian.txt")));
  Finding f = check_wsl(fixture("doctor/proc_version_debian.txt"), meminfo("doctor/meminfo_wsl_small.txt"));
  CHECK(f.status == Verdict::ok);
  CHECK(f.detail == "not WSL");
}

TEST_CASE("wsl: a small VM warns with .wslconfig lines") {
  Finding f = check_wsl(fixture("doctor/proc_version_wsl2.txt"), meminfo("doctor/meminfo_wsl_small.txt"));
  CHECK(f.status == Verdict::warn);
  CHECK(has(f.detail, "WSL2 VM: memory 7.7 GiB, swap 2.0 GiB"));
  // 7.7 GiB * 1.5 is under 16, so 16 is suggested; swap 8.
  CHECK(f.fix == "add to %UserProfile%\\.wslconfig: [wsl2] memory=16GB swap=8GB, then run 'wsl --shutdown'");
}

TEST_CASE("wsl: memory=16GB (MemTotal a little under 16 GiB) only warns about missing swap") {
  Finding f = check_wsl(fixture("doctor/proc_version_wsl2.txt"), meminfo("doctor/meminfo_wsl_16g_noswap.txt"));
  CHECK(f.status == Verdict::warn);
  CHECK_FALSE(has(f.detail, "under 16 GiB"));
  CHECK(has(f.detail, "swap under 4 GiB"));
  CHECK(has(f.fix, "memory=16GB swap=8GB"));
  // 16 GiB with 4 GiB swap is what the check asks for.
  CHECK(check_wsl(fixture("doctor/proc_version_wsl2.txt"), meminfo("meminfo_wsl2.txt")).status == Verdict::ok);
}

TEST_CASE("psi: readable is ok, missing warns that fad falls back to MemAvailable") {
  Finding ok = check_psi(fixture("psi_memory.txt"));
  CHECK(ok.status == Verdict::ok);
  CHECK(has(ok.detail, "some avg10 1.53%"));
  Finding missing = check_psi(std::nullopt);
  CHECK(missing.status == Verdict::warn);
  CHECK(missing.detail == "no PSI (WSL kernels lack it): fad falls back to MemAvailable");
}

// ---- cgroups -------------------------------------------------------------------

TEST_CASE("cgroup layout from the files present") {
  CHECK(cgroup_layout(true, false, false) == CgroupLayout::v2);
  CHECK(cgroup_layout(false, true, false) == CgroupLayout::v1);
  CHECK(cgroup_layout(false, true, true) == CgroupLayout::hybrid);
  CHECK(cgroup_layout(false, false, false) == CgroupLayout::none);
}

TEST_CASE("own memory cgroup dir per layout") {
  CHECK(own_memory_cgroup_dir(CgroupLayout::v2, fixture("cgroup_v2_self.txt")) ==
        "/sys/fs/cgroup/user.slice/user-1000.slice/user@1000.service/app.slice/fad.service");
  CHECK(own_memory_cgroup_dir(CgroupLayout::v1, fixture("cgroup_v1_self.txt")) ==
        "/sys/fs/cgroup/memory/user.slice/user-1000.slice/session-3.scope");
  // Under hybrid the memory controller is on v1, not the "0::" unified line.
  CHECK(own_memory_cgroup_dir(CgroupLayout::hybrid, fixture("cgroup_hybrid_self.txt")) ==
        "/sys/fs/cgroup/memory/system.slice/fad.service");
  CHECK_FALSE(own_memory_cgroup_dir(CgroupLayout::none, fixture("cgroup_v2_self.txt")));
}

TEST_CASE("cgroup v2: writable with memory is ok and reports the limit") {
  CgroupFacts facts{CgroupLayout::v2,
                    fixture("cgroup_v2_self.txt"),
                    true,
                    fixture("doctor/cgroup_v2_controllers.txt"),
                    "",
                    fixture("doctor/cgroup_v2_memory_max_8g.txt")};
  Finding f = check_cgroup(facts);
  CHECK(f.status == Verdict::ok);
  CHECK(has(f.detail,
            "v2, per-unit memory cgroups possible under "
            "/user.slice/user-1000.slice/user@1000.service/app.slice/fad.service"));
  CHECK(has(f.detail, "memory limit: 8.0 GiB"));
  facts.limit_text = fixture("doctor/cgroup_v2_memory_max_unlimited.txt");
  CHECK_FALSE(has(check_cgroup(facts).detail, "limit"));
}

TEST_CASE("cgroup v2: not writable or no memory controller warns with Delegate=memory") {
  CgroupFacts facts{
      CgroupLayout::v2, fixture("cgroup_v2_self.txt"), false, fixture("doctor/cgroup_v2_controllers.txt"), "",
      std::nullopt};
  Finding f = check_cgroup(facts);
  CHECK(f.status == Verdict::warn);
  CHECK(has(f.detail, "not writable"));
  CHECK(has(f.fix, "run fadd as root"));
  CHECK(has(f.fix, "Delegate=memory"));
  facts.memory_dir_writable = true;
  facts.controllers = fixture("doctor/cgroup_v2_controllers_no_memory.txt");
  Finding no_memory = check_cgroup(facts);
  CHECK(no_memory.status == Verdict::warn);
  CHECK(has(no_memory.detail, "memory controller not available"));
  facts.subtree_control = "memory pids\n";
  CHECK(check_cgroup(facts).status == Verdict::ok);
}

TEST_CASE("cgroup v1 and hybrid: /sys/fs/cgroup/memory writability decides") {
  CgroupFacts v1{CgroupLayout::v1, fixture("cgroup_v1_self.txt"), true, "", "", std::nullopt};
  CHECK(check_cgroup(v1).status == Verdict::ok);
  CgroupFacts hybrid{CgroupLayout::hybrid, fixture("cgroup_hybrid_self.txt"), false, "", "", "9223372036854771712\n"};
  Finding f = check_cgroup(hybrid);
  CHECK(f.status == Verdict::warn);
  CHECK(has(f.detail, "hybrid"));
  CHECK_FALSE(has(f.detail, "limit"));  // v1's "no limit" value
  CHECK(has(f.fix, "Delegate=memory"));
  CHECK(check_cgroup(CgroupFacts{}).status == Verdict::warn);
}

// ---- disk, daemon, report ------------------------------------------------------

TEST_CASE("disk: warn under 5 GiB, fail under 1 GiB") {
  CHECK(check_disk("/s", 50 * kGiB).status == Verdict::ok);
  CHECK(check_disk("/s", 4 * kGiB).status == Verdict::warn);
  Finding low = check_disk("/s", kGiB / 2);
  CHECK(low.status == Verdict::fail);
  CHECK(has(low.detail, "512.0 MiB free at /s"));
  CHECK(has(low.fix, "--state-dir"));
  CHECK(check_disk("/s", std::nullopt).status == Verdict::warn);
  // A file where the state dir (or one above it) would be: fadd cannot start.
  Finding file = check_disk("/f/sub", 50 * kGiB, "/f");
  CHECK(file.status == Verdict::fail);
  CHECK(file.detail == "/f/sub: /f is a file, not a directory; fadd cannot keep its state there");
  CHECK(has(file.fix, "at a directory"));
}

TEST_CASE("daemon: answering is ok with pid and version, absent warns how to start it") {
  fad::Response response;
  response.ok = true;
  response.result = {{"daemon", {{"version", FAD_VERSION}, {"pid", 4242}}}, {"builds", fad::json::array()}};
  Finding up = check_daemon("/run/fad/fad.sock", response);
  CHECK(up.status == Verdict::ok);
  CHECK(up.detail == std::string("fadd ") + FAD_VERSION + ", pid 4242, at /run/fad/fad.sock");

  response.result["daemon"]["version"] = "0.0.1";
  CHECK(check_daemon("/s", response).status == Verdict::warn);

  Finding down = check_daemon("/s", CallFailure{3, "cannot connect"});
  CHECK(down.status == Verdict::warn);
  CHECK(has(down.detail, "not running at /s: start it with 'fad daemon start'"));
  CHECK(check_daemon("/s", CallFailure{1, "garbled"}).status == Verdict::warn);
}

TEST_CASE("disk: measured where the fadd that answered keeps its state, else where fad would") {
  fad::Response response;
  response.ok = true;
  response.result = {{"daemon", {{"version", FAD_VERSION}, {"state_dir", "/var/lib/fad"}}}};
  CHECK(state_dir_to_check(response, "/home/u/.local/state/fad") == "/var/lib/fad");
  // `fad doctor --state-dir /scratch` asks about /scratch, whatever fadd uses.
  CHECK(state_dir_to_check(response, "/scratch", true) == "/scratch");
  CHECK(state_dir_to_check(CallFailure{3, "cannot connect"}, "/home/u/.local/state/fad") == "/home/u/.local/state/fad");
  response.result["daemon"]["state_dir"] = "state";  // not fadd's answer: fad would measure its own cwd
  CHECK(state_dir_to_check(response, "/d") == "/d");
  response.result["daemon"].erase("state_dir");  // an older fadd
  CHECK(state_dir_to_check(response, "/d") == "/d");
  response.ok = false;
  CHECK(state_dir_to_check(response, "/d") == "/d");
}

TEST_CASE("report: lines, fix lines, JSON and the overall verdict") {
  std::vector<Finding> findings{{"nvcc", Verdict::ok, "/usr/local/cuda/bin/nvcc, CUDA 13.0 (V13.0.88)", ""},
                                {"disk", Verdict::warn, "4.0 GiB free at /s", "free space"}};
  CHECK(render_findings(findings) ==
        "ok    nvcc           /usr/local/cuda/bin/nvcc, CUDA 13.0 (V13.0.88)\n"
        "warn  disk           4.0 GiB free at /s\n"
        "      fix: free space\n");
  CHECK(all_passed(findings));
  fad::json j = findings_json(findings);
  CHECK(j["ok"] == true);
  CHECK(j["findings"][0]["fix"].is_null());
  CHECK(j["findings"][1]["status"] == "warn");
  CHECK(j["findings"][1]["fix"] == "free space");

  findings.push_back({"host compiler", Verdict::fail, "x", "y"});
  CHECK_FALSE(all_passed(findings));
  CHECK(findings_json(findings)["ok"] == false);
  CHECK(has(render_findings(findings), "fail  host compiler  x\n"));
}

// ---- the command line ------------------------------------------------------------

TEST_CASE("fad doctor parses --arch, --nvcc, --state-dir and --json") {
  const char* argv[] = {"fad", "doctor", "--arch", "9.0,sm_120", "--nvcc", "/opt/nvcc", "--state-dir", "/st", "--json"};
  ParseOutcome parsed = parse_command(9, argv);
  REQUIRE(std::holds_alternative<Command>(parsed));
  const Command& cmd = std::get<Command>(parsed);
  CHECK(cmd.kind == CommandKind::doctor);
  CHECK(cmd.archs == std::vector<Arch>{Arch{90, 0}, Arch{120, 0}});
  CHECK(cmd.nvcc == "/opt/nvcc");
  CHECK(cmd.state_dir == "/st");
  CHECK(cmd.json);

  const char* bad[] = {"fad", "doctor", "--arch", "sm_x"};
  ParseOutcome usage = parse_command(4, bad);
  REQUIRE(std::holds_alternative<EarlyExit>(usage));
  CHECK(std::get<EarlyExit>(usage).exit_code == 2);
}
