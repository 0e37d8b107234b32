// See root_only_path.h.
#include "daemon/root_only_path.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "common/mode_text.h"
#include "daemon/credentials.h"

namespace fad {

namespace fs = std::filesystem;

namespace {

/// Root's (or `owner`'s) and writable by no one else; a sticky directory only
/// where `sticky_ok` (a directory above the path, not the path or what it
/// holds). The group of a directory of the owner's own (not root) may
/// write too: a user whose umask shares with their (often private) group
/// chose that. A root directory's group (root:devs 0775) is not theirs to
/// choose, and its other members could swap what is in it.
Status owner_only(const fs::path& p, const struct stat& st, bool sticky_ok, uid_t owner) {
  if (st.st_uid != 0 && st.st_uid != owner)
    return make_error(p.string() + " belongs to " + user_name(st.st_uid) + ", not " +
                      (owner == 0 ? std::string("root") : user_name(owner) + " or root") + " (mode " +
                      mode_text(st.st_mode) + ")");
  // A link's own mode means nothing (always 0777); where it leads is checked.
  const mode_t others = owner != 0 && st.st_uid == owner ? S_IWOTH : (S_IWGRP | S_IWOTH);
  if (S_ISLNK(st.st_mode) || (st.st_mode & others) == 0) return ok_status();
  if (sticky_ok && S_ISDIR(st.st_mode) && (st.st_mode & S_ISVTX) != 0) return ok_status();
  return make_error(p.string() + " is writable by " + ((st.st_mode & S_IWOTH) ? "everyone" : "its group") + " (owner " +
                    user_name(st.st_uid) + ", mode " + mode_text(st.st_mode) + ")");
}

Status check_above(fs::path p, bool sticky_ok, uid_t owner);

/// `p` itself (following a link to where it leads, checked the same way).
Status check_one(const fs::path& p, bool sticky_ok, uid_t owner) {
  struct stat st {};
  if (::lstat(p.c_str(), &st) != 0) return make_error("cannot examine " + p.string() + ": " + std::strerror(errno));
  if (auto ok = owner_only(p, st, sticky_ok, owner); !ok) return ok;
  if (!S_ISLNK(st.st_mode)) return ok_status();
  std::error_code ec;
  const auto target = fs::canonical(p, ec);
  if (ec) return make_error("cannot resolve " + p.string() + ": " + ec.message());
  // Where it leads, judged as the link itself was; what is above that, as any directory above.
  if (auto ok = check_one(target, sticky_ok, owner); !ok) return ok;
  return target.has_relative_path() ? check_above(target.parent_path(), true, owner) : ok_status();
}

/// `p` and every directory above it.
Status check_above(fs::path p, bool sticky_ok, uid_t owner) {
  for (;;) {
    if (auto ok = check_one(p, sticky_ok, owner); !ok) return ok;
    if (!p.has_relative_path()) return ok_status();
    p = p.parent_path();
  }
}

/// The path (or, not there yet, the nearest directory above, which will
/// create it) and everything above it; the path resolved in `checked`.
Status check_path(const std::string& path, uid_t owner, fs::path& checked) {
  std::error_code ec;
  fs::path p = fs::absolute(path, ec);
  if (ec) return make_error("cannot resolve " + path + ": " + ec.message());
  // lstat, not access: a dangling link is there (and judged, and refused as
  // unresolvable), not a path fadd may create through.
  struct stat st {};
  while (p.has_relative_path() && ::lstat(p.c_str(), &st) != 0 && errno == ENOENT) p = p.parent_path();
  checked = p;
  if (auto ok = check_one(p, false, owner); !ok) {
    // Not there yet: in a shared directory (even a sticky one, fine above an
    // existing path) another user could make it first, as theirs.
    if (p != fs::absolute(path, ec))
      return make_error(ok.error() + ": fadd creates " + path +
                        " only in a directory no one else can change; create it first (mkdir -m 0700) or choose "
                        "another");
    return ok;
  }
  if (p.has_relative_path())
    if (auto ok = check_above(p.parent_path(), true, owner); !ok) return ok;
  return ok_status();
}

}  // namespace

Status only_owner_can_replace(const std::string& path, uid_t owner) {
  fs::path p;
  return check_path(path, owner, p);
}

Status only_owner_can_replace_above(const std::string& path, uid_t owner) {
  std::error_code ec;
  fs::path p = fs::absolute(path, ec);
  if (ec) return make_error("cannot resolve " + path + ": " + ec.message());
  if (!p.has_relative_path()) return ok_status();
  p = p.parent_path();
  struct stat st {};
  while (p.has_relative_path() && ::lstat(p.c_str(), &st) != 0 && errno == ENOENT) p = p.parent_path();
  return check_above(p, true, owner);
}

Status only_root_can_write(const std::string& path) {
  fs::path p;
  if (auto ok = check_path(path, 0, p); !ok) return ok;
  std::error_code ec;
  // Not there yet: it will hold nothing but what fadd puts there. The
  // directory judged in its place holds much else (root's home, with its
  // links), none of it the path's.
  if (p != fs::absolute(path, ec)) return ok_status();
  // Everything inside: an entry another user put there earlier (while the
  // directory was shared) is as untrusted as the directory was.
  struct stat top {};
  if (::stat(p.c_str(), &top) != 0 || !S_ISDIR(top.st_mode)) return ok_status();
  for (fs::recursive_directory_iterator it(p, fs::directory_options::none, ec), end; !ec && it != end;
       it.increment(ec)) {
    struct stat st {};
    if (::lstat(it->path().c_str(), &st) != 0) continue;  // gone meanwhile
    if (S_ISLNK(st.st_mode)) return make_error(it->path().string() + " is a symbolic link");
    if (auto ok = owner_only(it->path(), st, false, 0); !ok) return ok;
  }
  if (ec) return make_error("cannot list " + p.string() + ": " + ec.message());
  return ok_status();
}

const char* who_may_change_fadds_files() { return ::geteuid() == 0 ? "root" : "you (and root)"; }

}  // namespace fad
