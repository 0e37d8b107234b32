// Renders builds and units as the contract's status JSON. Pure.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "daemon/model.h"
#include "policy/scheduler.h"

namespace fad {

/// What the scheduler expects of a queued or running unit now.
struct UnitOutlook {
  double predicted_duration_s = 0;
  std::string estimate_source;  ///< estimate_source_id; for queued units, of their current estimate
};

/// The contract's build object. With `with_units`, it also carries "unit_list";
/// `outlook` (by unit id) adds each queued and running unit's prediction.
nlohmann::json build_json(const BuildRecord& build, const std::vector<UnitRecord>& units, bool with_units,
                          const std::map<std::int64_t, UnitOutlook>& outlook = {});

/// The contract's "memory" object of the daemon view.
nlohmann::json memory_json(const MemorySnapshot& snap, std::uint64_t budget, std::uint64_t committed);

}  // namespace fad
