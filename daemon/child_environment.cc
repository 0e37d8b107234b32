// What fadd's children see of its environment; see child_environment.h.
#include "daemon/child_environment.h"

#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <string_view>

#include "common/cache_key.h"

extern "C" {
extern char** environ;
}

namespace fad {

namespace {
constexpr std::array<std::string_view, 7> kPassed{"PATH",      "LANG",      "LANGUAGE", "TZ",
                                                  "CUDA_HOME", "CUDA_PATH", "CUDA_ROOT"};
}  // namespace

bool ChildEnvironment::passed_on(const std::string& name) {
  // fad's own settings (FAD_SOCKET, FAD_CACHE_DIR...) say nothing secret.
  if (name.rfind("LC_", 0) == 0 || name.rfind("FAD_", 0) == 0) return true;
  const auto in = [&](const auto& list) { return std::find(list.begin(), list.end(), name) != list.end(); };
  return in(kPassed) || in(kCompilerEnvironment);
}

ChildEnvironment::ChildEnvironment(const Credentials* run_as, const std::string& temp_dir)
    : own_((run_as == nullptr || run_as->uid == ::geteuid()) && temp_dir.empty()) {
  if (own_) return;
  const bool as_fadd = run_as == nullptr || run_as->uid == ::geteuid();
  for (char** e = environ; e && *e; ++e) {
    const std::string_view var(*e);
    const auto eq = var.find('=');
    if (eq == std::string_view::npos) continue;
    const std::string name(var.substr(0, eq));
    if (!temp_dir.empty() && name == "TMPDIR") continue;
    if (as_fadd || passed_on(name)) vars_.emplace_back(var);
  }
  if (!temp_dir.empty()) vars_.push_back("TMPDIR=" + temp_dir);
  if (!as_fadd) {
    // Looked up here, in fadd: the child may only make system calls.
    std::string home = "/", user = std::to_string(run_as->uid);
    std::vector<char> buf(16384);
    passwd pw{};
    passwd* found = nullptr;
    if (::getpwuid_r(run_as->uid, &pw, buf.data(), buf.size(), &found) == 0 && found) {
      if (found->pw_dir && *found->pw_dir) home = found->pw_dir;
      if (found->pw_name && *found->pw_name) user = found->pw_name;
    }
    vars_.push_back("HOME=" + home);
    vars_.push_back("USER=" + user);
    vars_.push_back("LOGNAME=" + user);
  }
  for (const auto& v : vars_) ptrs_.push_back(v.c_str());
  ptrs_.push_back(nullptr);
}

const char* const* ChildEnvironment::envp() const { return own_ ? environ : ptrs_.data(); }

}  // namespace fad
