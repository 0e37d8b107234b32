// The directory `fad run` puts first on PATH, holding one `nvcc` that is fad.
// Each run makes its own and removes it at the end; a run that was killed
// (SIGKILL, a crash) cannot, so the next run of the same user removes the ones
// whose run is gone. The creator's pid and pid namespace are in the name for
// that.
#pragma once

#include <string>

namespace fad::client {

/// Makes `<root>/fad-run-<pid>-<pid namespace>-XXXXXX` (mode 0700) holding
/// `nvcc` -> `fad`; "" when it cannot be made. Removes this user's stale ones
/// under root first.
std::string make_shim_dir(const std::string& root, const std::string& fad);

/// Removes `<root>/fad-run-<pid>-<pid namespace>-*` directories owned by the
/// calling user, made in its pid namespace, whose pid no longer runs. Returns
/// how many it removed.
int sweep_stale_shim_dirs(const std::string& root);

}  // namespace fad::client
