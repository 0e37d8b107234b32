// fad cache; see cache_command.h.
#include "client/cache_command.h"

#include <filesystem>
#include <ostream>

#include "client/commands.h"
#include "client/exit_codes.h"
#include "common/cache_settings.h"
#include "common/size.h"

namespace fad::client {

namespace {

json stats_json(const CacheStats& s, bool enabled) {
  return {{"dir", s.dir},         {"enabled", enabled},           {"exists", true},
          {"shared", s.shared},   {"max_bytes", s.max_bytes},     {"size_bytes", s.size_bytes},
          {"results", s.results}, {"manifests", s.manifests},     {"hits", s.hits},
          {"misses", s.misses},   {"uncacheable", s.uncacheable}, {"stored", s.stored},
          {"evicted", s.evicted}, {"corrupt", s.corrupt}};
}

std::string stats_text(const CacheStats& s, bool enabled) {
  std::string out = "compile cache " + s.dir + (s.shared ? " (shared: group-writable)" : "") +
                    (enabled ? "" : " (off: its size, FAD_CACHE_SIZE or cache_size, is 0)") + "\n";
  // Off, its bound is 0: "of 0 B" beside what it still holds would read as a fault.
  out += "size: " + format_size(s.size_bytes) + (enabled ? " of " + format_size(s.max_bytes) : std::string()) + ", " +
         std::to_string(s.results) + " result(s), " + std::to_string(s.manifests) + " manifest(s)\n";
  const auto lookups = s.hits + s.misses;
  out += "hits: " + std::to_string(s.hits) + ", misses: " + std::to_string(s.misses) +
         (lookups ? " (hit rate " + std::to_string(s.hits * 100 / lookups) + "%)" : "") +
         ", uncacheable calls: " + std::to_string(s.uncacheable) + "\n";
  out += "stored: " + std::to_string(s.stored) + ", evicted: " + std::to_string(s.evicted) +
         ", corrupted files removed: " + std::to_string(s.corrupt) + "\n";
  return out;
}

}  // namespace

int run_cache(const Command& cmd, const Locations& locations, Context& ctx) {
  Config config;
  if (locations.config) {
    auto loaded = load_config(*locations.config);
    if (!loaded) {
      ctx.err << "fad: " << loaded.error() << "\n";
      return kExitUsage;
    }
    config = *loaded;
  }
  auto settings = resolve_cache_settings(config, process_env());
  if (!settings) {
    ctx.err << "fad: " << settings.error() << "\n";
    return kExitUsage;
  }
  if (cmd.cache_dir) settings->dir = *cmd.cache_dir;
  const bool enabled = settings->max_bytes > 0;
  // Looking must not create: opening a cache makes its directory, and a
  // mistyped --cache-dir would be reported as an empty cache (and made, as
  // root, anywhere).
  std::error_code ec;
  if (!std::filesystem::is_directory(settings->dir, ec)) {
    if (cmd.cache_dir) {
      ctx.err << "fad: --cache-dir " << settings->dir << ": no such directory\n";
      return kExitUsage;
    }
    const bool clear = cmd.kind == CommandKind::cache_clear;
    if (cmd.json)
      ctx.out << with_schema(clear ? json{{"dir", settings->dir}, {"cleared", false}, {"results_removed", 0}}
                                   : json{{"dir", settings->dir}, {"enabled", enabled}, {"exists", false}})
                     .dump(2)
              << "\n";
    else
      ctx.out << (clear ? "nothing to clear: " : "") << "no compile cache at " << settings->dir
              << " yet: the first compile fad caches makes it\n";
    return kExitOk;
  }
  auto cache = CompileCache::open(*settings);
  if (!cache) {
    ctx.err << "fad: " << cache.error() << "\n";
    return kExitFailed;
  }
  if (cmd.kind == CommandKind::cache_clear) {
    auto before = (*cache)->stats();
    if (auto cleared = (*cache)->clear(); !cleared) {
      ctx.err << "fad: " << cleared.error() << "\n";
      return kExitFailed;
    }
    const auto removed = before ? before->results : 0;
    if (cmd.json)
      ctx.out << with_schema(json{{"dir", settings->dir}, {"cleared", true}, {"results_removed", removed}}).dump(2)
              << "\n";
    else
      ctx.out << "cleared the compile cache " << settings->dir << " (" << removed << " result(s) removed)\n";
    return kExitOk;
  }
  auto stats = (*cache)->stats();
  if (!stats) {
    ctx.err << "fad: " << stats.error() << "\n";
    return kExitFailed;
  }
  ctx.out << (cmd.json ? with_schema(stats_json(*stats, enabled)).dump(2) + "\n" : stats_text(*stats, enabled));
  return kExitOk;
}

}  // namespace fad::client
