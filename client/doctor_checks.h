// `fad doctor`'s judgements: pure functions from gathered facts (program
// output, /proc text, flags) to findings, plus the report renderers. No I/O
// here, so every verdict and fix text is tested on fixtures; client/doctor.cc
// gathers the facts from the real machine.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "client/connection.h"
#include "common/arch.h"
#include "common/meminfo.h"

namespace fad::client {

enum class Verdict { ok, warn, fail };

/// One check's outcome. `fix` is empty exactly when there is nothing to do.
struct Finding {
  std::string name;
  Verdict status = Verdict::ok;
  std::string detail;
  std::string fix;
};

/// "ok", "warn", "fail".
std::string_view verdict_name(Verdict verdict);

/// A CUDA toolkit release, as nvcc reports it.
struct CudaRelease {
  int major = 0;
  int minor = 0;
  std::string build;  ///< "V13.0.88"; empty if nvcc did not say
};

/// Parses `nvcc --version` ("Cuda compilation tools, release 13.0, V13.0.88").
/// nullopt when no "release X.Y" is found (e.g. an nvcc-compatible wrapper).
std::optional<CudaRelease> parse_nvcc_release(std::string_view version_text);

// ---- 1. nvcc --------------------------------------------------------------

struct NvccFacts {
  std::string requested;                    ///< what was asked for: --nvcc, fadd's default, config "nvcc", or "nvcc"
  std::optional<std::string> path;          ///< resolved executable; nullopt = not found
  std::optional<std::string> version_text;  ///< `--version` output; nullopt = it did not run
  bool fadds_default = false;               ///< `requested` is the running fadd's default compiler
};

/// fail when nvcc is missing or does not run; warn when it runs but names no release.
Finding check_nvcc(const NvccFacts& facts);

// ---- 2. archs -------------------------------------------------------------

struct ArchFacts {
  bool nvcc_usable = false;
  std::vector<Arch> buildable;  ///< `nvcc --list-gpu-arch`
  std::vector<Arch> local;      ///< the local GPUs' compute capabilities; empty = none visible
  std::vector<Arch> requested;  ///< `fad doctor --arch`
};

/// fail when a requested or local arch cannot be built (naming it and the
/// buildable list); warn when no GPU is visible and no --arch was given.
Finding check_archs(const ArchFacts& facts);

// ---- 3. host compiler -----------------------------------------------------

struct HostCompilerFacts {
  bool nvcc_usable = false;
  std::optional<std::string> gcc_version;  ///< `g++ -dumpfullversion`; nullopt = no g++
  bool compiled = false;                   ///< the trial `nvcc -c` succeeded
  bool timed_out = false;
  std::string compile_output;  ///< its stdout and stderr
};

/// fail when the trial compile fails; when nvcc rejected the host compiler's
/// version the fix names `-ccbin g++-N` with the newest version nvcc accepts.
Finding check_host_compiler(const HostCompilerFacts& facts);

// ---- 4. torch -------------------------------------------------------------

/// What the python probe found. Filled by parse_torch_probe from its JSON line.
struct TorchFacts {
  bool python_found = false;
  bool timed_out = false;
  bool installed = false;         ///< `import torch` found a module (it may still have failed)
  std::string import_error;       ///< non-empty: importing failed
  std::string version;            ///< torch.__version__
  std::string cuda;               ///< torch.version.cuda; empty for a CPU-only build
  std::string cache_tag;          ///< sys.implementation.cache_tag ("cpython-311")
  std::optional<bool> cxx11_abi;  ///< torch._C._GLIBCXX_USE_CXX11_ABI
};

/// The python program doctor runs (`python3 -c`): prints one JSON object.
std::string_view torch_probe_script();

/// Parses the probe's output into `facts` (python_found is set by the caller).
/// Returns false when the output is not the probe's JSON.
bool parse_torch_probe(std::string_view output, TorchFacts& facts);

/// ok "not installed, skipped" without python or torch; fail when torch's CUDA
/// major differs from nvcc's, warn when the minor does; the detail names the
/// -D_GLIBCXX_USE_CXX11_ABI an extension must use.
Finding check_torch(const TorchFacts& facts, const std::optional<CudaRelease>& nvcc);

// ---- 5. memory, 6. WSL, 7. PSI --------------------------------------------

inline constexpr std::uint64_t kGiB = 1ull << 30;

/// warn when MemAvailable < 8 GiB; fail when /proc/meminfo did not parse.
Finding check_memory(const Result<MemInfo>& meminfo);

/// True when /proc/version names Microsoft's kernel (WSL 1 or 2).
bool is_wsl(std::string_view proc_version);

/// ok "not WSL" off WSL; on WSL warn when the VM has < 16 GiB or < 4 GiB swap,
/// with the .wslconfig lines to add.
Finding check_wsl(std::string_view proc_version, const MemInfo& meminfo);

/// `psi_text` is /proc/pressure/memory, nullopt when unreadable (warn).
Finding check_psi(const std::optional<std::string>& psi_text);

// ---- 8. cgroups -----------------------------------------------------------

enum class CgroupLayout { none, v1, hybrid, v2 };

struct CgroupFacts {
  CgroupLayout layout = CgroupLayout::none;
  std::string proc_self_cgroup;           ///< /proc/self/cgroup
  bool memory_dir_writable = false;       ///< v1: /sys/fs/cgroup/memory; v2: this process's cgroup dir
  std::string controllers;                ///< v2: cgroup.controllers of this process's cgroup
  std::string subtree_control;            ///< v2: its cgroup.subtree_control
  std::optional<std::string> limit_text;  ///< memory.max / memory.limit_in_bytes, if readable
};

/// Which layout the files present imply: cgroup.controllers at the root -> v2,
/// a memory hierarchy -> v1, plus an "unified" mount -> hybrid.
CgroupLayout cgroup_layout(bool root_has_controllers, bool has_memory_dir, bool has_unified_dir);

/// The directory holding this process's memory cgroup, or nullopt.
std::optional<std::string> own_memory_cgroup_dir(CgroupLayout layout, std::string_view proc_self_cgroup);

/// warn when fadd could not create per-unit memory cgroups here; reports this
/// process's memory limit when there is one.
Finding check_cgroup(const CgroupFacts& facts);

// ---- 9. disk, 10. daemon --------------------------------------------------

/// `free_bytes` at `path` (the state dir or its nearest existing parent);
/// nullopt when statvfs failed. warn < 5 GiB, fail < 1 GiB.
/// `blocker`, when not empty, is the file in the way: the state dir, or a
/// directory above it, is a file (fail: fadd could not start there).
Finding check_disk(const std::string& path, std::optional<std::uint64_t> free_bytes, const std::string& blocker = "");

/// The state dir whose disk to check: `configured` when the user `named` it
/// (`fad doctor --state-dir D` asks about D), else the one the fadd that
/// answered uses (a system fadd's /var/lib/fad, or one given --state-dir),
/// else `configured` (fad's own default, where a fadd started by this user
/// would keep it).
std::string state_dir_to_check(const CallResult& reply, const std::string& configured, bool named = false);

/// The answer to a "status" request: ok with fadd's version and pid, warn when
/// nothing answers (with how to start it) or when fadd's version differs from fad's.
Finding check_daemon(const std::string& socket, const CallResult& reply);

// ---- the report -----------------------------------------------------------

/// True when no finding failed.
bool all_passed(const std::vector<Finding>& findings);

/// One line per finding ("ok    nvcc           ..."), plus "      fix: ..." under warn/fail.
std::string render_findings(const std::vector<Finding>& findings);

/// {"findings":[{"name","status","detail","fix"}], "ok": bool}; fix is null when empty.
json findings_json(const std::vector<Finding>& findings);

}  // namespace fad::client
