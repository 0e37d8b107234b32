// Include probes; see include_probes.h.
#include "common/include_probes.h"

#include <algorithm>
#include <cctype>

#include "common/shell_words.h"

namespace fad {

namespace {

bool identifier_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; }

// Past spaces, tabs, line continuations and comments, as the preprocessor
// reads them (`__has_include(/* why */ "x.h")`).
std::size_t skip_blanks(std::string_view text, std::size_t at) {
  while (at < text.size()) {
    if (text[at] == ' ' || text[at] == '\t') {
      ++at;
    } else if (text.substr(at, 2) == "\\\n") {
      at += 2;
    } else if (text.substr(at, 3) == "\\\r\n") {
      at += 3;
    } else if (text.substr(at, 2) == "/*") {
      const auto end = text.find("*/", at + 2);
      at = end == std::string_view::npos ? text.size() : end + 2;
    } else {
      break;
    }
  }
  return at;
}

template <typename T>
void add_once(std::vector<T>& out, T value) {
  if (std::find(out.begin(), out.end(), value) == out.end()) out.push_back(std::move(value));
}

// The directories named by include options among `words` ("-Idir", "-I dir",
// "--include-path=dir"); `gcc` adds gcc's own spellings.
void add_option_dirs(const std::vector<std::string>& words, bool gcc, std::vector<std::string>& dirs) {
  static const std::vector<std::string_view> kNvcc{"-I", "--include-path", "-isystem", "--system-include"};
  static const std::vector<std::string_view> kGcc{"-I", "-isystem", "-iquote", "-idirafter"};
  const auto& names = gcc ? kGcc : kNvcc;
  for (std::size_t i = 0; i < words.size(); ++i) {
    const std::string& w = words[i];
    for (std::string_view name : names) {
      if (w.compare(0, name.size(), name) != 0) continue;
      std::string value = w.substr(name.size());
      if (!gcc && !value.empty() && value[0] == '=') {
        value.erase(0, 1);  // nvcc's "-I=dir", "--include-path=dir"
      } else if (name.rfind("--", 0) == 0 && !value.empty()) {
        continue;  // another option that starts alike
      }
      if (value.empty()) {
        if (i + 1 >= words.size()) break;
        value = words[++i];
      }
      if (gcc) {
        add_once(dirs, value);
      } else {
        // nvcc takes a list: "-Ia,b" is two directories.
        std::size_t start = 0;
        for (std::size_t end; start <= value.size(); start = end + 1) {
          end = value.find(',', start);
          if (end == std::string::npos) end = value.size();
          if (end > start) add_once(dirs, value.substr(start, end - start));
        }
      }
      break;
    }
  }
}

}  // namespace

std::vector<IncludeProbe> find_include_probes(std::string_view text) {
  static constexpr std::string_view kProbe = "__has_include";
  std::vector<IncludeProbe> out;
  for (std::size_t at = text.find(kProbe); at != std::string_view::npos; at = text.find(kProbe, at + 1)) {
    if (at > 0 && identifier_char(text[at - 1])) continue;
    std::size_t i = at + kProbe.size();
    if (text.substr(i, 5) == "_next") i += 5;
    if (i < text.size() && identifier_char(text[i])) continue;
    i = skip_blanks(text, i);
    if (i >= text.size() || text[i] != '(') continue;
    i = skip_blanks(text, i + 1);
    if (i >= text.size() || (text[i] != '"' && text[i] != '<')) continue;  // a macro's parameter
    const char close = text[i] == '"' ? '"' : '>';
    const std::size_t end = text.find_first_of(std::string{close, '\n'}, i + 1);
    if (end == std::string_view::npos || text[end] != close || end == i + 1) continue;
    add_once(out, IncludeProbe{std::string(text.substr(i + 1, end - i - 1)), close == '"'});
  }
  return out;
}

std::vector<std::string> include_search_dirs(const std::vector<std::string>& args, const EnvLookup& env) {
  std::vector<std::string> dirs;
  add_option_dirs(args, false, dirs);
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string value;
    const std::string& a = args[i];
    if ((a == "-Xcompiler" || a == "--compiler-options") && i + 1 < args.size()) {
      value = args[++i];
    } else if (a.rfind("-Xcompiler=", 0) == 0 || a.rfind("--compiler-options=", 0) == 0) {
      value = a.substr(a.find('=') + 1);
    } else {
      continue;
    }
    // None when the shell would expand something: such a compile is not
    // cached at all (cache_key.h).
    add_option_dirs(nvcc_tool_words(value).value_or(std::vector<std::string>{}), true, dirs);
  }
  for (std::string_view name : {"INCLUDES", "SYSTEM_INCLUDES"})
    if (auto v = env(name)) add_option_dirs(shell_words(*v).value_or(std::vector<std::string>{}), true, dirs);
  for (std::string_view name : {"CPATH", "C_INCLUDE_PATH", "CPLUS_INCLUDE_PATH"}) {
    auto v = env(name);
    if (!v) continue;
    // An empty element is the working directory, as gcc reads these.
    std::size_t start = 0;
    for (std::size_t end; start <= v->size(); start = end + 1) {
      end = v->find(':', start);
      if (end == std::string::npos) end = v->size();
      add_once(dirs, end == start ? std::string(".") : v->substr(start, end - start));
    }
  }
  return dirs;
}

std::vector<std::string> probe_candidates(const IncludeProbe& probe, const std::string& file_dir,
                                          const std::vector<std::string>& dirs) {
  if (!probe.name.empty() && probe.name[0] == '/') return {probe.name};
  std::vector<std::string> out;
  auto in = [&](const std::string& dir) {
    return dir.empty() || dir.back() == '/' ? dir + probe.name : dir + "/" + probe.name;
  };
  if (probe.quoted) add_once(out, in(file_dir));
  for (const auto& dir : dirs) add_once(out, in(dir));
  return out;
}

}  // namespace fad
