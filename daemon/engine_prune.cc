// Retention: finished builds' outputs and logs (STATE/builds/ID/) are deleted
// once they are older than an age, by `fad prune` or by fadd itself once a
// day. The database rows stay, marked pruned, so `fad history` still lists the
// builds; the estimator's unit_history is never touched, so what fad learned
// about each unit survives every prune.
#include <ctime>
#include <filesystem>

#include <spdlog/spdlog.h>

#include "common/duration.h"
#include "common/size.h"
#include "daemon/engine.h"
#include "daemon/responses.h"

namespace fad {

namespace fs = std::filesystem;

namespace {

// The RFC 3339 time `seconds` before `wall` (same format, so that stored
// times compare as strings); nullopt when `wall` does not parse. An age older
// than 1970 (--older-than 999999999w) is 1970: no build is that old.
std::optional<std::string> rfc3339_before(const std::string& wall, std::int64_t seconds) {
  std::tm tm{};
  const char* end = strptime(wall.c_str(), "%Y-%m-%dT%H:%M:%SZ", &tm);
  if (!end || *end != '\0') return std::nullopt;
  const std::time_t now = timegm(&tm);
  const std::time_t t = seconds >= now ? 0 : now - static_cast<std::time_t>(seconds);
  std::tm out{};
  if (!gmtime_r(&t, &out)) return std::nullopt;
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &out);
  return std::string(buf);
}

// Bytes of the regular files under `dir` (symlinks not followed); 0 when absent.
std::uint64_t tree_bytes(const fs::path& dir) {
  std::uint64_t total = 0;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code fec;
    if (it->is_regular_file(fec) && !it->is_symlink(fec)) total += it->file_size(fec);
  }
  return total;
}

}  // namespace

Response Engine::prune(const Caller& caller, const PruneRequest& req) {
  const std::optional<std::int64_t> age = req.older_than_s ? req.older_than_s : options_.retention_s;
  if (!age)
    return error_response(
        ErrorCode::usage,
        "no age to prune by: the 'retention' config key is \"never\"; pass --older-than AGE (e.g. 30d)");
  const std::string now = clock_.wall();
  auto cutoff = rfc3339_before(now, *age);
  if (!cutoff) return error_response(ErrorCode::internal, "cannot compute the prune cutoff from the time " + now);
  json builds = json::array();
  std::uint64_t freed = 0;
  std::string failures;
  for (const auto& b : store_.prunable_builds(*cutoff)) {
    // Each user prunes their own builds; root (and the retention) every build.
    if (!caller.is_root() && owner_of(b) != caller.uid) continue;
    // A cancelled build may still be stopping its compilers; they write to
    // its logs until they exit. Its turn comes on the next prune.
    bool stopping = false;
    for (const auto& [uid, r] : running_) stopping |= r.unit.build_id == b.id;
    if (stopping) continue;
    const fs::path dir = build_dir(b.id);
    const std::uint64_t bytes = tree_bytes(dir);
    if (!req.dry_run) {
      std::error_code ec;
      fs::remove_all(dir, ec);
      if (ec) {
        failures += (failures.empty() ? "" : "; ") + dir.string() + ": " + ec.message();
        continue;
      }
      store_.mark_pruned(b.id, now);
    }
    freed += bytes;
    builds.push_back({{"id", b.id}, {"name", b.name}, {"finished_at", b.finished_at.value_or("")}, {"bytes", bytes}});
  }
  if (!req.dry_run && !builds.empty())
    spdlog::info("pruned {} finished build(s) older than {} (finished before {}), freed {}", builds.size(),
                 format_age(*age), *cutoff, format_size(freed));
  if (!failures.empty()) {
    spdlog::warn("prune: cannot delete {}", failures);
    return error_response(ErrorCode::failed, "cannot delete " + failures);
  }
  return ok_response({{"dry_run", req.dry_run}, {"older_than_s", *age}, {"bytes", freed}, {"builds", builds}});
}

void Engine::apply_retention(double now) {
  if (!options_.retention_s || shutting_down_) return;
  if (last_retention_ && now - *last_retention_ < options_.retention_every_s) return;
  last_retention_ = now;
  PruneRequest req;
  req.older_than_s = options_.retention_s;
  auto r = prune(Caller{}, req);  // root's view: the retention covers every user's builds
  if (!r.ok) spdlog::warn("retention: {}", r.message);
}

}  // namespace fad
