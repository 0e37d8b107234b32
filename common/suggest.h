// "Did you mean ...?" for a mistyped command, option or key: shared by fad
// and fadd so that both name the closest word the same way.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace fad {

/// Optimal-string-alignment distance (insert, delete, substitute, swap neighbours).
std::size_t edit_distance(const std::string& a, const std::string& b);

/// The candidate closest to a mistyped `word` ("stauts" -> "status"), if one
/// is close enough to be what was meant; nullopt otherwise.
std::optional<std::string> suggest(const std::string& word, const std::vector<std::string>& candidates);

/// "; did you mean 'X'?" for a suggestion, "" for none.
std::string did_you_mean(const std::optional<std::string>& suggestion);

/// "unknown key; did you mean 'memory_budget'?" for a config key close to one
/// of `known` (comma-separated), else the list of them.
std::string unknown_key(const std::string& key, const std::string& known);

/// The words CLI11 lists in "The following arguments were not expected: 4G --memry-budget".
std::vector<std::string> unexpected_words(const std::string& message);

/// The first of `words` that looks like an option, or words.end(): in "--arhc 9.0"
/// the mistyped option is what to name, not the value after it.
std::vector<std::string>::const_iterator first_option(const std::vector<std::string>& words);

/// "unknown option --sokcet=/x; did you mean '--socket'?": the option as typed, and
/// the closest of `names` to its name without any "=VALUE".
std::string unknown_option(const std::string& option, const std::vector<std::string>& names);

/// CLI11's count complaints in fad's words: "--socket: 1 required PATH
/// missing" (the option came last) is "--socket: needs a value", "--name: At
/// Most 1 required but received 2" is "--name: given more than once; give it
/// once". nullopt for any other message.
std::optional<std::string> option_count_problem(const std::string& message);

/// Among the first `end` of `args`, the '=' forms CLI11 misreads, split into
/// option and value: "--opt=" (an unset shell variable after the '=') into
/// "--opt" and an empty value, as CLI11 would take the next word as its
/// value; "-o=VALUE" into "-o" and "VALUE", as CLI11 would take "=VALUE"
/// (`fad report 1 -o=r.html` wrote a file named "=r.html"). Returns the new end.
std::size_t split_option_values(std::vector<std::string>& args, std::size_t end);

/// For a word that starts with a dash a word processor makes of "--" or "-"
/// (en dash, em dash, minus sign: "—socket", pasted from a document), the
/// message that says so: "'—socket' starts with an em dash, not '-': did
/// you mean '--socket'?". "" for any other word.
std::string dash_lookalike(const std::string& word);

}  // namespace fad
