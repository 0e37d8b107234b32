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

std::string replace_root(const std::string& arg, const std::string& root, const std::string& mark) {
  if (root.empty()) return arg;
  std::string out;
  for (std::size_t i = 0; i < arg.size();) {
    if (arg.compare(i, root.size(), root) == 0 && (i + root.size() == arg.size() || arg[i + root.size()] == '/')) {
      out += mark;
      i += root.size();
    } else {
      out += arg[i++];
    }
  }
  return out;
}

}  // namespace fad
