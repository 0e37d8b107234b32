// See root_only_path.h.
#include "daemon/root_only_path.h"

#include <sys/stat.h>

#include <cstdio>
#include <filesystem>

#include "daemon/credentials.h"

namespace fad {

namespace fs = std::filesystem;

Status only_root_can_write(const std::string& path) {
  std::error_code ec;
  fs::path p = fs::absolute(path, ec).lexically_normal();
  if (ec) return make_error("cannot resolve " + path + ": " + ec.message());
  for (;;) {
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0) return make_error("cannot examine " + p.string());
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    if (st.st_uid != 0)
      return make_error(p.string() + " belongs to " + user_name(st.st_uid) + ", not root (mode " + mode + ")");
    // A link is followed by the kernel to wherever it points: check that too.
    if (S_ISLNK(st.st_mode)) {
      auto target = fs::canonical(p, ec);
      if (ec) return make_error("cannot resolve " + p.string() + ": " + ec.message());
      if (auto st2 = only_root_can_write(target.string()); !st2) return st2;
    } else if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0 && !(S_ISDIR(st.st_mode) && (st.st_mode & S_ISVTX) != 0)) {
      return make_error(p.string() + " is writable by " + ((st.st_mode & S_IWOTH) ? "everyone" : "its group") +
                        " (mode " + mode + ")");
    }
    if (!p.has_relative_path()) return ok_status();
    p = p.parent_path();
  }
}

}  // namespace fad
