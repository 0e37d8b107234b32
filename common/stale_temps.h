// What fad's client programs leave under the temporary directory while they
// run: `fad run`'s nvcc shim directories (fad-run-...) and the dependency
// files of cached compiles that name none (fad-deps-...). Each is named after
// its maker, `<prefix><pid>-<pid namespace>-<tail>`, and removed by it at
// its end; one killed (SIGKILL, a CI job's timeout) cannot, so the next run
// of the same user removes those whose maker is gone.
#pragma once

#include <string>
#include <string_view>

namespace fad {

inline constexpr std::string_view kShimDirPrefix = "fad-run-";
inline constexpr std::string_view kDepfilePrefix = "fad-deps-";

/// `<prefix><this pid>-<this pid namespace>-`: the start of a name the sweep
/// can judge.
std::string temp_name_start(std::string_view prefix);

/// Removes under `root` this user's shim directories and dependency files
/// made in this pid namespace whose maker no longer runs; nothing else (a
/// name alone proves nothing in a directory everyone writes). Returns how
/// many it removed.
int sweep_stale_temps(const std::string& root);

}  // namespace fad
