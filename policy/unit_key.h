// What identifies a compile unit for learning, and how a profile measured for
// one unit at some nvcc thread count is scaled to another unit or thread count.
#pragma once

#include <string>

#include "policy/profile.h"

namespace fad {

/// What a launched compile's source and flags hold in place of its project's
/// root (daemon/launch_key.h): "<root>/csrc/k.cu".
inline constexpr const char* kProjectRootMark = "<root>";

/// What identifies a compile unit for learning. `exact()` is the primary key:
/// source content hash + flags + arch set + compiler version.
struct UnitKey {
  std::string source;        ///< source path relative to the kernels dir
  std::string content_hash;  ///< hash of the source file's content (and its includes where known)
  std::string flags;         ///< the unit's compiler flags, joined
  std::string archs;         ///< e.g. "90,120a"
  std::string compiler;      ///< compiler version string
  std::string family;        ///< unit family from the manifest (e.g. "fwd_hdim128")
  int arch_count = 1;        ///< number of gencode targets (upper bound for --threads)
  /// Whose measurements may inform this unit. "": what fadd runs with a
  /// compiler and key it chose itself, or what root or fadd's own user ran;
  /// learnt for everyone. "uid:N": a unit whose compiler or key user N chose
  /// (fad launch, --nvcc), which could lie about what it is; learnt only for
  /// N's own units, which also use the shared ones.
  std::string scope{};

  std::string exact() const;
  /// `source` and `family` within the scope: the keys the estimator and the
  /// sibling evidence file observations under. A project-relative source
  /// ("<root>/...", launched compiles) counts with its content hash.
  std::string scoped_source() const;
  std::string scoped_family() const;
  /// The same unit in the shared scope.
  UnitKey shared() const {
    UnitKey k = *this;
    k.scope.clear();
    return k;
  }
};

/// Archs nvcc compiles at once: min(threads, arch_count), at least 1.
int effective_parallelism(int threads, int arch_count);

/// `profile`, measured for `from` run with `from_threads`, as if it had run as
/// `to` with `to_threads`. Memory grows with the archs compiled at once:
/// scaling up linearly is safe (the traces: 4.03 GiB at one thread, 6.89 GiB
/// at two, ratio 1.7 < 2); scaling down linearly would under-estimate
/// (6.89 / 2 < 4.03), so down it scales by (e + 1) / (e_from + 1). Time goes
/// with nvcc's turns (spikes.h): a turn compiles as many archs at once as there
/// are threads in about one arch's time. Compiled in another number of turns,
/// the profile's turns are laid over each other and played once per turn.
Profile rescale(const Profile& profile, const UnitKey& from, int from_threads, const UnitKey& to, int to_threads);

/// Whether a profile of `from` at `from_threads` needs no rescaling to stand
/// for `to` at `to_threads`: as many archs, compiled as many at once.
bool same_parallelism(const UnitKey& from, int from_threads, const UnitKey& to, int to_threads);

/// The share of rescale()'s memory to count for a family member measured at
/// another parallelism, once the family also has one measured at the asked
/// one: that measurement says linear scaling is high, so a member scaled up
/// counts at 0.85 (the traces' 1.7x for twice the archs at once, against
/// the 2x linear assumes); one scaled down or not at all counts whole. Only
/// a share: a family groups sources of very different sizes, and a small
/// member measured directly must not hide a large one measured otherwise.
double cross_parallelism_share(const UnitKey& from, int from_threads, const UnitKey& to, int to_threads);

}  // namespace fad
