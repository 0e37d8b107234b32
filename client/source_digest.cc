// A launched compile's source and project headers, hashed; see source_digest.h.
#include "client/source_digest.h"

#include <deque>
#include <filesystem>
#include <set>
#include <string_view>
#include <system_error>

#include "common/content_hash.h"
#include "common/file_read.h"

namespace fad::client {

namespace fs = std::filesystem;

namespace {
/// A source over this is not hashed (the unit is then known by its arguments),
/// a header over it not followed.
constexpr std::size_t kMaxFileBytes = 64u << 20;

std::size_t skip_blanks(std::string_view line, std::size_t i) {
  while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
  return i;
}

/// Where the compiler finds `name`, included from a file in `from_dir`: "" when nowhere.
std::string resolve(const std::string& name, const fs::path& from_dir, const std::vector<fs::path>& dirs) {
  std::vector<fs::path> candidates;
  if (fs::path(name).is_absolute()) {
    candidates.emplace_back(name);
  } else {
    candidates.push_back(from_dir / name);
    for (const auto& d : dirs) candidates.push_back(d / name);
  }
  for (const auto& c : candidates) {
    std::error_code ec;
    if (fs::is_regular_file(c, ec)) return c.lexically_normal().string();
  }
  return "";
}
}  // namespace

std::vector<std::string> quoted_includes(const std::string& text) {
  std::vector<std::string> names;
  const std::string_view all(text);
  for (std::size_t pos = 0; pos < all.size();) {
    std::size_t end = all.find('\n', pos);
    if (end == std::string_view::npos) end = all.size();
    const std::string_view line = all.substr(pos, end - pos);
    pos = end + 1;
    std::size_t i = skip_blanks(line, 0);
    if (i >= line.size() || line[i] != '#') continue;
    i = skip_blanks(line, i + 1);
    if (line.substr(i, 7) != "include") continue;
    i = skip_blanks(line, i + 7);
    if (i >= line.size() || line[i] != '"') continue;
    const std::size_t close = line.find('"', i + 1);
    if (close == std::string_view::npos || close == i + 1) continue;
    names.emplace_back(line.substr(i + 1, close - i - 1));
  }
  return names;
}

std::optional<std::string> source_digest(const std::string& source, const std::vector<std::string>& include_dirs,
                                         const std::string& cwd) {
  auto text = read_regular_file(source, kMaxFileBytes);
  if (!text) return std::nullopt;
  std::vector<fs::path> dirs;
  for (const auto& d : include_dirs)
    if (!d.empty()) dirs.push_back(fs::path(d).is_absolute() ? fs::path(d) : fs::path(cwd) / d);

  // Breadth first from the source, each header once: the order, and so the
  // hash, depends only on the files' names and contents.
  const std::string start = fs::path(source).lexically_normal().string();
  std::set<std::string> seen{start};
  std::deque<std::pair<std::string, std::string>> pending{{start, *text}};
  std::string headers;
  std::size_t count = 0, bytes = 0, lookups = 0;
  // A name not found from a directory is not found from it again.
  std::set<std::pair<std::string, std::string>> missing;
  while (!pending.empty() && count < kMaxHeaders && bytes < kMaxHeaderBytes && lookups < kMaxLookups) {
    const auto [path, content] = std::move(pending.front());
    pending.pop_front();
    const fs::path from_dir = fs::path(path).parent_path();
    for (const auto& name : quoted_includes(content)) {
      if (missing.count({from_dir.string(), name})) continue;
      if (++lookups > kMaxLookups) break;
      const std::string found = resolve(name, from_dir, dirs);
      if (found.empty()) missing.emplace(from_dir.string(), name);
      if (found.empty() || !seen.insert(found).second) continue;
      auto header = read_regular_file(found, kMaxFileBytes);
      if (!header) continue;
      headers += name + '\0' + content_hash(*header) + '\0';
      bytes += header->size();
      if (++count >= kMaxHeaders || bytes >= kMaxHeaderBytes) break;
      pending.emplace_back(found, std::move(*header));
    }
  }
  if (headers.empty()) return content_hash(*text);
  return content_hash(*text + '\0' + headers);
}

}  // namespace fad::client
