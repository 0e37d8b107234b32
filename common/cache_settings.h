// Where the compile cache lives and how big it may grow, resolved the same way
// by fad and fadd: environment variable, config key, default.
//   directory: $FAD_CACHE_DIR, `cache_dir`, $XDG_CACHE_HOME/fad, else ~/.cache/fad
//   size:      $FAD_CACHE_SIZE, `cache_size`, 10 GiB; 0 turns the cache off
#pragma once

#include "common/compile_cache.h"
#include "common/config.h"
#include "common/paths.h"
#include "common/result.h"

namespace fad {

/// `$XDG_CACHE_HOME/fad`, else `$HOME/.cache/fad`.
std::string default_cache_dir(const EnvLookup& env);

/// The settings for `config` under `env`. Fails when $FAD_CACHE_SIZE is not a size.
Result<CacheSettings> resolve_cache_settings(const Config& config, const EnvLookup& env);

}  // namespace fad
