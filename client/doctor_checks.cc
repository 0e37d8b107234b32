// The verdicts of `fad doctor`; see doctor_checks.h. Thresholds sit next to
// the check that uses them, each with the reason for its value.
#include "client/doctor_checks.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <sstream>

#include "client/exit_codes.h"
#include "common/size.h"

namespace fad::client {
namespace {

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool contains(std::string_view text, std::string_view what) { return text.find(what) != std::string_view::npos; }

std::string trim(std::string_view text) {
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return {};
  return std::string(text.substr(first, text.find_last_not_of(" \t\r\n") - first + 1));
}

// Reads a non-negative integer at `text[at]`; advances `at`. nullopt if none.
std::optional<int> read_int(std::string_view text, std::size_t& at) {
  int value = 0;
  auto [end, ec] = std::from_chars(text.data() + at, text.data() + text.size(), value);
  if (ec != std::errc() || value < 0) return std::nullopt;
  at = static_cast<std::size_t>(end - text.data());
  return value;
}

// "12.4" -> {12, 4}; nullopt unless it starts with "N.N".
std::optional<std::pair<int, int>> parse_major_minor(std::string_view text) {
  std::size_t at = 0;
  auto major = read_int(text, at);
  if (!major || at >= text.size() || text[at] != '.') return std::nullopt;
  ++at;
  auto minor = read_int(text, at);
  if (!minor) return std::nullopt;
  return std::pair{*major, *minor};
}

// Sorted, because nvcc lists some archs out of order (11.0 before 10.3).
std::string join_archs(std::vector<Arch> archs) {
  std::sort(archs.begin(), archs.end());
  std::string out;
  for (const Arch& arch : archs) out += (out.empty() ? "" : ", ") + arch.display();
  return out.empty() ? "none" : out;
}

bool has_word(std::string_view list, std::string_view word) {
  std::istringstream in{std::string(list)};
  for (std::string w; in >> w;)
    if (w == word) return true;
  return false;
}

// The line of a compiler's output that says what went wrong, for a one-line detail.
std::string first_error_line(std::string_view output) {
  std::istringstream in{std::string(output)};
  std::string first;
  for (std::string line; std::getline(in, line);) {
    line = trim(line);
    if (line.empty()) continue;
    if (first.empty()) first = line;
    if (contains(lower(line), "error")) return line.substr(0, 240);
  }
  return first.substr(0, 240);
}

Finding make(std::string name, Verdict status, std::string detail, std::string fix = {}) {
  return Finding{std::move(name), status, std::move(detail), std::move(fix)};
}

}  // namespace

std::string_view verdict_name(Verdict verdict) {
  switch (verdict) {
    case Verdict::ok: return "ok";
    case Verdict::warn: return "warn";
    case Verdict::fail: return "fail";
  }
  return "fail";
}

std::optional<CudaRelease> parse_nvcc_release(std::string_view version_text) {
  constexpr std::string_view kRelease = "release ";
  const auto at = version_text.find(kRelease);
  if (at == std::string_view::npos) return std::nullopt;
  const std::string_view rest = version_text.substr(at + kRelease.size());
  auto mm = parse_major_minor(rest);
  if (!mm) return std::nullopt;
  CudaRelease release{mm->first, mm->second, {}};
  // "release 13.0, V13.0.88": the build follows on the same line.
  const std::string_view line = rest.substr(0, rest.find('\n'));
  if (auto v = line.find(", V"); v != std::string_view::npos) release.build = trim(line.substr(v + 2));
  return release;
}

// ---- 1. nvcc ----------------------------------------------------------------

Finding check_nvcc(const NvccFacts& facts) {
  const std::string install_fix = "install the CUDA toolkit, add /usr/local/cuda/bin to PATH, or pass --nvcc PATH";
  if (!facts.path) {
    if (facts.fadds_default)
      return make(
          "nvcc", Verdict::fail,
          "'" + facts.requested + "', the running fadd's default compiler, not found here" +
              (facts.requested.find('/') == std::string::npos ? " (on this shell's PATH; fadd looks on its own)" : ""),
          "restart fadd with --nvcc PATH (or the config's \"nvcc\") naming a working nvcc");
    if (facts.requested != "nvcc")
      return make("nvcc", Verdict::fail, "'" + facts.requested + "' not found or not executable",
                  "pass --nvcc the path of an nvcc (or nvcc-compatible) program, or install the CUDA toolkit");
    return make("nvcc", Verdict::fail, "nvcc not found on PATH or in /usr/local/cuda/bin", install_fix);
  }
  if (!facts.version_text)
    return make("nvcc", Verdict::fail, *facts.path + " does not run ('--version' failed)",
                "reinstall the CUDA toolkit or pass --nvcc a working nvcc");
  auto release = parse_nvcc_release(*facts.version_text);
  if (!release)
    // An nvcc-compatible wrapper may print anything; fad can still use it.
    return make("nvcc", Verdict::warn, *facts.path + ", CUDA release unknown ('--version' names none)",
                "if this is a wrapper, have '--version' pass through nvcc's output");
  std::string detail = *facts.path + ", CUDA " + std::to_string(release->major) + "." + std::to_string(release->minor);
  if (!release->build.empty()) detail += " (" + release->build + ")";
  if (facts.fadds_default) detail += "; fadd's default compiler";
  return make("nvcc", Verdict::ok, detail);
}

// ---- 2. archs ---------------------------------------------------------------

Finding check_archs(const ArchFacts& facts) {
  if (!facts.nvcc_usable) return make("archs", Verdict::warn, "skipped: no usable nvcc", "see the nvcc finding");
  if (facts.buildable.empty())
    return make("archs", Verdict::fail, "nvcc --list-gpu-arch listed no arch",
                "reinstall the CUDA toolkit or pass --nvcc a complete one");
  const std::string buildable = join_archs(facts.buildable);
  if (auto ok = validate_archs(facts.requested, facts.buildable); !ok)
    return make("archs", Verdict::fail, "requested " + ok.error(),
                "pass --arch one of " + buildable + ", or use a CUDA toolkit that supports it (--nvcc)");
  if (auto ok = validate_archs(facts.local, facts.buildable); !ok)
    return make("archs", Verdict::fail, "local GPU " + ok.error(),
                "use a CUDA toolkit that supports the local GPU (--nvcc), or pass --arch to fad submit");
  if (facts.local.empty() && facts.requested.empty())
    return make("archs", Verdict::warn, "no GPU visible: pass --arch to fad submit; nvcc builds " + buildable,
                "pass --arch A to fad submit (e.g. --arch " +
                    std::max_element(facts.buildable.begin(), facts.buildable.end())->display() + ")");
  std::string detail = facts.local.empty() ? "no GPU visible" : "GPUs " + join_archs(facts.local);
  if (!facts.requested.empty()) detail += ", requested " + join_archs(facts.requested);
  return make("archs", Verdict::ok, detail + "; nvcc builds " + buildable);
}

// ---- 3. host compiler ---------------------------------------------------------

Finding check_host_compiler(const HostCompilerFacts& facts) {
  const std::string gcc = facts.gcc_version ? "g++ " + *facts.gcc_version : "no g++ on PATH";
  if (!facts.nvcc_usable)
    return make("host compiler", Verdict::warn, gcc + "; trial compile skipped: no usable nvcc",
                "see the nvcc finding");
  if (facts.compiled) return make("host compiler", Verdict::ok, gcc + "; nvcc compiles a trial kernel");
  if (facts.timed_out)
    return make("host compiler", Verdict::fail, gcc + "; the trial compile did not finish in time",
                "run 'nvcc -c k.cu' by hand on a one-line kernel to see where it hangs");

  const std::string& out = facts.compile_output;
  if (contains(out, "-allow-unsupported-compiler") || contains(out, "UNSUPPORTED COMPILER")) {
    std::string fix = "install a gcc this CUDA release supports and have nvcc use it with -ccbin g++-N";
    // "gcc versions later than 15 are not supported": g++-15 is the newest it takes.
    if (auto at = out.find("later than "); at != std::string::npos) {
      std::size_t pos = at + 11;
      if (auto newest = read_int(out, pos)) {
        const std::string ccbin = "g++-" + std::to_string(*newest);
        fix = "install " + ccbin + " (or older) and have nvcc use it: NVCC_CCBIN=" + ccbin +
              " in fadd's environment, or an nvcc wrapper adding -ccbin " + ccbin + " given to --nvcc";
      }
    }
    return make("host compiler", Verdict::fail, gcc + " rejected by nvcc: " + first_error_line(out), fix);
  }
  if (!facts.gcc_version)
    return make("host compiler", Verdict::fail, "no g++ on PATH; nvcc: " + first_error_line(out),
                "install g++ (Debian/Ubuntu: apt install g++)");
  return make("host compiler", Verdict::fail, gcc + "; trial compile failed: " + first_error_line(out),
              "compile '__global__ void k(){} int main(){}' with 'nvcc -c k.cu' by hand to see the full error");
}

// ---- 4. torch -----------------------------------------------------------------

std::string_view torch_probe_script() {
  // One JSON line on stdout; torch may print warnings there too, so the
  // parser takes the last line that looks like an object.
  return R"PY(import json, sys
r = {"cache_tag": sys.implementation.cache_tag, "installed": False}
try:
    import torch
    r["installed"] = True
    r["version"] = str(torch.__version__)
    r["cuda"] = torch.version.cuda or ""
    abi = getattr(torch._C, "_GLIBCXX_USE_CXX11_ABI", None)
    if abi is not None:
        r["cxx11_abi"] = bool(abi)
except ModuleNotFoundError as e:
    if e.name != "torch":
        r["installed"] = True
        r["error"] = "ModuleNotFoundError: %s" % e
except Exception as e:
    r["installed"] = True
    r["error"] = "%s: %s" % (type(e).__name__, e)
print(json.dumps(r))
)PY";
}

