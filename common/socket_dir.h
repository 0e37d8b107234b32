// Whether the directory holding fadd's socket can be trusted. Whoever can
// create or replace the socket file can answer fad's requests (and, for
// `fad launch`, tell compiles what to do): the directory must not be writable
// by anyone but its owner, and its owner must be someone the user trusts. A
// directory another user made in a world-writable place (/tmp/fad-1000
// "squatted" before its user's first fadd) is refused by fadd and by fad.
// Pure rules over stat facts, plus one function that gathers them.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

#include "common/result.h"

namespace fad {

/// What stat(2) says of a path, as far as trust goes.
struct PathFacts {
  bool is_dir = false;
  uid_t owner = 0;
  mode_t mode = 0;  ///< permission bits (07777)
};

/// fadd's rule for the socket directory it uses: a directory owned by
/// `daemon_uid` or root, writable by its owner only.
Status check_daemon_socket_dir(const std::string& dir, const PathFacts& facts, uid_t daemon_uid);

/// The client's rule: a directory writable by its owner only, owned by `user`
/// or root; or owned by another user (a system fadd's own account) where that
/// user could not have made it alone: its parent is owned by root or `user`
/// and writable by its owner only.
Status check_client_socket_dir(const std::string& dir, const PathFacts& facts, const PathFacts& parent, uid_t user);

/// stat() of `path` (following links); nullopt when it does not exist or cannot be examined.
std::optional<PathFacts> path_facts(const std::string& path);

/// check_client_socket_dir for the directory of `socket_path`, as the calling
/// user. A directory that does not exist passes (connecting then fails).
Status check_socket_for_client(const std::string& socket_path);

}  // namespace fad
