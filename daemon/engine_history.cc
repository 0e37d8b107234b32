// Learnt profiles that travel: `fad history export` reads the daemon's history
// in pages, `fad history import` adds profiles measured elsewhere. Imported
// profiles teach the estimator like local ones (a machine's own observations
// of a key take precedence) and are marked so in `fad status ID`.
#include <spdlog/spdlog.h>

#include "common/time_text.h"
#include "daemon/credentials.h"
#include "daemon/engine.h"
#include "daemon/responses.h"

namespace fad {

namespace {
/// A page stops growing past this many bytes of JSON: answers stay well under
/// the protocol's 1 MiB line.
constexpr std::size_t kPageBytes = 512 * 1024;

UnitKey key_of(const HistoryProfile& p) {
  return UnitKey{p.source, p.content_hash, p.flags, p.archs, p.compiler, p.family, p.arch_count};
}

/// Whether RFC 3339 time `at` is later than `now`: recorded on a machine whose
/// clock ran ahead. Kept, it would be shown as a date to come; it is recorded
/// as the time it arrived instead.
bool recorded_later(const std::string& at, const std::string& now) {
  const auto a = parse_rfc3339(at), n = parse_rfc3339(now);
  return a && n && *a > *n;
}
}  // namespace

Response Engine::history_export(const Caller&, const HistoryExportRequest& req) {
  json profiles = json::array();
  std::size_t bytes = 0;
  std::int64_t last = req.after;
  bool more = false;
  int left_out = 0;             // told to the user: a silently shorter file looks like lost history
  std::string left_out_reason;  // the first one's, so that the user can find it
  try {
    const auto page = store_.history_page(req.after, req.limit);
    for (const auto& h : page) {
      if (bytes >= kPageBytes) {
        more = true;
        break;
      }
      last = h.id;
      auto profile = Profile::parse(h.profile);
      if (!profile || profile->points.empty() || profile->duration_s <= 0) continue;  // nothing to carry
      HistoryProfile p;
      p.source = h.source;
      p.content_hash = h.content_hash;
      p.flags = h.flags;
      p.archs = h.archs;
      p.compiler = h.compiler;
      p.family = h.family;
      p.arch_count = h.arch_count;
      p.threads = h.threads;
      p.duration_s = profile->duration_s;
      p.points = profile->points;
      p.recorded_at = h.recorded_at;
      p.origin = h.origin;
      // Rows written before flags were cut on a character may hold half of
      // one: replaced, so that one row cannot fail every export.
      const std::string text = history_profile_to_json(p).dump(-1, ' ', false, json::error_handler_t::replace);
      json j = json::parse(text);
      // Only what an import takes back, as it will read it: a compiler
      // version or flags with a control character (a client's choice,
      // recorded as it came) would make the whole file fail to import.
      if (auto taken = history_profile_from_json(j); !taken) {
        if (left_out++ == 0) left_out_reason = (h.source.empty() ? h.family : h.source) + ": " + taken.error();
        continue;
      }
      bytes += text.size();
      profiles.push_back(std::move(j));
    }
    more = more || static_cast<int>(page.size()) == req.limit;
  } catch (const StoreError& e) {
    return error_response(ErrorCode::internal, std::string("cannot read the history: ") + e.what());
  }
  json result{
      {"profiles", std::move(profiles)}, {"left_out", left_out}, {"next_after", more ? json(last) : json(nullptr)}};
  if (left_out) result["left_out_reason"] = left_out_reason;
  return ok_response(std::move(result));
}

Response Engine::history_import(const Caller& caller, const HistoryImportRequest& req) {
  // Imported profiles steer every user's estimates: a shared fadd takes them
  // from its administrators only.
  if (!caller.is_root() && caller.uid != options_.daemon_uid)
    return error_response(ErrorCode::failed, options_.daemon_uid == 0
                                                 ? std::string("only root may import history into this fadd")
                                                 : "only root or " + user_name(options_.daemon_uid) +
                                                       " (who runs this fadd) may import history into it");
  int imported = 0, skipped = 0;
  const std::string now = clock_.wall();
  try {
    for (const auto& p : req.profiles) {
      Profile profile;
      profile.points = p.points;
      profile.duration_s = p.duration_s;
      HistoryRecord h;
      const UnitKey key = key_of(p);
      h.key = key.exact();
      h.source = p.source;
      h.content_hash = p.content_hash;
      h.flags = p.flags;
      h.archs = p.archs;
      h.compiler = p.compiler;
      h.family = p.family;
      h.arch_count = p.arch_count;
      h.threads = p.threads;
      h.profile = profile.serialize();
      h.recorded_at = p.recorded_at.empty() || recorded_later(p.recorded_at, now) ? now : p.recorded_at;
      if (!store_.import_history(h)) {
        ++skipped;  // already known: importing a file twice teaches nothing twice
        continue;
      }
      estimator_.learn(Observation{key, p.threads, std::move(profile), true});
      ++imported;
    }
  } catch (const StoreError& e) {
    return error_response(ErrorCode::internal, "cannot record imported history (" + std::to_string(imported) +
                                                   " profiles recorded before the error): " + e.what());
  }
  spdlog::info("imported {} unit profile(s), {} already known", imported, skipped);
  // Held to the same bound as what fadd measures, now rather than at the
  // next daily trim: a file of millions of profiles would otherwise grow
  // the estimator (and every start's read) until then.
  if (imported > 0) best_effort([&] { trim_history(); });
  if (wake_ && imported > 0) wake_();
  return ok_response({{"imported", imported}, {"skipped", skipped}});
}

}  // namespace fad
