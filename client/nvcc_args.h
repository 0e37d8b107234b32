// Reading an nvcc command line as a launcher must: is it a compile (worth
// scheduling) or something quick (--version, a link, -M), which file does it
// compile, for which archs, and how to give it the --threads fad grants. Pure.
#pragma once

#include <string>
#include <vector>

namespace fad::client {

struct NvccCall {
  bool compile = false;  ///< -c / -dc / --compile: a compile unit
  std::string source;    ///< as written (relative to the caller's cwd)
  std::string output;    ///< -o value, as written; may be empty
  /// Distinct virtual archs compiled, in display form ("9.0", "12.0a"): nvcc
  /// runs one front end per virtual arch, which is what --threads parallelises
  /// and what multiplies memory; code=[compute_90,sm_90] is one, not two.
  std::vector<std::string> archs;
  /// -I / --include-path directories, as written, in order (where quoted
  /// includes are looked for after the including file's directory).
  std::vector<std::string> include_dirs;
};

/// Parses nvcc arguments (without the program name). `exists` tells whether a
/// path names a file, so option values are not mistaken for the source.
NvccCall parse_nvcc_call(const std::vector<std::string>& args, bool (*exists)(const std::string&));

/// The --threads/-t value the call asks for (the last one); 1 when none (nvcc's
/// default), 0 for "as many as archs".
int requested_threads(const std::vector<std::string>& args);

/// `args` with every --threads/-t setting replaced by "--threads N".
std::vector<std::string> with_threads(const std::vector<std::string>& args, int threads);

}  // namespace fad::client
