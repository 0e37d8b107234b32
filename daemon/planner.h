// Turns a submit into compile units: one nvcc -c per manifest unit matching the
// glob, then one link unit producing the shared library. Reads the source files
// to key each unit by content (so an edited kernel is never estimated from the
// old one's history), otherwise pure.
#pragma once

#include <string>
#include <vector>

#include "common/arch.h"
#include "common/content_hash.h"
#include "common/hash.h"
#include "common/result.h"
#include "daemon/manifest.h"
#include "daemon/model.h"
#include "daemon/toolchain.h"

namespace fad {

struct PlanRequest {
  std::vector<Arch> archs;
  std::string glob = "*";
  Toolchain toolchain;
  std::string kernels_dir;  ///< absolute
  std::string state_dir;    ///< absolute
};

/// The units of a build, in order, the link unit last. Paths contain "{build}",
/// which Store::create_build replaces with the new build id. Fails when the glob
/// matches no unit (naming a few unit names) or a source cannot be read.
Result<std::vector<UnitRecord>> plan_build(const Manifest& manifest, const PlanRequest& request);

/// What the estimator knows a unit by: source, content, flags, archs, compiler, family.
UnitKey unit_key(const UnitRecord& unit);

/// The link unit's final artifact path for a build directory.
std::string artifact_path(const std::string& build_dir, const Manifest& manifest);

}  // namespace fad
