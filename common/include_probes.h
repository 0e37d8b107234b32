// The files a compile asked about without reading them. `__has_include("x.h")`
// decides code by whether a header exists, and a header that was not there
// (or was not included) is in no dependency file: the compile cache would
// serve the old object after `x.h` appeared or went. So the cache records,
// for every literal probe in the files a compile read, which of the places
// the compiler would look hold that name, and checks them again on a lookup.
// A probe through a macro (`#define HAS(x) __has_include(x)`) is not seen,
// nor are the compiler's built-in system directories. Pure.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/paths.h"

namespace fad {

/// One `__has_include(...)` or `__has_include_next(...)` with a literal name.
struct IncludeProbe {
  std::string name;     ///< as written between the quotes or angle brackets
  bool quoted = false;  ///< "name": the including file's directory is searched first
  bool operator==(const IncludeProbe&) const = default;
};

/// The literal probes in `text`, in order, without duplicates.
std::vector<IncludeProbe> find_include_probes(std::string_view text);

/// The directories a compile's `#include` searches beyond the including
/// file's own, as given: `-I`, `-isystem` (nvcc's and, in `-Xcompiler`
/// values, gcc's `-iquote` and `-idirafter` too), then `INCLUDES` and
/// `SYSTEM_INCLUDES` (which nvcc.profile adds) and `CPATH`,
/// `C_INCLUDE_PATH`, `CPLUS_INCLUDE_PATH`. Relative ones are relative to the
/// working directory. Without duplicates.
std::vector<std::string> include_search_dirs(const std::vector<std::string>& args, const EnvLookup& env);

/// The paths whose existence answers `probe` made in a file in `file_dir`:
/// `file_dir`/name for a quoted one, then DIR/name for each of `dirs`.
std::vector<std::string> probe_candidates(const IncludeProbe& probe, const std::string& file_dir,
                                          const std::vector<std::string>& dirs);

}  // namespace fad
