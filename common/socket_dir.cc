// Trust rules for the socket directory; see socket_dir.h.
#include "common/socket_dir.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "common/account_name.h"
#include "common/mode_text.h"

namespace fad {

namespace {

bool writable_by_others(const PathFacts& f) { return (f.mode & (S_IWGRP | S_IWOTH)) != 0; }

}  // namespace

Status check_daemon_socket_dir(const std::string& dir, const PathFacts& facts, uid_t daemon_uid) {
  if (!facts.is_dir) return make_error("the socket directory " + dir + " is not a directory");
  if (facts.owner != daemon_uid && facts.owner != 0)
    return make_error("the socket directory " + dir + " belongs to " + account_name_with_uid(facts.owner) +
                      ", not to fadd's user or root; remove it or choose another --socket");
  if (writable_by_others(facts))
    return make_error("the socket directory " + dir + " is writable by others (mode " + mode_text(facts.mode) +
                      "); make it writable by its owner only (chmod go-w) or choose another --socket");
  return ok_status();
}

Status check_client_socket_dir(const std::string& dir, const PathFacts& facts, const PathFacts& parent, uid_t user) {
  const std::string refuse = "refusing to talk to the socket in " + dir + ": ";
  if (!facts.is_dir) return make_error(refuse + "it is not a directory");
  if (writable_by_others(facts))
    return make_error(refuse + "the directory is writable by others (mode " + mode_text(facts.mode) +
                      "), anyone could have put the socket there");
  if (facts.owner == user || facts.owner == 0) return ok_status();
  const bool placed_by_trusted = (parent.owner == 0 || parent.owner == user) && !writable_by_others(parent);
  if (placed_by_trusted) return ok_status();
  if (writable_by_others(parent))
    return make_error(refuse + "it belongs to " + account_name_with_uid(facts.owner) +
                      " and was made in a directory anyone can write; remove it (or ask root to) and start fadd again");
  // Another user's fadd, in their own directory: theirs to talk to.
  return make_error(refuse + "it belongs to " + account_name_with_uid(facts.owner) + ", in a directory of " +
                    account_name_with_uid(parent.owner) +
                    ", and whoever controls it could answer in fadd's place; run fad as that user");
}

std::optional<PathFacts> path_facts(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return PathFacts{S_ISDIR(st.st_mode), st.st_uid, static_cast<mode_t>(st.st_mode & 07777)};
}

Status check_socket_for_client(const std::string& socket_path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path dir = fs::absolute(fs::path(socket_path), ec).parent_path();
  if (ec) return ok_status();
  auto facts = path_facts(dir.string());
  if (!facts) return ok_status();  // nothing there: connecting fails with a clear reason
  auto parent = path_facts(dir.parent_path().string());
  return check_client_socket_dir(dir.string(), *facts, parent.value_or(PathFacts{true, 0, 0755}), ::getuid());
}

}  // namespace fad
