// Compile-cache settings; see cache_settings.h.
#include "common/cache_settings.h"

#include <pwd.h>
#include <unistd.h>

#include "common/size.h"

namespace fad {

std::string default_cache_dir(const EnvLookup& env) {
  if (auto dir = env("XDG_CACHE_HOME"); dir && !dir->empty() && dir->front() == '/') return *dir + "/fad";
  if (auto home = env("HOME")) return *home + "/.cache/fad";
  if (const passwd* pw = ::getpwuid(::getuid()); pw && pw->pw_dir) return std::string(pw->pw_dir) + "/.cache/fad";
  return "/tmp/fad-cache-" + std::to_string(::getuid());
}

Result<CacheSettings> resolve_cache_settings(const Config& config, const EnvLookup& env) {
  CacheSettings s;
  s.dir = resolve_path(std::nullopt, env, "FAD_CACHE_DIR", config.cache_dir, default_cache_dir(env));
  s.max_bytes = config.cache_size;
  if (auto size = env("FAD_CACHE_SIZE")) {
    auto parsed = parse_size(*size);
    if (!parsed) return make_error("FAD_CACHE_SIZE: " + parsed.error() + " (0 turns the compile cache off)");
    s.max_bytes = *parsed;
  }
  return s;
}

}  // namespace fad
