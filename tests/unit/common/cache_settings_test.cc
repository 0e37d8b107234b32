// Tests for common/cache_settings: environment over config over default.
#include <map>

#include <catch2/catch.hpp>

#include "common/cache_settings.h"

using namespace fad;

namespace {
EnvLookup env_of(std::map<std::string, std::string> vars) {
  return [vars](std::string_view name) -> std::optional<std::string> {
    auto it = vars.find(std::string(name));
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}
}  // namespace

TEST_CASE("the cache directory: FAD_CACHE_DIR, cache_dir, XDG_CACHE_HOME, HOME", "[cache_settings]") {
  Config config;
  CHECK(resolve_cache_settings(config, env_of({{"HOME", "/home/u"}}))->dir == "/home/u/.cache/fad");
  CHECK(resolve_cache_settings(config, env_of({{"HOME", "/home/u"}, {"XDG_CACHE_HOME", "/xdg"}}))->dir == "/xdg/fad");
  // A relative XDG directory is invalid per the spec and ignored.
  CHECK(resolve_cache_settings(config, env_of({{"HOME", "/home/u"}, {"XDG_CACHE_HOME", "rel"}}))->dir ==
        "/home/u/.cache/fad");
  config.cache_dir = "/srv/cache";
  CHECK(resolve_cache_settings(config, env_of({{"HOME", "/home/u"}}))->dir == "/srv/cache");
  CHECK(resolve_cache_settings(config, env_of({{"FAD_CACHE_DIR", "/env/cache"}}))->dir == "/env/cache");
}

TEST_CASE("the cache size: FAD_CACHE_SIZE over cache_size, a bad value is an error naming it", "[cache_settings]") {
  Config config;
  config.cache_size = 5ull << 30;
  CHECK(resolve_cache_settings(config, env_of({}))->max_bytes == (5ull << 30));
  CHECK(resolve_cache_settings(config, env_of({{"FAD_CACHE_SIZE", "0"}}))->max_bytes == 0);
  CHECK(resolve_cache_settings(config, env_of({{"FAD_CACHE_SIZE", "512M"}}))->max_bytes == (512ull << 20));
  auto bad = resolve_cache_settings(config, env_of({{"FAD_CACHE_SIZE", "lots"}}));
  REQUIRE_FALSE(bad);
  CHECK(bad.error().rfind("FAD_CACHE_SIZE: ", 0) == 0);
}