bool parse_torch_probe(std::string_view output, TorchFacts& facts) {
  std::istringstream in{std::string(output)};
  std::string last;
  for (std::string line; std::getline(in, line);)
    if (line = trim(line); !line.empty() && line.front() == '{') last = line;
  const json j = json::parse(last, nullptr, false);
  if (!j.is_object() || !j.contains("installed") || !j["installed"].is_boolean()) return false;
  auto str = [&](const char* key) { return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : ""; };
  facts.installed = j["installed"].get<bool>();
  facts.import_error = str("error");
  facts.version = str("version");
  facts.cuda = str("cuda");
  facts.cache_tag = str("cache_tag");
  if (j.contains("cxx11_abi") && j["cxx11_abi"].is_boolean()) facts.cxx11_abi = j["cxx11_abi"].get<bool>();
  return true;
}

Finding check_torch(const TorchFacts& facts, const std::optional<CudaRelease>& nvcc) {
  if (!facts.python_found) return make("torch", Verdict::ok, "python3 not found, skipped");
  if (facts.timed_out)
    return make("torch", Verdict::warn, "'import torch' did not finish within 60 s, skipped",
                "check the python environment (e.g. a hung import or a slow network filesystem)");
  if (!facts.installed) return make("torch", Verdict::ok, "not installed, skipped");
  if (!facts.import_error.empty())
    return make("torch", Verdict::warn, "import torch failed: " + facts.import_error,
                "repair the torch install (pip install --force-reinstall torch) if you build torch extensions");

  std::string detail = "torch " + facts.version;
  detail += facts.cuda.empty() ? " (CPU-only)" : " (CUDA " + facts.cuda + ")";
  if (!facts.cache_tag.empty()) detail += ", " + facts.cache_tag;
  if (facts.cxx11_abi)
    detail += "; extensions must use -D_GLIBCXX_USE_CXX11_ABI=" + std::string(*facts.cxx11_abi ? "1" : "0");

  const auto torch_cuda = parse_major_minor(facts.cuda);
  if (!torch_cuda)
    return make("torch", Verdict::warn, detail + "; a CPU-only build cannot run CUDA extensions",
                "install a CUDA build of torch (pip install torch --index-url https://download.pytorch.org/whl/cuXY)");
  if (!nvcc)
    return make("torch", Verdict::warn, detail + "; nvcc's CUDA release unknown, not compared", "see the nvcc finding");

  const std::string nvcc_cuda = std::to_string(nvcc->major) + "." + std::to_string(nvcc->minor);
  const std::string fix = "install torch built for CUDA " + nvcc_cuda +
                          " (pip index https://download.pytorch.org/whl/cu" + std::to_string(nvcc->major) +
                          std::to_string(nvcc->minor) + "), or pass --nvcc an nvcc of CUDA " + facts.cuda;
  if (torch_cuda->first != nvcc->major)
    return make("torch", Verdict::fail, detail + "; nvcc is CUDA " + nvcc_cuda + ": major versions differ", fix);
  if (torch_cuda->second != nvcc->minor)
    // torch's own cpp_extension accepts a minor mismatch with a warning: same ABI, newer features may differ.
    return make("torch", Verdict::warn, detail + "; nvcc is CUDA " + nvcc_cuda + ": minor versions differ", fix);
  return make("torch", Verdict::ok, detail);
}

