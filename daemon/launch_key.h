// What a compile run by a launcher (`fad launch`, `fad run`) is learnt under.
#pragma once

#include <string>
#include <vector>

namespace fad {

/// The learning key's parts of a launched compile, free of where its project
/// sits. pip unpacks a source distribution into a fresh
/// /tmp/pip-req-build-XXXXXXXX for every build and torch passes nvcc absolute
/// paths under it (the source, -I, the dependency file): keyed by those, the
/// same kernel rebuilt was never the same unit, and history (local or
/// imported) reached it only through its family. As in the compile cache's
/// key (and ccache's base_dir), paths under the project's root
/// (common/project_root.h) are written relative to it.
struct LaunchKey {
  std::string source;  ///< "<root>/csrc/x.cu", or the path as given when no root was found
  std::string flags;   ///< the arguments that say how it compiles (see key_flags)
  std::string family;  ///< the source's file name without digits (family_of)
};

/// `cwd` and `source` are absolute (the protocol checks it); `argv` is the
/// compiler's whole command line.
LaunchKey launch_key(const std::vector<std::string>& argv, const std::string& cwd, const std::string& source);

/// The arguments of `argv` (the compiler first) that say how it compiles:
/// without the source, the files it writes (-o, dependency files) and the
/// thread count fadd chooses; paths under `root` (project_root()) as
/// "<root>/...". Past 2 KiB a prefix and a digest.
std::string key_flags(const std::vector<std::string>& argv, const std::string& source, const std::string& root);

/// "flash_fwd_hdim128_fp16_sm80.cu" -> "flash_fwd_hdim_fp_sm": siblings that
/// differ in head dim or dtype share a family and inform each other's estimates.
std::string family_of(const std::string& source);

}  // namespace fad
