// join, wrap_words, utf8_prefix, printable, valid_utf8 and utf8_char_at.
#include <catch2/catch.hpp>

#include "common/text.h"

TEST_CASE("join puts the separator only between parts", "[text]") {
  CHECK(fad::join({}, ", ").empty());
  CHECK(fad::join({"a"}, ", ") == "a");
  CHECK(fad::join({"a", "b", "c"}, ", ") == "a, b, c");
}

TEST_CASE("wrap_words breaks long lines at spaces and keeps the rest as it is", "[text]") {
  CHECK(fad::wrap_words("one two three four", 9) == "one two\nthree\nfour");
  CHECK(fad::wrap_words("short\n  kept   as is", 20) == "short\n  kept   as is");
  // A long line keeps its indent on every line it becomes.
  CHECK(fad::wrap_words("  aa bb cc dd", 8) == "  aa bb\n  cc dd");
  // A word longer than the width has a line of its own, uncut.
  CHECK(fad::wrap_words("see /usr/local/etc/fad/fad.json now", 10) == "see\n/usr/local/etc/fad/fad.json\nnow");
  // Characters, not bytes: "\xc3\xa9" is one column.
  CHECK(fad::wrap_words("caf\xc3\xa9 caf\xc3\xa9", 9) == "caf\xc3\xa9 caf\xc3\xa9");
  CHECK(fad::wrap_words("", 10).empty());
  CHECK(fad::wrap_words("a\n", 10) == "a\n");
}

TEST_CASE("utf8_prefix cuts before a character, never inside it", "[text]") {
  CHECK(fad::utf8_prefix("ninja -j8", 80) == "ninja -j8");
  CHECK(fad::utf8_prefix("ninja -j8", 5) == "ninja");
  // "é" is two bytes (C3 A9), "€" three (E2 82 AC), "𝄞" four (F0 9D 84 9E).
  CHECK(fad::utf8_prefix("caf\xC3\xA9", 4) == "caf");
  CHECK(fad::utf8_prefix("caf\xC3\xA9", 5) == "caf\xC3\xA9");
  CHECK(fad::utf8_prefix("x\xE2\x82\xAC", 2) == "x");
  CHECK(fad::utf8_prefix("x\xE2\x82\xAC", 3) == "x");
  CHECK(fad::utf8_prefix("x\xF0\x9D\x84\x9E!", 4) == "x");
  CHECK(fad::utf8_prefix("x\xF0\x9D\x84\x9E!", 5) == "x\xF0\x9D\x84\x9E");
  CHECK(fad::utf8_prefix("\xC3\xA9", 1).empty());
}

