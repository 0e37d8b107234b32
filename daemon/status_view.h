// Renders builds and units as the contract's status JSON. Pure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "daemon/model.h"
#include "policy/scheduler.h"

namespace fad {

/// What the engine knows of a unit beyond its record: live measurements of a
/// running unit, the estimate of a queued one.
struct LiveUnit {
  bool running = false;                         ///< in the engine's running set
  std::optional<std::string> state;             ///< "paused", "suspended" or "pending" shown instead of "running"
  std::uint64_t current_bytes = 0;              ///< running: measured now
  std::uint64_t peak_bytes = 0;                 ///< running: peak so far
  double elapsed_s = 0;                         ///< running: since this attempt started
  std::optional<std::uint64_t> estimate_bytes;  ///< queued: predicted peak
  std::optional<std::string> estimate_source;   ///< queued: estimate_source_id of its estimate now
  std::optional<std::string> wait_reason;       ///< queued: replaces the stored reason (a paused build)
  std::optional<double> predicted_duration_s;   ///< queued and running: what the scheduler expects
};
using LiveUnits = std::map<std::int64_t, LiveUnit>;  ///< by unit id

/// One element of a build's "unit_list"; `live` may be null. `pruned`: its
/// build's logs were deleted (its "log" is null, not a path to nothing).
nlohmann::json unit_json(const UnitRecord& unit, const LiveUnit* live, bool pruned = false);

/// The contract's build object, without its "unit_list". `live` adds running
/// units' memory to the counts.
nlohmann::json build_json(const BuildRecord& build, const std::vector<UnitRecord>& units, const LiveUnits& live = {});
/// The same from the units' summary (Store::unit_summary, or summarize_units).
nlohmann::json build_json(const BuildRecord& build, const UnitSummary& summary);
/// `units` counted as Store::unit_summary counts them, with `live`'s memory.
UnitSummary summarize_units(const std::vector<UnitRecord>& units, const LiveUnits& live = {});

/// A queued unit's live view (its estimate), made only for the rows sent.
using QueuedLive = std::function<std::optional<LiveUnit>(const UnitRecord&)>;

struct UnitRows {
  nlohmann::json rows = nlohmann::json::array();  ///< unit_json of units[0 .. rows.size())
  std::size_t left_out = 0;                       ///< the units after them
};

/// The rows of `units`, in order, while their JSON fits `max_bytes`; the rest
/// are counted, never built, so a build of thousands of compiles costs no more
/// than the part that is sent. A unit's live view is its entry in `live`, else
/// `queued(u)` for a queued unit when `queued` is set; `pruned` as for unit_json.
UnitRows bounded_unit_rows(const std::vector<UnitRecord>& units, const LiveUnits& live, const QueuedLive& queued,
                           std::size_t max_bytes, bool pruned = false);

/// The contract's "memory" object of the daemon view.
nlohmann::json memory_json(const MemorySnapshot& snap, std::uint64_t budget, std::uint64_t committed,
                           std::uint64_t used = 0);

}  // namespace fad
