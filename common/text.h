// Small string helpers shared by the daemon and the client.
#pragma once

#include <algorithm>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include "common/utf8.h"

namespace fad {

/// The parts with `sep` between them ("" for none).
inline std::string join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (const auto& p : parts) {
    if (!out.empty()) out += sep;
    out += p;
  }
  return out;
}

/// `text` with each line longer than `width` characters broken at spaces
/// into lines of at most `width`, each indented as the line was (a word
/// longer than that keeps a line of its own); lines that fit, and the text's
/// own line breaks, are kept as they are. For help text on a terminal.
inline std::string wrap_words(std::string_view text, std::size_t width) {
  // Characters, not bytes: a continuation byte is 10xxxxxx.
  auto columns = [](std::string_view s) {
    return static_cast<std::size_t>(
        std::count_if(s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
  };
  std::string out;
  for (std::size_t start = 0;;) {
    const std::size_t end = std::min(text.find('\n', start), text.size());
    const std::string_view line = text.substr(start, end - start);
    if (columns(line) <= width) {
      out += line;
    } else {
      const std::string indent(line.substr(0, std::min(line.find_first_not_of(' '), line.size())));
      std::string current = indent;
      std::size_t used = indent.size();
      for (std::size_t at = indent.size(); at < line.size();) {
        const std::size_t space = std::min(line.find(' ', at), line.size());
        const std::string_view word = line.substr(at, space - at);
        at = space + 1;
        if (word.empty()) continue;  // a run of spaces: one is put back between words
        const std::size_t w = columns(word);
        if (used > indent.size() && used + 1 + w > width) {
          out += current + "\n";
          current = indent;
          used = indent.size();
        }
        if (used > indent.size()) current += ' ', ++used;
        current += word;
        used += w;
      }
      out += current;
    }
    if (end == text.size()) break;
    out += '\n';
    start = end + 1;
  }
  return out;
}

/// At most `max_bytes` of `text`, cut before a UTF-8 character rather than
/// inside it (a name shown in every user's listing stays valid UTF-8).
inline std::string utf8_prefix(std::string_view text, std::size_t max_bytes) {
  if (text.size() <= max_bytes) return std::string(text);
  std::size_t cut = max_bytes;
  // Continuation bytes are 10xxxxxx: back off to the start of their character.
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return std::string(text.substr(0, cut));
}

/// Whether code point `c` is a bidirectional formatting character, a line
/// or paragraph separator, or one that shows as nothing: Unicode's format
/// characters (category Cf: U+00AD, U+0600-5, U+200B-F, U+2060-F, U+FEFF,
/// U+FFF9-B, the tags U+E0000-7F, the Egyptian, shorthand and musical
/// format controls...), the other default-ignorable ones (U+034F, the
/// variation selectors U+180B-F, U+FE00-F and U+E0100-EF) and the blank
/// fillers (U+115F-60, U+17B4-5, U+2800, U+3164, U+FFA0). The first reorder
/// what follows them on screen, so that a listing can show another text
/// than it holds; the second break lines; the rest make two names that
/// differ look the same, or shift a table's columns.
inline bool format_control(char32_t c) {
  struct Range {
    char32_t first, last;
  };
  static constexpr Range kRanges[] = {
      {0x00AD, 0x00AD},   {0x034F, 0x034F},   {0x0600, 0x0605},   {0x061C, 0x061C},   {0x06DD, 0x06DD},
      {0x070F, 0x070F},   {0x0890, 0x0891},   {0x08E2, 0x08E2},   {0x115F, 0x1160},   {0x17B4, 0x17B5},
      {0x180B, 0x180F},   {0x200B, 0x200F},   {0x2028, 0x202E},   {0x2060, 0x206F},   {0x2800, 0x2800},
      {0x3164, 0x3164},   {0xFE00, 0xFE0F},   {0xFEFF, 0xFEFF},   {0xFFA0, 0xFFA0},   {0xFFF0, 0xFFFB},
      {0x110BD, 0x110BD}, {0x110CD, 0x110CD}, {0x13430, 0x1343F}, {0x1BCA0, 0x1BCA3}, {0x1D173, 0x1D17A},
      {0xE0000, 0xE0FFF},
  };
  const auto* r = std::upper_bound(std::begin(kRanges), std::end(kRanges), c,
                                   [](char32_t v, const Range& range) { return v < range.first; });
  return r != std::begin(kRanges) && c <= (r - 1)->last;
}

/// How many bytes at `s[i]` encode a format_control() character; 0 if none.
inline std::size_t format_control_at(std::string_view s, std::size_t i) {
  if (static_cast<unsigned char>(s[i]) < 0xC2) return 0;  // ASCII, or no lead byte of one
  const Utf8Char c = utf8_char_at(s, i);
  return c.well_formed && format_control(c.code) ? c.length : 0;
}

/// `s` safe to print on a terminal: control characters (C0, DEL, C1 as
/// UTF-8, e.g. U+009B, a CSI to some terminals, bidirectional formatting and
/// line separators) become '?'. Names and commands come from other users: an
/// escape sequence in one must not rewrite your screen, clipboard or title.
/// The C0 characters in `keep` (a log's '\n') pass as they are.
inline std::string printable(std::string_view s, std::string_view keep = {}) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 && keep.find(static_cast<char>(c)) != std::string_view::npos) {
      out += static_cast<char>(c);
    } else if (c < 0x20 || c == 0x7f) {
      out += '?';
    } else if (c == 0xC2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) >= 0x80 &&
               static_cast<unsigned char>(s[i + 1]) <= 0x9F) {
      out += '?';
      ++i;
    } else if (const auto n = format_control_at(s, i)) {
      out += '?';
      i += n - 1;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

/// printable() line by line, the line breaks kept: text of several lines
/// (a log) with no other control character.
inline std::string printable_lines(std::string_view s) { return printable(s, "\n"); }

/// Compiler output shown on a terminal: printable_lines() that keeps tabs
/// too. A compiler prints what its sources make it print (a #warning, a file
/// name), and a log its owner can edit may be read by root.
inline std::string printable_log(std::string_view s) { return printable(s, "\n\t"); }

/// Another program's output as part of a one-line message: its lines joined
/// by " / ", controls as '?', at most `max_bytes` (then "...").
inline std::string one_line(std::string_view s, std::size_t max_bytes = 300) {
  std::string joined;
  std::size_t start = 0;
  while (start <= s.size()) {
    auto end = s.find('\n', start);
    if (end == std::string_view::npos) end = s.size();
    auto line = s.substr(start, end - start);
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.remove_suffix(1);
    if (!line.empty()) joined += (joined.empty() ? "" : " / ") + std::string(line);
    start = end + 1;
  }
  joined = printable(joined);
  return joined.size() > max_bytes ? utf8_prefix(joined, max_bytes) + "..." : joined;
}

/// Whether `s` holds a control character printable() would replace.
inline bool has_control(std::string_view s) { return printable(s) != s; }

/// Whether every character of `s` (UTF-8) shows as blank: spaces of any
/// width (U+00A0, U+2000-U+200A, U+3000, ...) and the blank fillers (U+3164,
/// U+2800). A name made of them is an empty row in every user's listing.
inline bool blank(std::string_view s) {
  static constexpr char32_t kBlank[] = {0x20,   0xA0,   0x1680, 0x115F, 0x1160, 0x2000, 0x2001, 0x2002,
                                        0x2003, 0x2004, 0x2005, 0x2006, 0x2007, 0x2008, 0x2009, 0x200A,
                                        0x202F, 0x205F, 0x2800, 0x3000, 0x3164, 0xFFA0};
  for (std::size_t i = 0; i < s.size();) {
    if (s[i] == ' ') {
      ++i;
      continue;
    }
    const Utf8Char c = utf8_char_at(s, i);
    if (!c.well_formed || std::find(std::begin(kBlank), std::end(kBlank), c.code) == std::end(kBlank)) return false;
    i += c.length;
  }
  return true;
}

/// Whether `s` is well-formed UTF-8 (no stray or missing continuation bytes,
/// no overlong forms, no surrogates, nothing past U+10FFFF). JSON carries
/// only UTF-8: anything else would reach fadd silently changed.
inline bool valid_utf8(std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    const auto c = utf8_char_at(s, i);
    if (!c.well_formed) return false;
    i += c.length;
  }
  return true;
}

