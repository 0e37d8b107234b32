// A test's scratch directory: the one every test binary uses, so that how a
// test makes and removes its files is decided in one place.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <system_error>

#include <sys/stat.h>
#include <unistd.h>

namespace fad::test {

/// A fresh directory under the system temp dir (TMPDIR), removed with
/// everything in it when the object goes out of scope.
class TempDir {
 public:
  explicit TempDir(const std::string& prefix = "fad-test") {
    // mkdtemp, not a name of our own: two test processes started in the same
    // instant (ctest -j) must never share a directory.
    std::string templ = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
    if (!::mkdtemp(templ.data()))
      throw std::system_error(errno, std::generic_category(), "cannot make a test directory " + templ);
    path_ = templ;
    // mkdtemp makes it 0700. Tests that run a client as another user need to
    // reach the daemon's socket inside, as they would in a user's own
    // directory; nothing in it is secret.
    std::filesystem::permissions(path_, std::filesystem::perms::owner_all | std::filesystem::perms::group_read |
                                            std::filesystem::perms::group_exec | std::filesystem::perms::others_read |
                                            std::filesystem::perms::others_exec);
  }
  ~TempDir() {
    // A forked child that exits normally (running static destructors) must
    // not remove what its parent still uses.
    if (::getpid() != owner_) return;
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::string str() const { return path_.string(); }
  std::string operator/(const std::string& rel) const { return (path_ / rel).string(); }

 private:
  pid_t owner_ = ::getpid();
  std::filesystem::path path_;
};

/// The first directory on the way to `path` that other users cannot enter
/// (a private TMPDIR, a checkout under a 0700 home), or an empty path when
/// there is none. A test that runs a program as another user skips, saying
/// which, rather than failing on what it cannot arrange.
inline std::filesystem::path closed_to_others(const std::filesystem::path& path) {
  std::filesystem::path closed;
  for (auto p = std::filesystem::absolute(path);; p = p.parent_path()) {
    struct stat st {};
    if (::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && !(st.st_mode & S_IXOTH)) closed = p;
    if (p == p.parent_path()) break;
  }
  return closed;
}

}  // namespace fad::test