TEST_CASE("printable replaces C0, DEL, C1, bidi and invisible controls and keeps other UTF-8", "[text]") {
  CHECK(fad::printable("caf\xC3\xA9 \xE2\x82\xAC\x1b") == "caf\xC3\xA9 \xE2\x82\xAC?");
  CHECK(fad::printable("a\tb\x7f") == "a?b?");
  CHECK(fad::printable("c1\xC2\x9B"
                       "31m") == "c1?31m");         // U+009B, a CSI
  CHECK(fad::printable("\xC2\xA0") == "\xC2\xA0");  // U+00A0 is no control
  // Bidirectional formatting: U+202E, U+2066, U+200F, U+061C; U+2014 (a dash) stays.
  CHECK(fad::printable("a\xE2\x80\xAE"
                       "cba\xE2\x81\xA6x\xE2\x80\x8Fy\xD8\x9Cz") == "a?cba?x?y?z");
  CHECK(fad::printable("\xE2\x80\x94") == "\xE2\x80\x94");
  CHECK(fad::printable("a\xE2\x80\xA8"
                       "b\xE2\x80\xA9"
                       "c") == "a?b?c");  // line and paragraph separators
  // Invisible ones, which make two names look the same or shift a table's
  // columns: U+200B, U+2060, U+FEFF, U+00AD, U+034F, U+180E, U+206F, U+FFF9,
  // a tag (U+E0041); U+00E9, U+2070 (superscript 0) and U+1F600 stay.
  CHECK(fad::printable("a\xE2\x80\x8B"
                       "b\xE2\x81\xA0"
                       "c\xEF\xBB\xBF"
                       "d\xC2\xAD"
                       "e\xCD\x8F"
                       "f\xE1\xA0\x8E"
                       "g\xE2\x81\xAF"
                       "h\xEF\xBF\xB9"
                       "i\xF3\xA0\x81\x81"
                       "j") == "a?b?c?d?e?f?g?h?i?j");
  // Blank fillers that show as nothing: U+115F, U+1160, U+3164, U+FFA0 (Hangul), U+17B4, U+17B5 (Khmer).
  CHECK(fad::printable("\xE1\x85\x9F\xE1\x85\xA0"
                       "a\xE3\x85\xA4"
                       "b\xEF\xBE\xA0"
                       "c\xE1\x9E\xB4\xE1\x9E\xB5") == "??a?b?c??");
  CHECK(fad::printable("\xE1\x84\x80\xE3\x85\x81\xEF\xBE\xA1") == "\xE1\x84\x80\xE3\x85\x81\xEF\xBE\xA1");
  // Format characters and variation selectors that passed before (found by a
  // probe that made two users' build names look the same): U+180B, U+FE0F,
  // U+1D173, U+0600, U+13430, U+1BCA0, U+110BD, U+2800 (a blank), U+E0100.
  CHECK(fad::printable("a\xE1\xA0\x8B"
                       "b\xEF\xB8\x8F"
                       "c\xF0\x9D\x85\xB3"
                       "d\xD8\x80"
                       "e\xF0\x93\x90\xB0"
                       "f\xF0\x9B\xB2\xA0"
                       "g\xF0\x91\x82\xBD"
                       "h\xE2\xA0\x80"
                       "i\xF3\xA0\x84\x80"
                       "j") == "a?b?c?d?e?f?g?h?i?j");
  // Their neighbours are visible and stay: U+180A, U+FE10, U+1D172, U+0606, U+2801.
  CHECK(fad::printable("\xE1\xA0\x8A\xEF\xB8\x90\xF0\x9D\x85\xB2\xD8\x86\xE2\xA0\x81") ==
        "\xE1\xA0\x8A\xEF\xB8\x90\xF0\x9D\x85\xB2\xD8\x86\xE2\xA0\x81");
  // An overlong or cut-off form of one is not it (and is not valid UTF-8 anyway).
  CHECK(fad::printable("\xE2\x80") == "\xE2\x80");
  CHECK(fad::printable("\xC3\xA9\xE2\x81\xB0\xF0\x9F\x98\x80") == "\xC3\xA9\xE2\x81\xB0\xF0\x9F\x98\x80");
  CHECK(fad::has_control("build\xE2\x80\xAE"));
  CHECK(fad::has_control("x\ny"));
  CHECK_FALSE(fad::has_control("caf\xC3\xA9"));
}

TEST_CASE("printable_lines keeps line breaks and replaces every other control", "[text]") {
  CHECK(fad::printable_lines("finished A\x1b]0;T\x07.o in 2 s\nwarning: \xE2\x80\xAE\n") ==
        "finished A?]0;T?.o in 2 s\nwarning: ?\n");
  CHECK(fad::printable_lines("\n\nx") == "\n\nx");
  CHECK(fad::printable_lines("").empty());
}

TEST_CASE("printable_log keeps line breaks and tabs, and replaces every other control", "[text]") {
  CHECK(fad::printable_log("a.cu(3):\twarning\r\x1b]0;T\x07\n\xC2\x9B"
                           "2J\x7f\n") == "a.cu(3):\twarning??]0;T?\n?2J?\n");
  CHECK(fad::printable_log("\t\n") == "\t\n");
}

TEST_CASE("one_line joins a program's output into one bounded line", "[text]") {
  CHECK(fad::one_line("ls: bad option\nTry 'ls --help'.\n\n") == "ls: bad option / Try 'ls --help'.");
  CHECK(fad::one_line("a\r\n\x1b[2Jb") == "a / ?[2Jb");
  CHECK(fad::one_line(std::string(500, 'x'), 10) == "xxxxxxxxxx...");
  CHECK(fad::one_line("").empty());
}

