// Dependency files; see depfile.h.
#include "common/depfile.h"

#include <algorithm>

namespace fad {

namespace {
// Bytes nvcc never writes into a dependency file (control characters).
constexpr char kRootMark = '\x01';
constexpr char kOutputMark = '\x02';

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
}  // namespace

std::vector<std::string> depfile_prerequisites(std::string_view text) {
  std::vector<std::string> tokens;
  std::string current;
  bool in_token = false;
  auto flush = [&] {
    if (in_token) tokens.push_back(current);
    current.clear();
    in_token = false;
  };
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\\' && i + 1 < text.size()) {
      const char next = text[i + 1];
      if (next == '\n' || (next == '\r' && i + 2 < text.size() && text[i + 2] == '\n')) {  // continuation
        flush();
        i += next == '\n' ? 1 : 2;
        continue;
      }
      if (next == ' ' || next == '#' || next == '\\' || next == ':') {
        current += next;
        in_token = true;
        ++i;
        continue;
      }
    }
    if (c == '$' && i + 1 < text.size() && text[i + 1] == '$') {
      current += '$';
      in_token = true;
      ++i;
      continue;
    }
    if (is_space(c)) {
      flush();
      if (c == '\n') tokens.emplace_back("\n");  // rule boundary
      continue;
    }
    current += c;
    in_token = true;
  }
  flush();

  // Within each rule (one logical line): tokens up to the one ending in ':'
  // (or a lone ':') are targets, the rest prerequisites.
  std::vector<std::string> out;
  bool after_colon = false;
  for (auto& t : tokens) {
    if (t == "\n") {
      after_colon = false;
      continue;
    }
    if (!after_colon) {
      after_colon = t.back() == ':';
      continue;
    }
    if (std::find(out.begin(), out.end(), t) == out.end()) out.push_back(t);
  }
  return out;
}

bool depfile_safe_path(std::string_view path) {
  for (unsigned char c : path)
    if (c < 0x20 || c == 0x7f || c == ' ' || c == '#' || c == '$' || c == '\\' || c == ':' || c == '%') return false;
  return true;
}

std::optional<std::string> make_depfile_template(std::string_view text, std::string_view output,
                                                 std::string_view root) {
  if (text.find(kRootMark) != std::string_view::npos || text.find(kOutputMark) != std::string_view::npos)
    return std::nullopt;
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const bool token_start = i == 0 || is_space(text[i - 1]);
    if (token_start && !output.empty() && text.compare(i, output.size(), output) == 0) {
      const std::size_t end = i + output.size();
      if (end == text.size() || is_space(text[end]) || text[end] == ':') {
        out += kOutputMark;
        i = end;
        continue;
      }
    }
    if (token_start && !root.empty() && text.compare(i, root.size(), root) == 0 && i + root.size() < text.size() &&
        text[i + root.size()] == '/') {
      out += kRootMark;
      i += root.size();
      continue;
    }
    out += text[i++];
  }
  return out;
}

std::string expand_depfile_template(std::string_view tmpl, std::string_view output, std::string_view root) {
  std::string out;
  out.reserve(tmpl.size() + 64);
  for (char c : tmpl) {
    if (c == kRootMark)
      out += root;
    else if (c == kOutputMark)
      out += output;
    else
      out += c;
  }
  return out;
}

std::string mark_root(const std::string& path, std::string_view root) {
  if (root.empty() || path.size() <= root.size() || path.compare(0, root.size(), root) != 0 || path[root.size()] != '/')
    return path;
  return std::string(1, kRootMark) + path.substr(root.size());
}

std::string unmark_root(const std::string& path, std::string_view root) {
  if (path.empty() || path[0] != kRootMark) return path;
  return std::string(root) + path.substr(1);
}

}  // namespace fad
