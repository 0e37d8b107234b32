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
  std::string flags;   ///< the arguments that say how it compiles
  std::string family;  ///< the source's file name without digits: flash_fwd_hdim_fp_sm
};

/// `cwd` and `source` are absolute (the protocol checks it); `argv` is the
/// compiler's whole command line. Flags leave out the source, the files the
/// call writes and the thread count fadd chooses. Paths are relabelled only
/// when `content_known` (the launcher sent the source's content hash, which
/// the key then carries): "<root>/k.cu" alone would stand for any project's.
LaunchKey launch_key(const std::vector<std::string>& argv, const std::string& cwd, const std::string& source,
                     bool content_known);

}  // namespace fad
