// The kernels manifest (kernels/manifest.json): the compile units of the bundled
// library, their families, flags and measured priors. Parsing is pure.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "policy/estimator.h"

namespace fad {

struct ManifestUnit {
  std::string name;    ///< unique, [a-z0-9_]+
  std::string source;  ///< relative to the kernels dir
  std::string family;
  std::vector<std::string> flags;
  ManifestPrior prior;    ///< zeros when never measured
  bool required = false;  ///< built whenever the glob selects any unit (the library needs it to link)
};

struct Manifest {
  int version = 1;
  std::string library;  ///< "fad_attention" -> libfad_attention.so
  std::vector<std::string> include_dirs;
  std::vector<std::string> flags;
  std::vector<std::string> link_flags;
  std::vector<ManifestUnit> units;
};

/// Parses manifest text; errors name the file and the offending unit or field.
Result<Manifest> parse_manifest(std::string_view text, std::string_view filename);
/// Reads `<kernels_dir>/manifest.json`.
Result<Manifest> load_manifest(const std::string& kernels_dir);

}  // namespace fad
