// The learning key of a launched compile; see launch_key.h.
#include "daemon/launch_key.h"

#include <filesystem>

#include "common/hash.h"
#include "common/text.h"

namespace fad {

namespace fs = std::filesystem;

namespace {

// Past this, a learning key's flags are a prefix and a digest.
constexpr std::size_t kMaxKeyFlagsBytes = 2048;

// Flags whose value names one of this call's own files rather than how it
// compiles: left out, so the same kernel built elsewhere is known.
bool takes_path_value(const std::string& a) {
  return a == "-o" || a == "-MF" || a == "-MT" || a == "-MQ" || a == "--output-file" || a == "-odir" ||
         a == "--output-directory" || a == "--dependency-output";
}

// Characters that end a path inside an argument ("-DA=/p,/q", "-Xcompiler=-I/p").
bool ends_path(char c) { return c == '=' || c == ',' || c == ':' || c == ';' || c == ' '; }

// Whether `root` found at [hit, hit + size) of `text` is that path itself: it
// starts a path (no '/' since the last separator: "/a/w" holds "/w" but not
// as a path) and ends a component ("/w" is not "/work").
bool whole_path_at(const std::string& text, std::size_t hit, std::size_t size) {
  for (std::size_t k = hit; k > 0 && !ends_path(text[k - 1]); --k)
    if (text[k - 1] == '/') return false;
  const std::size_t end = hit + size;
  return end == text.size() || text[end] == '/' || ends_path(text[end]);
}

}  // namespace

std::string project_root(const std::string& cwd, const std::string& source) {
  const fs::path a = fs::path(cwd).lexically_normal();
  const fs::path b = fs::path(source).lexically_normal().parent_path();
  fs::path root;
  int parts = 0;
  for (auto i = a.begin(), j = b.begin(); i != a.end() && j != b.end() && *i == *j && !i->empty(); ++i, ++j) {
    root /= *i;
    ++parts;
  }
  // "/" alone (parts 1) is no project.
  if (parts < 2) return "";
  return root.string();
}

std::string without_root(const std::string& text, const std::string& root) {
  if (root.empty() || root == "/") return text;
  std::string out;
  std::size_t at = 0;
  for (std::size_t hit = text.find(root); hit != std::string::npos; hit = text.find(root, hit + 1)) {
    if (!whole_path_at(text, hit, root.size())) continue;
    out.append(text, at, hit - at).append("<root>");
    at = hit + root.size();
    hit = at - 1;
  }
  return out.append(text, at, std::string::npos);
}

std::string key_flags(const std::vector<std::string>& argv, const std::string& source, const std::string& root) {
  std::string out;
  for (std::size_t i = 1; i < argv.size(); ++i) {
    const auto& a = argv[i];
    if (takes_path_value(a) || a == "--threads" || a == "-t") {
      ++i;
      continue;
    }
    if (a.rfind("--threads=", 0) == 0 || a.rfind("--dependency-output=", 0) == 0 || a == source ||
        fs::path(a).filename() == fs::path(source).filename())
      continue;
    out += (out.empty() ? "" : " ") + without_root(a, root);
  }
  // Only ever compared whole: past a length no real compile reaches, a digest
  // tells the same flags apart as well, and the rows stay small.
  if (out.size() > kMaxKeyFlagsBytes) out = utf8_prefix(out, kMaxKeyFlagsBytes / 2) + " ...sha256:" + sha256_hex(out);
  return out;
}

std::string family_of(const std::string& source) {
  std::string stem = fs::path(source).stem().string(), out;
  for (char c : stem)
    if (c < '0' || c > '9') out += c;
  return out;
}

LaunchKey launch_key(const std::vector<std::string>& argv, const std::string& cwd, const std::string& source) {
  const std::string root = project_root(cwd, source);
  return LaunchKey{without_root(source, root), key_flags(argv, source, root), family_of(source)};
}

}  // namespace fad
