// Renders builds and units as the contract's status JSON. Pure.
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

#include "daemon/model.h"
#include "policy/scheduler.h"

namespace fad {

/// The contract's build object. With `with_units`, it also carries "unit_list".
nlohmann::json build_json(const BuildRecord& build, const std::vector<UnitRecord>& units, bool with_units);

/// The contract's "memory" object of the daemon view.
nlohmann::json memory_json(const MemorySnapshot& snap, std::uint64_t budget, std::uint64_t committed);

}  // namespace fad
