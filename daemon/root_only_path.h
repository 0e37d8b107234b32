// Whether only root can change what a path holds. A root fadd restores objects
// from its compile cache into the builds it compiles as itself (root's and its
// own): a cache directory another user can write to, or whose parents let
// them swap it for their own, would let that user plant the objects root links
// into a library. The same rule as sshd's StrictModes: every directory from
// the root down is root's and writable by no one else, unless sticky (/tmp),
// where others cannot rename or remove root's entries.
#pragma once

#include <sys/types.h>

#include <string>

#include "common/result.h"

namespace fad {

/// Ok when `path`, everything in it, and each directory above it is owned by
/// root and writable by no one else (a directory above may be sticky; the
/// path and what it holds may not, as others could add entries to it). A
/// path not there yet is judged by the nearest directory above, which will
/// create it. Otherwise why not, naming the file, its owner and mode.
Status only_root_can_write(const std::string& path);

/// Ok when `path` and each directory above it belong to `owner` or root and
/// are writable by no one else (`owner`'s group may, unless `owner` is
/// root; a directory above may be sticky): no other
/// user can rename, remove or swap what the path names or holds at its top.
/// What lies deeper is not examined. A path not there yet is judged by the
/// nearest directory above. fadd's state dir: another user who could swap
/// its `trash` or `builds` for a link would have fadd delete or chmod
/// files of theirs choosing.
Status only_owner_can_replace(const std::string& path, uid_t owner);

/// Ok when each existing directory above `path` belongs to `owner` or root
/// and is writable by no one else, or is sticky: no other user can rename or
/// swap a directory on the way to the path. The path itself is the caller's
/// to judge (fadd's socket directory may be made in /tmp). Directories not
/// there yet are skipped: fadd makes them, and judges them once made.
Status only_owner_can_replace_above(const std::string& path, uid_t owner);

/// Who may change fadd's files, as advice after a refusal names them:
/// "root" for a root fadd, "you (and root)" otherwise.
const char* who_may_change_fadds_files();

}  // namespace fad
