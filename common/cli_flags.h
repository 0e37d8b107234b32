// Flags (options that take no value) given one anyway: CLI11 reads
// "--json=0" as off, "--wait=no" as on and "-h=1" as -h, so a user's
// "--wait=no" would silently wait. A flag is given or not. Header-only, for
// the programs that parse with CLI11 (fad and fadd).
#pragma once

#include <optional>
#include <string>

#include <CLI/CLI.hpp>

namespace fad {

/// An option that takes no value. (CLI11 2.1's get_type_size() is never 0,
/// even for a flag; the most values it takes is.)
inline bool is_flag(const CLI::Option* opt) { return opt->get_expected_max() == 0; }

/// "--FLAG=VALUE" or "-F=VALUE" where that names one of `app`'s flags:
/// "--FLAG: a flag takes no value, got 'VALUE'"; nullopt for any other word.
inline std::optional<std::string> flag_value_problem(const CLI::App& app, const std::string& word) {
  const auto eq = word.find('=');
  if (eq == std::string::npos || word.size() < 2 || word[0] != '-') return std::nullopt;
  const std::string name = word.substr(0, eq);
  const bool long_name = name.rfind("--", 0) == 0;
  if (!long_name && name.size() != 2) return std::nullopt;
  for (const CLI::Option* opt : app.get_options()) {
    if (!is_flag(opt)) continue;
    if (long_name ? opt->check_lname(name.substr(2)) : opt->check_sname(name.substr(1))) {
      const std::string value = word.substr(eq + 1);
      return name + ": a flag takes no value" + (value.empty() ? "" : ", got '" + value + "'");
    }
  }
  return std::nullopt;
}

}  // namespace fad
