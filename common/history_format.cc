// The history file and its messages; see history_format.h.
#include "common/history_format.h"

#include "common/time_text.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "common/arch.h"
#include "common/json_fields.h"
#include "common/text.h"

namespace fad {
namespace {

constexpr std::size_t kMaxText = 4096;
constexpr double kMaxDuration = 30 * 24 * 3600.0;  // a month: no compile runs longer
// A profile's peak outside these steers every estimate that uses it: a 0-byte
// compile would look free (and fill the machine), a petabyte one would run
// alone. No running program holds less than 64 KiB (a small wrapper fadd
// measured itself may hold under 1 MiB, and export writes what was measured),
// and the heaviest nvcc units known peak under 20 GiB.
constexpr std::uint64_t kMinPeak = 64ull << 10;  // 64 KiB
constexpr std::uint64_t kMaxBytes = 1ull << 40;  // 1 TiB

Result<std::string> text_field(const json& j, const char* name) {
  auto it = j.find(name);
  if (it == j.end() || !it->is_string()) return field_error(name, "a string");
  const auto& s = it->get_ref<const std::string&>();
  if (s.size() > kMaxText) return field_error(name, "a string of at most 4096 bytes");
  // These are shown in listings and estimate sources: no terminal controls,
  // no bidirectional overrides (what printable() would replace).
  if (printable(s) != s) return field_error(name, "printable text (no control characters)");
  return s;
}

Result<double> number_field(const json& j, const char* name, double lo, double hi, const char* what) {
  auto it = j.find(name);
  if (it == j.end() || !it->is_number()) return field_error(name, what);
  const double v = it->get<double>();
  if (!std::isfinite(v) || v < lo || v > hi) return field_error(name, what);
  return v;
}

}  // namespace

json history_profile_to_json(const HistoryProfile& p) {
  json points = json::array();
  for (const auto& [t, v] : p.points) points.push_back(json::array({t, v}));
  return {{"source", p.source},
          {"content_hash", p.content_hash},
          {"flags", p.flags},
          {"archs", p.archs},
          {"compiler", p.compiler},
          {"family", p.family},
          {"arch_count", p.arch_count},
          {"threads", p.threads},
          {"duration_s", p.duration_s},
          {"points", std::move(points)},
          {"recorded_at", p.recorded_at},
          {"origin", p.origin}};
}

Result<HistoryProfile> history_profile_from_json(const json& j) {
  if (Status s = require_object(j); !s) return Error{s.error()};
  HistoryProfile p;
  for (auto [name, target] :
       {std::pair{"source", &p.source}, std::pair{"content_hash", &p.content_hash}, std::pair{"flags", &p.flags},
        std::pair{"archs", &p.archs}, std::pair{"compiler", &p.compiler}, std::pair{"family", &p.family},
        std::pair{"recorded_at", &p.recorded_at}}) {
    auto v = text_field(j, name);
    if (!v) return Error{v.error()};
    *target = std::move(*v);
  }
  if (p.source.empty() && p.family.empty() && p.content_hash.empty())
    return make_error("a profile must name its source, content_hash or family");
  // A key's archs are nvcc's, as fad writes them ("8.0,9.0"): any other text
  // would sit in the history matching no compile.
  if (!p.archs.empty()) {
    auto archs = parse_arch_list({p.archs});
    if (!archs) return field_error("archs", "GPU architectures such as \"8.0,9.0\"");
    // Kept as fadd writes them ("9.0,12.0"), whatever the spelling ("sm_90,
    // 120 "): a key matches by its text.
    p.archs.clear();
    for (const Arch& a : *archs) p.archs += (p.archs.empty() ? "" : ",") + a.display();
  }
  // Shown in `fad history` and written out again by every export.
  if (!p.recorded_at.empty() && !parse_rfc3339(p.recorded_at))
    return field_error("recorded_at", "an RFC 3339 UTC time such as \"2026-01-01T00:00:00Z\"");
  auto origin = text_field(j, "origin");
  if (!origin || (*origin != "local" && *origin != "imported"))
    return field_error("origin", "\"local\" or \"imported\"");
  p.origin = *origin;
  auto arch = j.contains("arch_count") ? integer_in(j["arch_count"], 1, 64) : std::nullopt;
  if (!arch) return field_error("arch_count", "an integer from 1 to 64");
  p.arch_count = static_cast<int>(*arch);
  auto threads = j.contains("threads") ? integer_in(j["threads"], 1, 1024) : std::nullopt;
  if (!threads) return field_error("threads", "an integer from 1 to 1024");
  p.threads = static_cast<int>(*threads);
  auto duration = number_field(j, "duration_s", 1e-3, kMaxDuration, "a number of seconds above 0, at most 30 days");
  if (!duration) return Error{duration.error()};
  p.duration_s = *duration;
  auto it = j.find("points");
  if (it == j.end() || !it->is_array() || it->empty() || it->size() > kMaxHistoryPoints)
    return field_error("points", "an array of 1 to 10000 [seconds, bytes] pairs");
  for (std::size_t i = 0; i < it->size(); ++i) {
    const json& pt = (*it)[i];
    const std::string where = "points[" + std::to_string(i) + "]";
    if (!pt.is_array() || pt.size() != 2 || !pt[0].is_number()) return field_error(where, "a [seconds, bytes] pair");
    const double t = pt[0].get<double>();
    auto bytes = integer_in(pt[1], 0, static_cast<std::int64_t>(kMaxBytes));
    if (!std::isfinite(t) || t < 0 || t > p.duration_s || !bytes)
      return field_error(where, "a [seconds, bytes] pair within the duration, bytes at most 1 TiB");
    if (!p.points.empty() && t < p.points.back().first) return field_error(where, "later than the point before it");
    p.points.emplace_back(t, static_cast<std::uint64_t>(*bytes));
  }
  std::uint64_t peak = 0;
  for (const auto& pt : p.points) peak = std::max(peak, pt.second);
  if (peak < kMinPeak)
    return field_error("points", "a memory profile whose peak is at least 64 KiB (no running program holds less)");
  return p;
}

Result<std::vector<HistoryProfile>> history_profiles_from_json(const json& list) {
  if (!list.is_array()) return field_error("profiles", "an array");
  std::vector<HistoryProfile> out;
  out.reserve(list.size());
  for (std::size_t i = 0; i < list.size(); ++i) {
    auto p = history_profile_from_json(list[i]);
    if (!p) return make_error("profiles[" + std::to_string(i) + "]: " + p.error());
    out.push_back(std::move(*p));
  }
  return out;
}

json history_document(json profiles, const std::string& exported_at) {
  return {{"format", kHistoryFormatName},
          {"version", kHistoryFormatVersion},
          {"fad_version", FAD_VERSION},
          {"exported_at", exported_at},
          {"profiles", std::move(profiles)}};
}

Result<std::vector<HistoryProfile>> parse_history_document(const json& doc) {
  if (!doc.is_object() || doc.value("format", json()) != kHistoryFormatName)
    return make_error("not a fad history file (its \"format\" is not \"fad-history\")");
  auto version =
      doc.contains("version") ? integer_in(doc["version"], 1, std::numeric_limits<int>::max()) : std::nullopt;
  if (!version) return field_error("version", "a positive integer");
  if (*version > kHistoryFormatVersion)
    return make_error("history file version " + std::to_string(*version) + " is newer than this fad reads (" +
                      std::to_string(kHistoryFormatVersion) + "); upgrade fad");
  auto it = doc.find("profiles");
  if (it == doc.end()) return field_error("profiles", "an array");
  return history_profiles_from_json(*it);
}

Result<HistoryExportRequest> HistoryExportRequest::from_json(const json& body) {
  if (Status s = require_object(body); !s) return Error{s.error()};
  HistoryExportRequest r;
  if (body.contains("after")) {
    auto after = integer_in(body["after"], 0, std::numeric_limits<std::int64_t>::max());
    if (!after) return field_error("after", "a record id (integer >= 0)");
    r.after = *after;
  }
  if (body.contains("limit")) {
    auto limit = integer_in(body["limit"], 1, 1000);
    if (!limit) return field_error("limit", "an integer from 1 to 1000");
    r.limit = static_cast<int>(*limit);
  }
  return r;
}

json HistoryExportRequest::to_json() const { return {{"after", after}, {"limit", limit}}; }

Result<HistoryImportRequest> HistoryImportRequest::from_json(const json& body) {
  if (Status s = require_object(body); !s) return Error{s.error()};
  auto it = body.find("profiles");
  if (it == body.end()) return field_error("profiles", "an array");
  auto profiles = history_profiles_from_json(*it);
  if (!profiles) return Error{profiles.error()};
  return HistoryImportRequest{std::move(*profiles)};
}

json HistoryImportRequest::to_json() const {
  json list = json::array();
  for (const auto& p : profiles) list.push_back(history_profile_to_json(p));
  return {{"profiles", std::move(list)}};
}

}  // namespace fad
