// The I/O half of `fad doctor`: runs nvcc, nvidia-smi, g++ and python3 (as
// argv with a time limit, never through a shell) and reads /proc and /sys.
// Every verdict is made by the pure checks in doctor_checks.cc.
#include "client/doctor.h"

#include <sys/statvfs.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <sstream>

#include "client/doctor_checks.h"
#include "client/exit_codes.h"
#include "client/gpu_archs.h"
#include "common/compiler_identity.h"
#include "common/config.h"
#include "common/file_read.h"
#include "common/program_output.h"

namespace fad::client {
namespace {

namespace fs = std::filesystem;
using std::chrono::seconds;

// nvcc and nvidia-smi answer in well under a second; these limits only catch
// a hung driver or filesystem. The trial compile starts cicc, ptxas and the
// host compiler, which can be slow on a loaded machine.
constexpr seconds kQuickTimeout{20};
constexpr seconds kCompileTimeout{180};
constexpr seconds kPythonTimeout{60};
// Output beyond this is dropped: the checks only need the first lines.
constexpr std::size_t kMaxOutput = 1 << 20;

// argv[0] is looked up on PATH, as a shell would; stderr is kept only where
// the check shows it (the trial compile's errors, nvcc's --version).
ProgramRun run_program(const std::vector<std::string>& argv, seconds timeout, bool with_stderr) {
  ProgramRunOptions options;
  options.with_stderr = with_stderr;
  options.search_path = true;
  options.max_output = kMaxOutput;
  return fad::run_program(argv, static_cast<int>(timeout.count()), options);
}

std::optional<std::string> read_file(const std::string& path) {
  auto text = read_regular_file(path);
  if (!text) return std::nullopt;
  return std::move(*text);
}

bool exists(const std::string& path) {
  std::error_code ec;
  return fs::exists(path, ec);
}

// Resolves the compiler as fadd does.
std::optional<std::string> resolve_executable(const std::string& name) {
  auto found = find_nvcc_here(name);
  if (found.empty()) return std::nullopt;
  return found;
}

// The config's "nvcc", else plain "nvcc".
std::string configured_nvcc(const Locations& locations) {
  if (locations.config)
    if (auto config = load_config(*locations.config); config && !config->nvcc.empty()) return config->nvcc;
  return "nvcc";
}

// --nvcc, else the compiler the answering fadd builds with by default (what
// `fad submit` would get), else the config's, else plain "nvcc".
std::pair<std::string, bool> requested_nvcc(const Command& cmd, const Locations& locations, const CallResult& status) {
  if (cmd.nvcc) return {*cmd.nvcc, false};
  if (const auto* answer = std::get_if<Response>(&status); answer && answer->ok) {
    const json nvcc = answer->result.is_object() && answer->result.value("daemon", json::object()).is_object()
                          ? answer->result["daemon"].value("nvcc", json())
                          : json();
    // A bare name is looked up here on this shell's PATH, which may not be
    // fadd's: the finding says whose compiler it is either way.
    if (nvcc.is_string() && !nvcc.get<std::string>().empty()) return {nvcc.get<std::string>(), true};
  }
  return {configured_nvcc(locations), false};
}

NvccFacts gather_nvcc(const std::pair<std::string, bool>& requested) {
  NvccFacts facts;
  facts.requested = requested.first;
  facts.fadds_default = requested.second;
  facts.path = resolve_executable(facts.requested);
  if (!facts.path) return facts;
  ProgramRun run = run_program({*facts.path, "--version"}, kQuickTimeout, true);
  if (run.started && !run.timed_out && run.exit_code == 0) facts.version_text = run.output;
  return facts;
}

ArchFacts gather_archs(const NvccFacts& nvcc, const Command& cmd) {
  ArchFacts facts;
  facts.nvcc_usable = nvcc.version_text.has_value();
  facts.requested = cmd.archs;
  auto local = detect_gpu_archs();
  if (local) facts.local = std::move(*local);
  if (facts.nvcc_usable) {
    ProgramRun run = run_program({*nvcc.path, "--list-gpu-arch"}, kQuickTimeout, false);
    if (run.exit_code == 0) facts.buildable = parse_nvcc_arch_list(run.output);
  }
  return facts;
}

HostCompilerFacts gather_host_compiler(const NvccFacts& nvcc) {
  HostCompilerFacts facts;
  ProgramRun gcc = run_program({"g++", "-dumpfullversion"}, kQuickTimeout, false);
  if (gcc.exit_code == 0) {
    std::string version = gcc.output.substr(0, gcc.output.find('\n'));
    if (!version.empty()) facts.gcc_version = version;
  }
  facts.nvcc_usable = nvcc.version_text.has_value();
  if (!facts.nvcc_usable) return facts;

  std::error_code ec;
  std::string pattern = (fs::temp_directory_path(ec) / "fad-doctor-XXXXXX").string();
  if (ec || ::mkdtemp(pattern.data()) == nullptr) {
    facts.compile_output = "cannot create a temporary directory for the trial compile";
    return facts;
  }
  const fs::path dir = pattern;
  std::ofstream(dir / "k.cu") << "__global__ void k() {}\nint main() { k<<<1, 1>>>(); return 0; }\n";
  ProgramRun run =
      run_program({*nvcc.path, "-c", (dir / "k.cu").string(), "-o", (dir / "k.o").string()}, kCompileTimeout, true);
  facts.compiled = run.exit_code == 0;
  facts.timed_out = run.timed_out;
  facts.compile_output = run.started ? run.output : "cannot run " + *nvcc.path;
  fs::remove_all(dir, ec);
  return facts;
}

TorchFacts gather_torch() {
  TorchFacts facts;
  ProgramRun run = run_program({"python3", "-c", std::string(torch_probe_script())}, kPythonTimeout, false);
  facts.python_found = run.started;
  facts.timed_out = run.timed_out;
  if (!run.started || run.timed_out) return facts;
  if (!parse_torch_probe(run.output, facts)) {
    facts.installed = true;
    facts.import_error = "the python probe printed no result (exit status " + std::to_string(run.exit_code) + ")";
  }
  return facts;
}

CgroupFacts gather_cgroup() {
  CgroupFacts facts;
  facts.layout = cgroup_layout(exists("/sys/fs/cgroup/cgroup.controllers"), exists("/sys/fs/cgroup/memory"),
                               exists("/sys/fs/cgroup/unified"));
  facts.proc_self_cgroup = read_file("/proc/self/cgroup").value_or("");
  const auto own = own_memory_cgroup_dir(facts.layout, facts.proc_self_cgroup);
  if (facts.layout == CgroupLayout::v2 && own) {
    facts.memory_dir_writable = ::access(own->c_str(), W_OK) == 0;
    facts.controllers = read_file(*own + "/cgroup.controllers").value_or("");
    facts.subtree_control = read_file(*own + "/cgroup.subtree_control").value_or("");
  } else if (facts.layout == CgroupLayout::v1 || facts.layout == CgroupLayout::hybrid) {
    facts.memory_dir_writable = ::access("/sys/fs/cgroup/memory", W_OK) == 0;
  }
  const char* limit_file = facts.layout == CgroupLayout::v2 ? "/memory.max" : "/memory.limit_in_bytes";
  if (own) facts.limit_text = read_file(*own + limit_file);
  // In a cgroup namespace /proc/self/cgroup names a path outside what is
  // mounted; the mount's root is then this process's own cgroup.
  if (!facts.limit_text && facts.layout != CgroupLayout::none)
    facts.limit_text = read_file(facts.layout == CgroupLayout::v2 ? "/sys/fs/cgroup/memory.max"
                                                                  : "/sys/fs/cgroup/memory/memory.limit_in_bytes");
  return facts;
}

Finding gather_and_check_disk(const std::string& state_dir) {
  // The state dir may not exist before fadd first runs; its filesystem is
  // that of the nearest parent that does.
  std::error_code ec;
  fs::path at = fs::absolute(state_dir, ec);
  while (!fs::exists(at, ec) && at.has_parent_path() && at != at.parent_path()) at = at.parent_path();
  struct statvfs st {};
  std::optional<std::uint64_t> free_bytes;
  if (::statvfs(at.c_str(), &st) == 0) free_bytes = static_cast<std::uint64_t>(st.f_bavail) * st.f_frsize;
  if (fs::exists(at, ec) && !fs::is_directory(at, ec)) return check_disk(state_dir, free_bytes, at.string());
  std::string where = state_dir;
  if (at != fs::path(state_dir)) where += " (not created yet; measured at " + at.string() + ")";
  return check_disk(where, free_bytes);
}

}  // namespace

int run_doctor(const Command& cmd, const Locations& locations, Context& ctx) {
  std::vector<Finding> findings;

  // Asked first: the running fadd names the compiler its builds use.
  const CallResult status = ctx.send(Request{"status", json::object()});

  // 1-4. The toolchain: nvcc, the archs it builds, its host compiler, torch.
  const NvccFacts nvcc = gather_nvcc(requested_nvcc(cmd, locations, status));
  findings.push_back(check_nvcc(nvcc));
  findings.push_back(check_archs(gather_archs(nvcc, cmd)));
  findings.push_back(check_host_compiler(gather_host_compiler(nvcc)));
  const auto release = nvcc.version_text ? parse_nvcc_release(*nvcc.version_text) : std::nullopt;
  findings.push_back(check_torch(gather_torch(), release));

  // 5-8. Memory as fadd will see it.
  const Result<MemInfo> meminfo = parse_meminfo(read_file("/proc/meminfo").value_or(""));
  findings.push_back(check_memory(meminfo));
  findings.push_back(check_wsl(read_file("/proc/version").value_or(""), meminfo ? *meminfo : MemInfo{}));
  auto psi = read_file("/proc/pressure/memory");
  if (psi && psi->empty()) psi.reset();  // kernels built without PSI enabled give an empty read
  findings.push_back(check_psi(psi));
  findings.push_back(check_cgroup(gather_cgroup()));

  // 9-10. Where fadd keeps its state, and whether it is running.
  findings.push_back(gather_and_check_disk(state_dir_to_check(status, locations.state_dir, cmd.state_dir.has_value())));
  findings.push_back(check_daemon(locations.socket, status));

  if (cmd.json)
    ctx.out << with_schema(findings_json(findings)).dump(2) << "\n";
  else
    ctx.out << render_findings(findings);
  return all_passed(findings) ? kExitOk : kExitFailed;
}

}  // namespace fad::client
