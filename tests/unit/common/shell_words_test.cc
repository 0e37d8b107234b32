// Tests for common/shell_words: words as a POSIX shell splits them.
#include <catch2/catch.hpp>

#include "common/shell_words.h"

using namespace fad;
using Words = std::vector<std::string>;

TEST_CASE("shell_words: blanks split, quotes and backslashes go", "[shell_words]") {
  CHECK(shell_words("  -I/a   -O3\t-v\n") == Words{"-I/a", "-O3", "-v"});
  CHECK(shell_words("\"-I/a dir\" '-DX=\"q\"' a\\ b") == Words{"-I/a dir", "-DX=\"q\"", "a b"});
  CHECK(shell_words("\"a\\\"b\\\\c\\d\"") == Words{"a\"b\\c\\d"});
  CHECK(shell_words("x''y \"\"") == Words{"xy", ""});
  CHECK(shell_words("a\\\nb") == Words{"ab"});
  CHECK(shell_words("")->empty());
}

TEST_CASE("shell_words: what the shell would change is refused", "[shell_words]") {
  for (const char* text : {"-I$HOME", "\"$HOME\"", "`pwd`", "*.h", "a?", "[ab]", "'open", "\"open", "end\\"})
    CHECK_FALSE(shell_words(text).has_value());
  // Quoted, they are literal.
  CHECK(shell_words("'$HOME' '*'") == Words{"$HOME", "*"});
}

TEST_CASE("nvcc_tool_words: nvcc's commas first, then the shell", "[shell_words]") {
  CHECK(nvcc_tool_words("-O2,'@opts',\"-I/a dir\"") == Words{"-O2", "@opts", "-I/a dir"});
  CHECK_FALSE(nvcc_tool_words("-I$HOME,-O2").has_value());
}
