// A compile call's project root; see project_root.h.
#include "common/project_root.h"

#include <filesystem>

namespace fad {

namespace fs = std::filesystem;

std::string project_root(const std::string& cwd, const std::string& source) {
  const fs::path a = fs::path(cwd).lexically_normal(), b = fs::path(source).lexically_normal();
  fs::path common;
  for (auto ia = a.begin(), ib = b.begin(); ia != a.end() && ib != b.end() && *ia == *ib; ++ia, ++ib) common /= *ia;
  std::string root = common.string();
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  return root.size() <= 1 ? "" : root;
}

namespace {

// Characters that end a path inside one argument ("-DP=/a,/b", "-Xcompiler=-I/a").
bool ends_path(char c) { return c == '=' || c == ',' || c == ':' || c == ';' || c == ' '; }

// Whether `root` at `at` in `arg` is that path itself: it starts a path (no
// '/' since the last separator: "/var/tmp/x" holds "/tmp" but not as a path)
// and ends a component there ("/w" is not "/work").
bool whole_root_at(const std::string& arg, std::size_t at, std::size_t size) {
  for (std::size_t k = at; k > 0 && !ends_path(arg[k - 1]); --k)
    if (arg[k - 1] == '/') return false;
  const std::size_t end = at + size;
  return end == arg.size() || arg[end] == '/' || ends_path(arg[end]);
}

}  // namespace

std::string replace_root(const std::string& arg, const std::string& root, const std::string& mark) {
  if (root.empty()) return arg;
  std::string out;
  for (std::size_t i = 0; i < arg.size();) {
    if (arg.compare(i, root.size(), root) == 0 && whole_root_at(arg, i, root.size())) {
      out += mark;
      i += root.size();
    } else {
      out += arg[i++];
    }
  }
  return out;
}

}  // namespace fad