// ---- 5. memory, 6. WSL, 7. PSI ------------------------------------------------

Finding check_memory(const Result<MemInfo>& meminfo) {
  // The heaviest CUDA units (attention kernels with many instantiations) peak at 4-7 GiB each.
  constexpr std::uint64_t kMinAvailable = 8 * kGiB;
  if (!meminfo)
    return make("memory", Verdict::fail, "/proc/meminfo: " + meminfo.error(), "check that /proc is mounted");
  const MemInfo& m = *meminfo;
  std::string detail = "total " + format_size(m.total) + ", available " + format_size(m.available) + ", swap " +
                       format_size(m.swap_total) + " (" + format_size(m.swap_free) + " free)";
  if (m.available < kMinAvailable)
    return make("memory", Verdict::warn, detail + "; heavy CUDA units need 4-7 GiB each",
                "free memory or add swap; fadd will run fewer units at once");
  return make("memory", Verdict::ok, detail);
}

bool is_wsl(std::string_view proc_version) {
  const std::string text = lower(proc_version);
  return contains(text, "microsoft") || contains(text, "wsl");
}

Finding check_wsl(std::string_view proc_version, const MemInfo& meminfo) {
  if (!is_wsl(proc_version)) return make("wsl", Verdict::ok, "not WSL");
  // The VM's MemTotal is a few percent below the configured memory= (the
  // kernel keeps some), so "memory=16GB" must not trip the 16 GiB warning.
  constexpr double kSlack = 0.95;
  constexpr std::uint64_t kMinMemory = 16 * kGiB;
  constexpr std::uint64_t kMinSwap = 4 * kGiB;
  constexpr int kSuggestedSwapGb = 8;
  const std::string kind =
      contains(lower(proc_version), "wsl2") || contains(lower(proc_version), "microsoft-standard") ? "WSL2" : "WSL";
  std::string detail = kind + " VM: memory " + format_size(meminfo.total) + ", swap " + format_size(meminfo.swap_total);
  const bool small_memory = static_cast<double>(meminfo.total) < kSlack * static_cast<double>(kMinMemory);
  const bool small_swap = static_cast<double>(meminfo.swap_total) < kSlack * static_cast<double>(kMinSwap);
  if (!small_memory && !small_swap) return make("wsl", Verdict::ok, detail);

  // The host's RAM is not visible from inside the VM, so grow what the VM has
  // by half (at least to 16 GB); keep the memory as is when only swap is short.
  const double gib = static_cast<double>(meminfo.total) / static_cast<double>(kGiB);
  const long memory_gb = small_memory ? std::max(16L, std::lround(gib * 1.5)) : std::lround(gib);
  const long swap_gb = std::max<long>(kSuggestedSwapGb, std::lround(static_cast<double>(meminfo.swap_total) / kGiB));
  detail += small_memory ? "; under 16 GiB" : "";
  detail += small_swap ? "; swap under 4 GiB" : "";
  return make("wsl", Verdict::warn, detail,
              "add to %UserProfile%\\.wslconfig: [wsl2] memory=" + std::to_string(memory_gb) +
                  "GB swap=" + std::to_string(swap_gb) + "GB, then run 'wsl --shutdown'");
}

