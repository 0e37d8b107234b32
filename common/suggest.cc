// Suggestions for mistyped names; see suggest.h.
#include "common/suggest.h"

#include <algorithm>
#include <cctype>
#include <sstream>
#include <utility>

namespace fad {

std::size_t edit_distance(const std::string& a, const std::string& b) {
  // Optimal string alignment: insertions, deletions, substitutions and swaps
  // of neighbours ("stauts" is one swap from "status").
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i)
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

std::optional<std::string> suggest(const std::string& word, const std::vector<std::string>& candidates) {
  // Short words get one edit, longer ones two: "frob" must not turn into "logs".
  const std::size_t allowed = word.size() <= 4 ? 1 : 2;
  std::optional<std::string> best;
  std::size_t best_distance = allowed + 1;
  for (const auto& c : candidates) {
    const std::size_t dist = edit_distance(word, c);
    if (dist < best_distance) {
      best = c;
      best_distance = dist;
    }
  }
  if (best || word.size() < 2) return best;
  // A word cut short ("stat", "hist", "da") names the one candidate it begins.
  std::optional<std::string> only;
  for (const auto& c : candidates)
    if (c.size() > word.size() && c.compare(0, word.size(), word) == 0) {
      if (only) return std::nullopt;
      only = c;
    }
  return only;
}

std::string did_you_mean(const std::optional<std::string>& suggestion) {
  return suggestion ? "; did you mean '" + *suggestion + "'?" : "";
}

std::string unknown_key(const std::string& key, const std::string& known) {
  std::vector<std::string> names;
  std::istringstream in(known);
  for (std::string name; std::getline(in >> std::ws, name, ',');) names.push_back(name);
  if (auto close = suggest(key, names)) return "unknown key" + did_you_mean(close);
  return "unknown key (known keys: " + known + ")";
}

std::vector<std::string> unexpected_words(const std::string& message) {
  const auto colon = message.find(": ");
  std::istringstream in(colon == std::string::npos ? std::string() : message.substr(colon + 2));
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

std::vector<std::string>::const_iterator first_option(const std::vector<std::string>& words) {
  return std::find_if(words.begin(), words.end(), [](const std::string& w) { return w.size() > 1 && w[0] == '-'; });
}

std::string unknown_option(const std::string& option, const std::vector<std::string>& names) {
  return "unknown option " + option + did_you_mean(suggest(option.substr(0, option.find('=')), names));
}

std::optional<std::string> option_count_problem(const std::string& message) {
  const auto colon = message.find(':');
  if (message.rfind("--", 0) != 0 || colon == std::string::npos) return std::nullopt;
  const std::string option = message.substr(0, colon);
  if (message.find("missing", colon) != std::string::npos) return option + ": needs a value";
  // Which of the two was meant is the user's to say.
  if (message.find("At Most 1 ", colon) != std::string::npos) return option + ": given more than once; give it once";
  return std::nullopt;
}

std::size_t split_option_values(std::vector<std::string>& args, std::size_t end) {
  for (std::size_t i = 0; i < end && i < args.size(); ++i) {
    const std::string& a = args[i];
    const bool empty_long = a.size() > 3 && a.rfind("--", 0) == 0 && a.back() == '=' && a.find('=') == a.size() - 1;
    const bool short_equals =
        a.size() >= 3 && a[0] == '-' && std::isalpha(static_cast<unsigned char>(a[1])) && a[2] == '=';
    if (!empty_long && !short_equals) continue;
    const std::size_t eq = a.find('=');
    std::string value = a.substr(eq + 1);
    args[i].erase(eq);
    args.insert(args.begin() + static_cast<std::ptrdiff_t>(++i), std::move(value));
    ++end;
  }
  return end;
}

std::string dash_lookalike(const std::string& word) {
  static const std::pair<const char*, const char*> kDashes[] = {
      {"\xe2\x80\x94", "an em dash"}, {"\xe2\x80\x93", "an en dash"}, {"\xe2\x88\x92", "a minus sign"}};
  for (const auto& [dash, what] : kDashes) {
    if (word.rfind(dash, 0) != 0) continue;
    const std::string rest = word.substr(3);
    // A single letter was an option's short form ("—h"), anything longer its long one.
    const std::string meant = (rest.size() == 1 ? "-" : "--") + rest;
    return "'" + word + "' starts with " + what + ", not '-': did you mean '" + meant + "'?";
  }
  return "";
}

}  // namespace fad
