// Bundled units and the compile cache: at submit, a compile unit whose outputs
// the cache holds is restored and finished as cached, never scheduled; a unit
// that compiled successfully has its outputs stored. The keys, the directory
// and the restore are common/cached_compile.h's, shared with the launcher.
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include <spdlog/spdlog.h>

#include "common/cached_compile.h"
#include "common/text.h"
#include "daemon/engine.h"
#include "daemon/memory_probe.h"

namespace fad {

namespace fs = std::filesystem;

namespace {
std::string working_dir() {
  std::error_code ec;
  return fs::current_path(ec).string();
}

}  // namespace

std::string probed_identity(const Toolchain& tc) {
  // The probe already ran (asynchronously, as the build's user): its version
  // line plus the binary's and nvcc.profile's size and mtime, taken off the
  // event loop (toolchain.h), identify the compiler without running it again.
  return "fadd-probed " + tc.version + "\n" + tc.file_identity;
}

void Engine::restore_cached_units(std::int64_t build_id) {
  const auto identity = cache_identity_.find(build_id);
  if (!cache_ || identity == cache_identity_.end()) return;
  const std::string cwd = working_dir();
  int hits = 0;
  for (const auto& u : store_.units(build_id)) {
    if (u.kind != UnitKind::compile || u.state != UnitState::queued || u.argv.empty()) continue;
    std::error_code ec;
    fs::create_directories(fs::path(u.output_path).parent_path(), ec);
    fs::create_directories(fs::path(u.log_path).parent_path(), ec);
    CachedCompile call(*cache_, u.argv, cwd, process_env(), u.argv.front(), u.output_path + ".d", identity->second);
    auto hit = call.restore();
    if (!hit) continue;
    store_.mark_unit_cached(u.id, clock_.wall());
    std::ofstream(u.log_path, std::ios::app) << "$ " << join(u.argv, " ") << "\n(restored from the compile cache)\n"
                                             << hit->stdout_text << hit->stderr_text;
    ++hits;
  }
  if (hits == 0) return;
  spdlog::info("build {}: {} unit(s) restored from the compile cache", build_id, hits);
  append_build_log(build_id, std::to_string(hits) + " unit(s) restored from the compile cache\n");
  update_build(build_id);
}

std::vector<std::string> Engine::cache_args(const UnitRecord& unit) const {
  if (!cache_ || unit.kind != UnitKind::compile || !cache_identity_.count(unit.build_id)) return {};
  return {"--generate-dependencies-with-compile", "--dependency-output", unit.output_path + ".d"};
}

void Engine::store_cached(const UnitRecord& unit, double started_at) {
  // Builds from before a restart have no probed identity: not stored.
  const auto identity = cache_identity_.find(unit.build_id);
  if (!cache_ || unit.kind != UnitKind::compile || unit.argv.empty() || identity == cache_identity_.end()) return;
  CachedCompile call(*cache_, unit.argv, working_dir(), process_env(), unit.argv.front(), unit.output_path + ".d",
                     identity->second);
  const auto ran_for = std::chrono::duration_cast<std::chrono::system_clock::duration>(
      std::chrono::duration<double>(clock_.now() - started_at));
  // The unit's log holds what the compiler printed, after fad's command line.
  std::string printed = read_small_file(unit.log_path);
  if (auto first_line = printed.find('\n'); printed.rfind("$ ", 0) == 0 && first_line != std::string::npos)
    printed.erase(0, first_line + 1);
  if (auto stored = call.store(std::chrono::system_clock::now() - ran_for, "", printed); !stored)
    spdlog::warn("not stored in the compile cache: {}: {}", unit.name, stored.error());
  else if (!call.cacheable())
    spdlog::debug("{} is not cacheable: {}", unit.name, call.reason());
}

}  // namespace fad
