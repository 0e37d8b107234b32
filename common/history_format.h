// The portable form of fad's learnt unit profiles (`fad history export` /
// `fad history import`), so a team or a CI job seeds a fresh machine, and the
// two protocol messages that carry it in pages. Pure: JSON in, typed values
// out, every field of every entry validated with its index in the message,
// since an imported file is input from outside like any request.
//
// File (version 1):
//   {"format": "fad-history", "version": 1, "fad_version": "0.1.0",
//    "exported_at": "RFC 3339", "profiles": [PROFILE, ...]}
//   PROFILE = {"source", "content_hash", "flags", "archs", "compiler", "family":
//              strings, "arch_count": 1..64, "threads": 1..1024,
//              "duration_s": seconds > 0, "points": [[seconds, bytes], ...]
//              (time-sorted, 1..10000 points), "recorded_at": RFC 3339 or "",
//              "origin": "local" | "imported"}
//
//   history_export {after, limit}  -> {profiles: [PROFILE...], next_after: id|null}
//   history_import {profiles: [PROFILE...]}  -> {imported: N, skipped: M}
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/protocol.h"

namespace fad {

inline constexpr int kHistoryFormatVersion = 1;
inline constexpr const char* kHistoryFormatName = "fad-history";
/// Most points one imported profile may hold (fadd stores at most 200 per unit).
inline constexpr std::size_t kMaxHistoryPoints = 10000;

/// One learnt profile and the key it belongs to.
struct HistoryProfile {
  std::string source, content_hash, flags, archs, compiler, family;
  int arch_count = 1;
  int threads = 1;
  double duration_s = 0;
  std::vector<std::pair<double, std::uint64_t>> points;  ///< (seconds since start, bytes)
  std::string recorded_at;
  std::string origin = "local";
};

json history_profile_to_json(const HistoryProfile& p);
/// Validates one profile; the error names the field.
Result<HistoryProfile> history_profile_from_json(const json& j);
/// Validates a list of profiles; the error says which entry ("profiles[3]: ...").
Result<std::vector<HistoryProfile>> history_profiles_from_json(const json& list);

/// A whole exported file around `profiles` (already in JSON form).
json history_document(json profiles, const std::string& exported_at);
/// Checks a file's format and version and returns its profiles.
Result<std::vector<HistoryProfile>> parse_history_document(const json& doc);

/// "history_export": a page of the daemon's history, after record id `after`.
struct HistoryExportRequest {
  std::int64_t after = 0;
  int limit = 200;  ///< 1..1000
  static Result<HistoryExportRequest> from_json(const json& body);
  json to_json() const;
};

/// "history_import": profiles to add to the daemon's history.
struct HistoryImportRequest {
  std::vector<HistoryProfile> profiles;
  static Result<HistoryImportRequest> from_json(const json& body);
  json to_json() const;
};

}  // namespace fad
