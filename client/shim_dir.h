// The directory `fad run` puts first on PATH, holding one `nvcc` that is fad.
// Each run makes its own and removes it at the end; a run that was killed
// (SIGKILL, a crash) cannot, so the next run of the same user removes the ones
// whose run is gone (common/stale_temps.h).
#pragma once

#include <string>

namespace fad::client {

/// Makes `<root>/fad-run-<pid>-<pid namespace>-XXXXXX` (mode 0700) holding
/// `nvcc` -> `fad`; "" when it cannot be made. Removes this user's stale
/// temporary entries under root first.
std::string make_shim_dir(const std::string& root, const std::string& fad);

}  // namespace fad::client
