// See account_name.h.
#include "common/account_name.h"

#include <grp.h>
#include <pwd.h>

namespace fad {

std::string account_name(uid_t uid) {
  if (const passwd* pw = ::getpwuid(uid); pw && pw->pw_name) return pw->pw_name;
  return "uid " + std::to_string(uid);
}

std::string account_name_with_uid(uid_t uid) {
  if (const passwd* pw = ::getpwuid(uid); pw && pw->pw_name)
    return std::string(pw->pw_name) + " (uid " + std::to_string(uid) + ")";
  return "uid " + std::to_string(uid);
}

std::string group_name(gid_t gid) {
  if (const group* gr = ::getgrgid(gid); gr && gr->gr_name) return gr->gr_name;
  return "gid " + std::to_string(gid);
}

}  // namespace fad
