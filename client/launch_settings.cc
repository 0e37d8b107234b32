// Launcher settings; see launch_settings.h.
#include "client/launch_settings.h"

#include "common/cache_settings.h"

namespace fad::client {

LaunchSettings load_launch_settings(const EnvLookup& env) {
  Config config;
  std::optional<std::string> path = env("FAD_CONFIG");
  if (!path) path = default_config_path(env);
  if (path)
    if (auto loaded = load_config(*path)) config = *loaded;
  LaunchSettings s;
  s.unit_memory_prior = config.unit_memory_prior;
  s.reserve = config.reserve;
  if (auto cache = resolve_cache_settings(config, env)) s.cache = *cache;
  return s;
}

}  // namespace fad::client
