// `fad cache stats|clear [--json] [--cache-dir DIR]`: the compile cache's
// directory, size, hits and misses, and emptying it. It works on the
// directory itself (the same one the launcher and fadd use), with or without
// fadd running.
#pragma once

#include "client/cli.h"
#include "client/commands.h"
#include "client/locations.h"

namespace fad::client {

/// Runs `fad cache stats` or `fad cache clear`; 0, or 1 when the directory
/// cannot be used, 2 for a bad config or FAD_CACHE_SIZE.
int run_cache(const Command& cmd, const Locations& locations, Context& ctx);

}  // namespace fad::client
