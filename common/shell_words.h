// Words as a POSIX shell splits a line it is given: nvcc hands INCLUDES,
// PTXAS_FLAGS (from nvcc.profile) and -Xcompiler values to its tools through
// a shell, so `"-I/a dir"` is one word and `'@opts'` reads a file. Pure.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fad {

/// `text` split at blanks, with single quotes, double quotes and
/// backslashes taken away as the shell takes them. nullopt when the shell
/// would put something else in the words than `text` says: an expansion
/// (`$`, a backquote), a glob character (`*`, `?`, `[`) outside quotes,
/// or a quote left open.
std::optional<std::vector<std::string>> shell_words(std::string_view text);

/// The words a tool gets from an `-X` value (`-Xcompiler -O2,'@f'`) or a
/// variable nvcc.profile adds: nvcc splits the value at commas, then hands
/// it to the tool through a shell. nullopt as for shell_words().
std::optional<std::vector<std::string>> nvcc_tool_words(std::string text);

/// `word` as one shell word, so that a printed command can be pasted: as it
/// is when it holds nothing a shell would read, else in single quotes.
std::string shell_word(const std::string& word);

}  // namespace fad