Finding check_psi(const std::optional<std::string>& psi_text) {
  const std::string fix = "nothing required; a kernel with CONFIG_PSI=y (or booted with psi=1) gives earlier warning";
  if (!psi_text) return make("psi", Verdict::warn, "no PSI (WSL kernels lack it): fad falls back to MemAvailable", fix);
  auto psi = parse_psi(*psi_text);
  if (!psi)
    return make("psi", Verdict::warn,
                "/proc/pressure/memory unreadable (" + psi.error() + "): fad falls back to MemAvailable", fix);
  std::ostringstream detail;
  detail.setf(std::ios::fixed);
  detail.precision(2);
  detail << "/proc/pressure/memory: some avg10 " << psi->some_avg10 << "%, full avg10 " << psi->full_avg10 << "%";
  return make("psi", Verdict::ok, detail.str());
}

// ---- 8. cgroups ---------------------------------------------------------------

CgroupLayout cgroup_layout(bool root_has_controllers, bool has_memory_dir, bool has_unified_dir) {
  if (root_has_controllers) return CgroupLayout::v2;
  if (has_memory_dir) return has_unified_dir ? CgroupLayout::hybrid : CgroupLayout::v1;
  return CgroupLayout::none;
}

std::optional<std::string> own_memory_cgroup_dir(CgroupLayout layout, std::string_view proc_self_cgroup) {
  if (layout == CgroupLayout::none) return std::nullopt;
  bool v2 = false;
  auto rel = parse_proc_cgroup_memory_path(proc_self_cgroup, &v2);
  if (!rel) return std::nullopt;
  // Under hybrid, "0::" names the unified (controller-less) tree; memory lives in v1.
  if (v2 != (layout == CgroupLayout::v2)) return std::nullopt;
  return std::string(v2 ? "/sys/fs/cgroup" : "/sys/fs/cgroup/memory") + (*rel == "/" ? "" : *rel);
}

