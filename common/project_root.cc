// A compile call's project root; see project_root.h.
#include "common/project_root.h"

#include <filesystem>
#include <string_view>

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

// Characters that separate paths inside one argument ("-DP=/a,/b",
// "-Xcompiler=-I/a"). Not the space: a directory name holds one far more often
// ("/home/u/My Projects") than an argument lists paths with it.
bool separates(char c) { return c == '=' || c == ',' || c == ':' || c == ';'; }

// Whether a path can start at `at`, where the argument's current path begins
// at `from` (its start or past a separator): there, or right after a glued
// path option ("-I/w"). "-Ideps/src" and "/opt/my lib/w" hold "/src" and "/w"
// in the middle of other paths.
bool path_starts_at(const std::string& arg, std::size_t from, std::size_t at) {
  const std::string_view head(arg.data() + from, at - from);
  for (std::string_view glued : {"", "-I", "-L", "-isystem", "-iquote", "-idirafter"})
    if (head == glued) return true;
  return false;
}

// Whether the path going on from `from` climbs out of where it is (a ".."
// component): "<root>/../q" would name another directory in every project.
bool climbs_out(const std::string& arg, std::size_t from) {
  std::size_t end = from;
  while (end < arg.size() && !separates(arg[end])) ++end;
  const std::string_view rest(arg.data() + from, end - from);
  for (std::size_t i = 0; i < rest.size();) {
    std::size_t next = rest.find('/', i);
    if (next == std::string_view::npos) next = rest.size();
    if (rest.substr(i, next - i) == "..") return true;
    i = next + 1;
  }
  return false;
}

// Whether `root` at `at` in `arg` is that path itself, and relabelling it
// cannot make two different paths one: it starts a path, ends a component
// there ("/w" is not "/work") and the rest does not leave it. Where in doubt
// the path stays as given: a key that misses costs a guess, one that merges two
// projects' paths teaches one from the other. Only a path's start looks ahead,
// to that path's end, so an argument of any length costs linear time.
bool whole_root_at(const std::string& arg, std::size_t from, std::size_t at, std::size_t size) {
  const std::size_t end = at + size;
  const bool ends = end == arg.size() || arg[end] == '/' || separates(arg[end]);
  return ends && path_starts_at(arg, from, at) && !climbs_out(arg, end);
}

}  // namespace

std::string replace_root(const std::string& arg, const std::string& root, const std::string& mark) {
  if (root.empty()) return arg;
  std::string out;
  std::size_t from = 0;  // where the current path began
  for (std::size_t i = 0; i < arg.size();) {
    if (arg.compare(i, root.size(), root) == 0 && whole_root_at(arg, from, i, root.size())) {
      out += mark;
      i += root.size();
    } else {
      if (separates(arg[i])) from = i + 1;
      out += arg[i++];
    }
  }
  return out;
}

}  // namespace fad
