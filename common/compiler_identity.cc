// Compiler identities; see compiler_identity.h.
#include "common/compiler_identity.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "common/file_read.h"
#include "common/hash.h"
#include "common/program_output.h"

namespace fad {

namespace fs = std::filesystem;

namespace {
constexpr int kProbeTimeoutS = 30;
constexpr const char* kProfileMarker = "\n--- nvcc.profile ---\n";
constexpr const char* kScriptMarker = "\n--- script sha256 ---\n";

/// `p` against `cwd` when it is relative, if that is an executable regular
/// file (a directory named like the program is none); nullopt otherwise.
std::optional<fs::path> executable_file(fs::path p, const std::string& cwd) {
  if (!p.is_absolute()) p = fs::path(cwd) / p;
  struct stat st {};
  if (::stat(p.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || ::access(p.c_str(), X_OK) != 0) return std::nullopt;
  return p;
}
}  // namespace

std::string find_program(const std::string& name, const std::string& path_env, const std::string& cwd,
                         const ProgramFilter& accept) {
  if (name.empty()) return {};
  auto executable = [&](const fs::path& p) {
    auto found = executable_file(p, cwd);
    std::string path = found ? found->lexically_normal().string() : std::string();
    return path.empty() || !accept || accept(path) ? path : std::string();
  };
  if (name.find('/') != std::string::npos) return executable(name);
  std::stringstream dirs(path_env);
  for (std::string dir; std::getline(dirs, dir, ':');)
    if (auto found = executable(fs::path(dir.empty() ? "." : dir) / name); !found.empty()) return found;
  return {};
}

std::string without_empty_entries(const std::string& path_env) {
  std::string out;
  std::stringstream dirs(path_env);
  for (std::string dir; std::getline(dirs, dir, ':');)
    if (!dir.empty()) out += (out.empty() ? "" : ":") + dir;
  return out;
}

std::string find_nvcc(const std::string& name, const std::string& path_env, const std::string& cwd,
                      const ProgramFilter& accept) {
  if (name.find('/') != std::string::npos) {
    // As named, not lexically normalized: "dir/link/.." is not "dir".
    auto found = executable_file(name, cwd);
    return found ? found->string() : std::string();
  }
  std::string path = without_empty_entries(path_env);
  path += path.empty() ? "/usr/local/cuda/bin" : ":/usr/local/cuda/bin";
  return find_program(name, path, cwd, accept);
}

std::string find_nvcc_here(const std::string& name, const ProgramFilter& accept) {
  std::error_code ec;
  const auto cwd = fs::current_path(ec);
  const char* path = std::getenv("PATH");
  return find_nvcc(name, path ? path : "", ec ? "/" : cwd.string(), accept);
}

std::string host_compiler_program(const std::string& ccbin, const EnvLookup& env, const std::string& cwd) {
  std::string chosen = ccbin;
  if (chosen.empty()) chosen = env("NVCC_CCBIN").value_or("gcc");
  std::error_code ec;
  fs::path p(chosen);
  if (chosen.find('/') != std::string::npos && fs::is_directory(p.is_absolute() ? p : fs::path(cwd) / p, ec))
    chosen = (p / "gcc").string();
  return find_program(chosen, env("PATH").value_or(""), cwd);
}

Result<std::string> compiler_identity(const std::string& program, CompileCache* cache) {
  std::error_code ec;
  const fs::path real = fs::canonical(program, ec);
  struct stat st {};
  if (ec || ::stat(real.c_str(), &st) != 0) return make_error("compiler " + program + " not found");
  // nvcc.profile beside nvcc sets its include and library paths.
  const fs::path profile = real.parent_path() / "nvcc.profile";
  const bool has_profile = real.filename() == "nvcc" && fs::exists(profile, ec);
  Sha256 file_key;
  // Known by inode and change time, so an edited or replaced file is a new compiler.
  auto add_file = [&](const fs::path& file, const struct stat& f) {
    file_key.field(file.string())
        .field(std::to_string(f.st_dev))
        .field(std::to_string(f.st_ino))
        .field(std::to_string(f.st_size))
        .field(std::to_string(f.st_mtim.tv_sec))
        .field(std::to_string(f.st_mtim.tv_nsec));
  };
  add_file(real, st);
  if (struct stat f{}; has_profile && ::stat(profile.c_str(), &f) == 0) add_file(profile, f);
  const std::string note = "compiler-" + file_key.hex();
  // A script (a wrapper such as `exec /opt/cuda-$V/bin/nvcc "$@"`) may run
  // another compiler tomorrow without changing itself: asked every time
  // (a few milliseconds), never known by its file. Its own text is part of
  // it too: an edited wrapper (another -D, another nvcc) answers --version
  // as before.
  char head[2] = {};
  const bool script = std::ifstream(real, std::ios::binary).read(head, 2) && head[0] == '#' && head[1] == '!';
  if (cache && !script)
    if (auto known = cache->note(note)) return *known;
  std::string script_hash;
  if (script) {
    auto text = read_whole_file(real.string());
    if (!text) return make_error("cannot identify compiler " + program + ": cannot read it");
    script_hash = sha256_hex(*text);
  }
  auto version = program_output({program, "--version"}, kProbeTimeoutS);
  if (!version) return make_error("cannot identify compiler " + program + ": " + version.error());
  std::string identity = *version;
  if (script) identity += kScriptMarker + script_hash;
  if (has_profile) {
    std::ifstream in(profile, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    identity += kProfileMarker + text.str();
  }
  if (cache && !script) (void)cache->put_note(note, identity);
  return identity;
}

std::string version_line(const std::string& identity) {
  std::string versions = identity.substr(0, std::min(identity.find(kProfileMarker), identity.find(kScriptMarker)));
  std::stringstream in(versions);
  std::string last;
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) last = line;
  return last;
}

}  // namespace fad
