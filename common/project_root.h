// The project a compile call belongs to, as far as one call can tell: what
// lets the compile cache and the estimator know the same project unpacked
// elsewhere (pip builds in a fresh /tmp/pip-req-build-* every time).
#pragma once

#include <string>

namespace fad {

/// The deepest directory holding both the call's working directory and its
/// source (absolute paths), without a trailing '/'; "" when they share only
/// "/". torch's builds: /tmp/pip-req-build-X for a cwd of
/// .../build/temp.linux-x86_64-... and sources under .../csrc.
std::string project_root(const std::string& cwd, const std::string& source);

/// `arg` with every occurrence of the path `root` written as `mark`: where a
/// path starts and a component ends ("/w" in "-I/w/x" and "-DP=/a,/w", not in
/// "/work" or "/var/w"); `arg` when `root` is "".
std::string replace_root(const std::string& arg, const std::string& root, const std::string& mark);

}  // namespace fad
