// Who sent a request: the credentials the kernel reported for the connection
// (SO_PEERCRED), never anything the client wrote in its message. Every Engine
// request method takes one, so each decides what this caller may do.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <vector>

#include "daemon/model.h"

namespace fad {

struct Caller {
  uid_t uid = 0;
  gid_t gid = 0;
  pid_t pid = 0;  ///< the connecting process (0 when unknown)
  /// Its supplementary groups at connect() (SO_PEERGROUPS); unknown on kernels
  /// before 4.13. Compiles run with these, never with groups the group
  /// database grants but the client's process does not hold.
  std::optional<std::vector<gid_t>> groups = std::nullopt;
  bool is_root() const { return uid == 0; }
};

/// What a build records of its submitter's groups: the supplementary groups
/// with the primary one among them; unset when the kernel did not say.
inline std::optional<std::vector<std::int64_t>> groups_of(const Caller& c) {
  if (!c.groups) return std::nullopt;
  std::vector<std::int64_t> out{static_cast<std::int64_t>(c.gid)};
  for (gid_t g : *c.groups)
    if (g != c.gid) out.push_back(static_cast<std::int64_t>(g));
  return out;
}

/// A new build owned by `c`: the uid, gid and groups its compiles run with.
inline BuildRecord build_owned_by(const Caller& c) {
  BuildRecord b;
  b.uid = c.uid;
  b.gid = c.gid;
  b.groups = groups_of(c);
  return b;
}

}  // namespace fad
