// Writing a build's files under STATE/builds/ID: fadd's own (build.log and one
// log per unit under logs/) and the directories its compilers write (obj/,
// lib/). A root fadd writes another user's build so that the user, and only
// the user and root, can read it: the directories fadd writes in stay root's
// with mode 0711 (the user reaches their files by name but cannot plant a
// symlink or a FIFO where root writes), each file and the compiler's
// directories belong to the user (0600, 0700). Without an owner, everything is
// fadd's with fadd's umask (0077).
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>

namespace fad {

struct FileOwner {
  uid_t uid = 0;
  gid_t gid = 0;
};

/// Creates `dir` and missing parents as fadd's directories: 0711 with an
/// owner (so the owner can pass through), fadd's default mode without.
/// Existing directories are left as they are. Why `dir` could not be made
/// ("" when it is there): the first mkdir that failed, and its error.
std::string make_daemon_dir(const std::string& dir, const std::optional<FileOwner>& owner);

/// Creates `dir` (parents as make_daemon_dir) for a compiler to write in,
/// belonging to `owner` (mode 0700) when there is one.
void make_owned_dir(const std::string& dir, const std::optional<FileOwner>& owner);

/// Appends `text` to the file `path` (truncates first with `truncate`),
/// creating it 0600 and belonging to `owner` when there is one. Never follows
/// a symlink and never opens anything but a regular file. False when it cannot
/// (a full disk, a missing directory): logs are best effort.
bool write_owned_file(const std::string& path, std::string_view text, const std::optional<FileOwner>& owner,
                      bool truncate = false);

}  // namespace fad
