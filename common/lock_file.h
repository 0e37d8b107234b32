// STATE/fadd.lock, fadd's one-per-state-dir lock: what fadd writes in it and
// `fad daemon start` and `stop` read. The flock is what counts; the text only
// informs: the holder's pid on the first line, and, once it has begun to
// stop, a second line saying so.
#pragma once

#include <string_view>

namespace fad {

inline constexpr std::string_view kLockFileName = "fadd.lock";
/// The second line of a stopping fadd's lock file: its socket is closed while
/// its compilers end, which takes seconds (the kill grace for one that
/// ignores SIGTERM).
inline constexpr std::string_view kStoppingMark = "stopping";

}  // namespace fad