/// `s` with each byte that is not part of a well-formed UTF-8 character as
/// '?', one for one (offsets into `s` still hold): what JSON can carry, with
/// well-formed text (a compiler's quotes in a UTF-8 locale) as it was.
inline std::string utf8_or_question(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    const auto c = utf8_char_at(s, i);
    if (c.well_formed)
      out.append(s.substr(i, c.length));
    else
      out.append(c.length, '?');
    i += c.length;
  }
  return out;
}

/// A word the user gave (an argument, a path) shown back in a message on one
/// line: controls and bytes that are not UTF-8 as '?'.
inline std::string shown_word(std::string_view s) { return printable(utf8_or_question(s)); }

/// How many bytes at the end of `s` are a UTF-8 character cut short: a lead
/// byte and fewer continuation bytes than it announces. 0 if none. A slice of
/// a growing file may end inside a character its next slice completes.
inline std::size_t utf8_cut_tail(std::string_view s) {
  for (std::size_t back = 1; back <= 3 && back <= s.size(); ++back) {
    const auto b = static_cast<unsigned char>(s[s.size() - back]);
    if ((b & 0xC0) == 0x80) continue;  // a continuation byte: its lead is further back
    const std::size_t needs = (b >> 5) == 0x6 ? 2 : (b >> 4) == 0xE ? 3 : (b >> 3) == 0x1E ? 4 : 1;
    return needs > back ? back : 0;
  }
  return 0;
}

}  // namespace fad