Finding check_cgroup(const CgroupFacts& facts) {
  const std::string fix = "run fadd as root, or as a systemd unit with Delegate=memory";
  std::string limit;
  if (facts.limit_text)
    if (auto parsed = parse_cgroup_limit(*facts.limit_text); parsed && *parsed)
      limit = "; this process's memory limit: " + format_size(**parsed);

  switch (facts.layout) {
    case CgroupLayout::none:
      return make("cgroups", Verdict::warn, "no memory cgroup hierarchy mounted: fadd cannot cap units" + limit,
                  "mount cgroup2 on /sys/fs/cgroup (systemd does)");
    case CgroupLayout::v1:
    case CgroupLayout::hybrid: {
      const std::string name = facts.layout == CgroupLayout::v1 ? "v1" : "hybrid (memory on v1)";
      if (facts.memory_dir_writable)
        return make("cgroups", Verdict::ok, name + ", per-unit memory cgroups possible" + limit);
      return make("cgroups", Verdict::warn, name + ": /sys/fs/cgroup/memory not writable, no per-unit cgroups" + limit,
                  fix);
    }
    case CgroupLayout::v2: {
      bool v2 = false;
      const std::string own = parse_proc_cgroup_memory_path(facts.proc_self_cgroup, &v2).value_or("?");
      const bool memory = has_word(facts.subtree_control, "memory") || has_word(facts.controllers, "memory");
      if (facts.memory_dir_writable && memory)
        return make("cgroups", Verdict::ok, "v2, per-unit memory cgroups possible under " + own + limit);
      const std::string why =
          !facts.memory_dir_writable ? "cgroup " + own + " not writable" : "memory controller not available in " + own;
      return make("cgroups", Verdict::warn, "v2: " + why + ", no per-unit cgroups" + limit, fix);
    }
  }
  return make("cgroups", Verdict::warn, "unknown layout", fix);
}

// ---- 9. disk, 10. daemon ------------------------------------------------------

