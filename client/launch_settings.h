// What the launcher needs besides fadd's socket: the compile cache's settings
// and, for compiling safely without fadd, the per-thread memory prior and the
// reserve: the same config keys fadd reads.
#pragma once

#include <cstdint>

#include "common/compile_cache.h"
#include "common/config.h"
#include "common/paths.h"

namespace fad::client {

struct LaunchSettings {
  CacheSettings cache;  ///< max_bytes 0: no cache
  std::uint64_t unit_memory_prior = 5ull << 30;
  Reserve reserve;
};

/// From the config file ($FAD_CONFIG, else the default one when present) and
/// the environment. A config that cannot be read gives the defaults: the
/// socket lookup has already said what is wrong with it, and a compile must
/// not fail for it.
LaunchSettings load_launch_settings(const EnvLookup& env);

}  // namespace fad::client
