// User and group lookups for running compiles as their owner; see credentials.h.
#include "daemon/credentials.h"
#include "daemon/user_names.h"

#include <grp.h>
#include <pwd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace fad {

namespace {
// NSS answers can be large (LDAP users in many groups): grow until they fit.
constexpr std::size_t kMaxLookupBuffer = 1u << 20;

struct PasswdEntry {
  passwd pw{};
  std::vector<char> buf;
  bool found = false;
};

PasswdEntry lookup(uid_t uid) {
  PasswdEntry e;
  for (std::size_t size = 4096; size <= kMaxLookupBuffer; size *= 4) {
    e.buf.resize(size);
    passwd* result = nullptr;
    const int rc = ::getpwuid_r(uid, &e.pw, e.buf.data(), e.buf.size(), &result);
    if (rc == ERANGE) continue;
    e.found = rc == 0 && result != nullptr;
    break;
  }
  return e;
}
}  // namespace

Result<Credentials> credentials_of(uid_t uid, gid_t gid) {
  Credentials c{uid, gid, {gid}};
  const PasswdEntry e = lookup(uid);
  if (!e.found) return c;  // a uid without a name (a container's) has no supplementary groups
  int count = 64;
  for (int tries = 0; tries < 8; ++tries) {
    std::vector<gid_t> groups(static_cast<std::size_t>(count));
    int n = count;
    if (::getgrouplist(e.pw.pw_name, gid, groups.data(), &n) >= 0) {
      groups.resize(static_cast<std::size_t>(n));
      if (std::find(groups.begin(), groups.end(), gid) == groups.end()) groups.push_back(gid);
      c.groups = std::move(groups);
      return c;
    }
    count = std::max(n, count * 2);
  }
  return make_error("cannot list the groups of user " + std::string(e.pw.pw_name));
}

std::string user_name(uid_t uid) {
  static UserNames names([](uid_t u) -> std::optional<std::string> {
    const PasswdEntry e = lookup(u);
    if (!e.found) return std::nullopt;
    return std::string(e.pw.pw_name);
  });
  return names.name(uid, UserNames::Clock::now());
}

int drop_to(const Credentials& creds) {
  // Raw system calls: glibc's wrappers synchronise credentials across threads,
  // which is neither needed nor safe in a forked child of a threaded process.
  if (::syscall(SYS_setgroups, creds.groups.size(), creds.groups.data()) != 0) return errno;
  if (::syscall(SYS_setresgid, creds.gid, creds.gid, creds.gid) != 0) return errno;
  if (::syscall(SYS_setresuid, creds.uid, creds.uid, creds.uid) != 0) return errno;
  return 0;
}

}  // namespace fad