TEST_CASE("valid_utf8 accepts well-formed UTF-8 only", "[text]") {
  using fad::valid_utf8;
  CHECK(valid_utf8(""));
  CHECK(valid_utf8("plain"));
  CHECK(valid_utf8("caf\xc3\xa9 \xe6\xbc\xa2 \xf0\x9f\x9a\x80"));
  CHECK_FALSE(valid_utf8("\xff"));              // never a UTF-8 byte
  CHECK_FALSE(valid_utf8("\xc3"));              // cut off
  CHECK_FALSE(valid_utf8("\xc3x"));             // a continuation missing
  CHECK_FALSE(valid_utf8("\x80"));              // a stray continuation
  CHECK_FALSE(valid_utf8("\xc0\xaf"));          // overlong '/'
  CHECK_FALSE(valid_utf8("\xed\xa0\x80"));      // a surrogate
  CHECK_FALSE(valid_utf8("\xf4\x90\x80\x80"));  // past U+10FFFF
}

TEST_CASE("utf8_char_at steps over whole characters and never past a lead byte", "[text]") {
  using fad::utf8_char_at;
  const std::string s = "a\xc3\xa9\xf0\x9f\x9a\x80";
  auto c = utf8_char_at(s, 1);
  CHECK(c.code == 0xE9);
  CHECK(c.length == 2);
  CHECK(c.well_formed);
  c = utf8_char_at(s, 3);
  CHECK(c.code == 0x1F680);
  CHECK(c.length == 4);
  // A cut-off sequence takes its continuation bytes and stops at the next lead.
  c = utf8_char_at("\xe6\xbcz", 0);
  CHECK_FALSE(c.complete);
  CHECK(c.length == 2);
  // A stray continuation, or a byte no character starts with, is one byte.
  CHECK(utf8_char_at("\x80", 0).length == 1);
  CHECK_FALSE(utf8_char_at("\xf8\x80\x80\x80", 0).complete);
  CHECK(utf8_char_at("\xf8\x80\x80\x80", 0).length == 1);
  // Complete but not well formed: what a terminal still draws as one glyph.
  c = utf8_char_at("\xc0\xaf", 0);
  CHECK(c.complete);
  CHECK_FALSE(c.well_formed);
}

TEST_CASE("utf8_or_question keeps UTF-8 and replaces every other byte one for one", "[text]") {
  using fad::utf8_or_question;
  CHECK(utf8_or_question("") == "");
  const std::string text =
      "\xe2\x80\x98"
      "caf\xc3\xa9\xe2\x80\x99 \xf0\x9f\x9a\x80";
  CHECK(utf8_or_question(text) == text);
  CHECK(utf8_or_question("a\xe9z") == "a?z");         // Latin-1
  CHECK(utf8_or_question("\x80\xff") == "??");        // stray, never UTF-8
  CHECK(utf8_or_question("\xc0\xaf.") == "??.");      // overlong: as many as its bytes
  CHECK(utf8_or_question("\xed\xa0\x80") == "???");   // a surrogate
  CHECK(utf8_or_question("\xf0\x9f\x9a") == "???");   // cut off
  CHECK(utf8_or_question("x\x1b[1m") == "x\x1b[1m");  // controls are printable()'s business
}

TEST_CASE("utf8_cut_tail finds a character cut short at the end", "[text]") {
  using fad::utf8_cut_tail;
  CHECK(utf8_cut_tail("") == 0);
  CHECK(utf8_cut_tail("abc") == 0);
  CHECK(utf8_cut_tail("caf\xc3\xa9") == 0);
  CHECK(utf8_cut_tail("caf\xc3") == 1);
  CHECK(utf8_cut_tail("a\xf0\x9f") == 2);
  CHECK(utf8_cut_tail("a\xf0\x9f\x9a") == 3);
  CHECK(utf8_cut_tail("a\xf0\x9f\x9a\x80") == 0);
  CHECK(utf8_cut_tail("\x80\x80") == 0);  // stray continuations: nothing to wait for
  CHECK(utf8_cut_tail("a\xff") == 0);     // never UTF-8: nothing to wait for
}
