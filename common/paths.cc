// Default locations of the socket, state and config, per the contract's table,
// and the flag > env > config > default resolution shared by fad and fadd.
#include "common/paths.h"

#include "common/text.h"

#include <pwd.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <system_error>

namespace fad {
namespace {

/// An XDG base directory variable; the XDG spec says relative values are invalid
/// and must be ignored.
std::optional<std::string> xdg_dir(const EnvLookup& env, std::string_view name) {
  std::optional<std::string> dir = env(name);
  if (!dir || dir->empty() || dir->front() != '/') return std::nullopt;
  return dir;
}

/// $HOME, else the password database's home of the current user.
std::string home_dir(const EnvLookup& env) {
  if (std::optional<std::string> home = env("HOME")) return *home;
  if (const passwd* pw = getpwuid(getuid()); pw && pw->pw_dir) return pw->pw_dir;
  return "/";
}

}  // namespace

EnvLookup process_env() {
  return [](std::string_view name) -> std::optional<std::string> {
    const char* value = std::getenv(std::string(name).c_str());
    if (!value || !*value) return std::nullopt;
    return std::string(value);
  };
}

std::string default_socket_path(const EnvLookup& env, unsigned uid) {
  if (std::optional<std::string> runtime = xdg_dir(env, "XDG_RUNTIME_DIR")) return *runtime + "/fad/fad.sock";
  return "/tmp/fad-" + std::to_string(uid) + "/fad.sock";
}

std::string default_state_dir(const EnvLookup& env) {
  if (std::optional<std::string> state = xdg_dir(env, "XDG_STATE_HOME")) return *state + "/fad";
  return home_dir(env) + "/.local/state/fad";
}

std::string system_config_path() { return std::string(FAD_SYSCONF_DIR) + "/fad/fad.json"; }

std::optional<std::string> default_config_path(const EnvLookup& env, const std::string& system_config) {
  std::string path;
  if (std::optional<std::string> config = xdg_dir(env, "XDG_CONFIG_HOME")) {
    path = *config + "/fad/fad.json";
  } else {
    path = home_dir(env) + "/.config/fad/fad.json";
  }
  // A user's own file wins; the machine-wide one (the system unit's, an
  // admin's defaults) applies where the user has none.
  for (const std::string& candidate : {path, system_config}) {
    std::error_code ec;
    if (!candidate.empty() && std::filesystem::exists(candidate, ec) && !ec) return candidate;
  }
  return std::nullopt;
}

std::string socket_path_problem(const std::string& path) {
  // Shown in messages and written in the lock file, a line a line break would cut.
  if (has_control(path))
    return "socket path '" + printable(path) + "' holds control characters ('?' here); choose another --socket";
  if (path.size() < sizeof(sockaddr_un::sun_path)) return {};
  return "socket path " + path + " is " + std::to_string(path.size()) + " bytes; a Unix socket's path holds at most " +
         std::to_string(sizeof(sockaddr_un::sun_path) - 1) +
         " (choose a shorter --socket; a relative one counts from the working directory)";
}

std::string program_path_problem(const std::string& program) {
  if (program.empty()) return "an empty program name";
  if (program.find('\0') != std::string::npos) return "a path with a NUL byte";
  // Shown in every user's listing and JSON, and in the build log root reads.
  if (has_control(program))
    return "'" + printable(program) + "' holds control or invisible characters ('?' here): rename the compiler's path";
  if (program.find('/') != std::string::npos && program.front() != '/')
    return "'" + printable(program) + "' is a relative path: give an absolute path or a bare name (looked up on PATH)";
  return {};
}

std::string resolve_path(const std::optional<std::string>& flag, const EnvLookup& env, std::string_view env_name,
                         const std::optional<std::string>& config_value, const std::string& fallback) {
  std::string path = fallback;
  if (flag && !flag->empty())
    path = *flag;
  else if (std::optional<std::string> from_env = env(env_name); from_env && !from_env->empty())
    path = *from_env;
  else if (config_value && !config_value->empty())
    path = *config_value;
  // Made absolute here, once: a relative FAD_SOCKET passed on to a build's
  // compiles (fad run) named another socket in each directory they ran in,
  // and a relative FAD_CACHE_DIR a cache in each. Not normalised: "L/.."
  // through a link L is the link's target's parent to the kernel.
  std::error_code ec;
  const auto absolute = std::filesystem::absolute(path, ec);
  return ec || path.empty() ? path : absolute.string();
}

}  // namespace fad
