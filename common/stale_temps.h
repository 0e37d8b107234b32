// What fad's client programs leave under the temporary directory while they
// run: `fad run`'s nvcc shim directories (fad-run-...) and the dependency
// files of cached compiles that name none (fad-deps-...). Each is named after
// its maker, `<prefix><pid>-<pid namespace>-<boot>-<tail>`, and removed by it
// at its end; one killed (SIGKILL, a CI job's timeout) cannot, so a later run
// of the same user removes those whose maker is gone. A pid is judged only
// where it means that process: the same pid namespace of the same boot of the
// same machine (`<boot>`, from the kernel's boot id; a TMPDIR on shared
// storage holds other machines' entries, whose default pid namespaces all
// have the same number).
#pragma once

#include <string>
#include <string_view>

namespace fad {

inline constexpr std::string_view kShimDirPrefix = "fad-run-";
inline constexpr std::string_view kDepfilePrefix = "fad-deps-";

/// `<prefix><this pid>-<this pid namespace>-<this boot>-`: the start of a
/// name the sweep can judge.
std::string temp_name_start(std::string_view prefix);

enum class StaleTemps {
  depfiles,  ///< a compile's sweep: a shim directory may be its own build's
             ///< (a `fad run` killed while its command compiles on)
  all,       ///< `fad run`'s sweep at its start
};

/// Removes under `root` this user's entries of `which` made in this pid
/// namespace of this boot whose maker no longer runs; nothing else (a name
/// alone proves nothing in a directory everyone writes). Returns how many it
/// removed.
int sweep_stale_temps(const std::string& root, StaleTemps which);

}  // namespace fad
