// Shell word splitting; see shell_words.h.
#include "common/shell_words.h"

#include <algorithm>
#include <cctype>

namespace fad {

std::optional<std::vector<std::string>> shell_words(std::string_view text) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == ' ' || c == '\t' || c == '\n') {
      if (in_word) words.push_back(std::move(word));
      word.clear();
      in_word = false;
      continue;
    }
    in_word = true;
    if (c == '$' || c == '`' || c == '*' || c == '?' || c == '[') return std::nullopt;
    if (c == '\\') {
      if (++i >= text.size()) return std::nullopt;
      if (text[i] != '\n') word += text[i];  // a line continuation joins
    } else if (c == '\'') {
      const auto end = text.find('\'', i + 1);
      if (end == std::string_view::npos) return std::nullopt;
      word.append(text.substr(i + 1, end - i - 1));
      i = end;
    } else if (c == '"') {
      for (++i;; ++i) {
        if (i >= text.size()) return std::nullopt;
        const char d = text[i];
        if (d == '"') break;
        if (d == '$' || d == '`') return std::nullopt;
        if (d == '\\' && i + 1 < text.size() &&
            (text[i + 1] == '"' || text[i + 1] == '\\' || text[i + 1] == '$' || text[i + 1] == '`')) {
          word += text[++i];
        } else if (d == '\\' && i + 1 < text.size() && text[i + 1] == '\n') {
          ++i;
        } else {
          word += d;
        }
      }
    } else {
      word += c;
    }
  }
  if (in_word) words.push_back(std::move(word));
  return words;
}

std::optional<std::vector<std::string>> nvcc_tool_words(std::string text) {
  std::replace(text.begin(), text.end(), ',', ' ');
  return shell_words(text);
}

std::string shell_word(const std::string& word) {
  const bool plain = !word.empty() && std::all_of(word.begin(), word.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) ||
           std::string_view("_.+-/=:,@%").find(c) != std::string_view::npos;
  });
  if (plain) return word;
  std::string out = "'";
  for (char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace fad
