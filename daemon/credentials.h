// The identity a compile runs under. A root fadd runs each user's compiles
// (and probes each user's compiler) as that user, with the user's groups, so a
// client never gets more rights through fadd than it has itself. The group list
// is looked up here, before fork: the child may only make system calls.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "common/result.h"

namespace fad {

struct Credentials {
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> groups;  ///< supplementary groups, `gid` included
};

/// The credentials of `uid` with primary group `gid`: its supplementary groups
/// from the group database (only `gid` for a uid without a passwd entry).
Result<Credentials> credentials_of(uid_t uid, gid_t gid);

/// The login name of `uid`, or the number as text when it has none; answers
/// are remembered for a minute (user_names.h).
std::string user_name(uid_t uid);

/// Drops the calling process to `creds` (setgroups, setgid, setuid, in that
/// order, by raw system calls). Async-signal-safe: meant for a forked child
/// before exec. Returns 0, or the errno of the call that failed.
int drop_to(const Credentials& creds);

}  // namespace fad
