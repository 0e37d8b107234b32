// The data of `fad report` as JSON: the build, each unit's attempts with
// their memory samples and events, and the machine's memory over the build's
// life. Pure: the engine gathers the records, this shapes and bounds them.
// The client draws the pictures; the daemon only returns data.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

#include "daemon/status_view.h"
#include "daemon/store.h"

namespace fad {

/// Events in one report, shared among its units (each keeps its latest two
/// at least, so a report of more than 2,000 units with events holds more).
inline constexpr std::size_t kReportEvents = 4000;

struct ReportInput {
  BuildRecord build;
  std::optional<std::string> build_started_at;
  std::vector<UnitRecord> units;
  LiveUnits live;                     ///< running units (the counts are over every unit)
  QueuedLive queued;                  ///< a queued unit's estimate, asked only for the rows sent; may be empty
  std::vector<UnitAttempt> attempts;  ///< finished ones, then running ones (outcome "running")
  std::vector<UnitEvent> events;
  std::vector<MemorySample> machine;          ///< over the build's life
  std::optional<std::uint64_t> budget_bytes;  ///< memory_budget when set (not "auto")
  double now = 0;                             ///< epoch seconds
};

/// The report document. At most `max_points` memory points over all attempts
/// (each attempt thinned keeping its peaks, at least 2 points each), at most
/// `max_samples` machine samples, and the units (in order) whose rows fit
/// `max_unit_bytes`, the rest counted in "units_left_out", and kReportEvents
/// events shared among them (each unit's latest, two where there is room;
/// its oldest counted in "events_left_out"); so the answer
/// stays within one protocol line.
nlohmann::json report_json(const ReportInput& in, std::size_t max_points, std::size_t max_samples,
                           std::size_t max_unit_bytes = std::numeric_limits<std::size_t>::max());

}  // namespace fad