Finding check_disk(const std::string& path, std::optional<std::uint64_t> free_bytes, const std::string& blocker) {
  // A build's objects and logs take a few hundred MB; 5 GiB leaves room for several.
  constexpr std::uint64_t kWarnBelow = 5 * kGiB;
  constexpr std::uint64_t kFailBelow = 1 * kGiB;
  if (!blocker.empty())
    return make("disk", Verdict::fail,
                path + ": " + blocker + " is a file, not a directory; fadd cannot keep its state there",
                "point --state-dir / FAD_STATE_DIR at a directory");
  const std::string fix = "free space there, or point --state-dir / FAD_STATE_DIR at a larger filesystem";
  if (!free_bytes) return make("disk", Verdict::warn, "cannot query free space at " + path, fix);
  const std::string detail = format_size(*free_bytes) + " free at " + path;
  if (*free_bytes < kFailBelow) return make("disk", Verdict::fail, detail + " (under 1 GiB)", fix);
  if (*free_bytes < kWarnBelow) return make("disk", Verdict::warn, detail + " (under 5 GiB)", fix);
  return make("disk", Verdict::ok, detail);
}

std::string state_dir_to_check(const CallResult& reply, const std::string& configured, bool named) {
  const auto* response = std::get_if<Response>(&reply);
  if (named || response == nullptr || !response->ok || !response->result.is_object()) return configured;
  const json daemon = response->result.value("daemon", json::object());
  if (!daemon.is_object()) return configured;
  const auto it = daemon.find("state_dir");
  // Only an absolute path: a relative one would be measured from fad's own
  // directory, not fadd's.
  if (it == daemon.end() || !it->is_string() || it->get<std::string>().rfind('/', 0) != 0) return configured;
  return it->get<std::string>();
}

Finding check_daemon(const std::string& socket, const CallResult& reply) {
  if (const auto* failure = std::get_if<CallFailure>(&reply)) {
    // Exit code 3 means nothing answered; anything else answered garbage.
    if (failure->exit_code == kExitUnreachable)
      return make("daemon", Verdict::warn, "not running at " + socket + ": start it with 'fad daemon start'",
                  "fad daemon start");
    return make("daemon", Verdict::warn, "something at " + socket + " does not answer as fadd: " + failure->message,
                "stop whatever owns " + socket + ", then 'fad daemon start'");
  }
  const Response& response = std::get<Response>(reply);
  if (!response.ok)
    return make("daemon", Verdict::warn, "fadd at " + socket + " answered with an error: " + response.message,
                "see fadd's log (STATE/fadd.log)");
  const json daemon = response.result.is_object() ? response.result.value("daemon", json::object()) : json::object();
  const std::string version = daemon.is_object() ? daemon.value("version", "?") : "?";
  const std::string pid = daemon.is_object() && daemon.contains("pid") ? daemon["pid"].dump() : "?";
  const std::string detail = "fadd " + version + ", pid " + pid + ", at " + socket;
  if (version != FAD_VERSION)
    return make("daemon", Verdict::warn, detail + "; fad is " + std::string(FAD_VERSION),
                "restart it: fad daemon stop && fad daemon start");
  return make("daemon", Verdict::ok, detail);
}

// ---- the report -----------------------------------------------------------------

bool all_passed(const std::vector<Finding>& findings) {
  return std::none_of(findings.begin(), findings.end(), [](const Finding& f) { return f.status == Verdict::fail; });
}

std::string render_findings(const std::vector<Finding>& findings) {
  auto pad = [](std::string_view text, std::size_t width) {
    std::string out(text);
    out.resize(std::max(width, out.size() + 1), ' ');
    return out;
  };
  std::string out;
  for (const Finding& f : findings) {
    out += pad(verdict_name(f.status), 6) + pad(f.name, 15) + f.detail + "\n";
    if (f.status != Verdict::ok && !f.fix.empty()) out += "      fix: " + f.fix + "\n";
  }
  return out;
}

json findings_json(const std::vector<Finding>& findings) {
  json list = json::array();
  for (const Finding& f : findings)
    list.push_back({{"name", f.name},
                    {"status", verdict_name(f.status)},
                    {"detail", f.detail},
                    {"fix", f.fix.empty() ? json(nullptr) : json(f.fix)}});
  return {{"findings", list}, {"ok", all_passed(findings)}};
}

}  // namespace fad::client
