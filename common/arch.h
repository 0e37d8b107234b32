// GPU architecture names as users write them ("12.0", "120", "sm_120",
// "compute_120", "9.0a", "sm_90a") and as nvcc wants them.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace fad {

/// One target architecture: compute capability number (e.g. 90, 120) and an
/// optional feature suffix: 'a' (arch-specific) or 'f' (family-specific), 0 if none.
struct Arch {
  int number = 0;
  char suffix = 0;

  std::string display() const;  ///< "12.0", "9.0a"
  std::string sm() const;       ///< "sm_120", "sm_90a"
  std::string compute() const;  ///< "compute_120", "compute_90a"
  /// nvcc argument pair value: "arch=compute_90a,code=sm_90a".
  std::string gencode() const;

  friend bool operator==(const Arch& a, const Arch& b) { return a.number == b.number && a.suffix == b.suffix; }
  friend bool operator!=(const Arch& a, const Arch& b) { return !(a == b); }
  friend bool operator<(const Arch& a, const Arch& b) {
    return a.number != b.number ? a.number < b.number : a.suffix < b.suffix;
  }
};

/// Parses one arch string in any accepted spelling. Errors quote the input.
Result<Arch> parse_arch(std::string_view text);

/// The most distinct archs one build or compile may name: nvcc knows about
/// twenty, and each is a compile of every unit, a row of every listing.
inline constexpr std::size_t kMaxArchs = 64;

/// Parses repeated and comma-separated arch arguments ("8.0,9.0" "12.0"),
/// dropping duplicates while keeping the first-seen order; more than
/// kMaxArchs distinct archs is an error.
Result<std::vector<Arch>> parse_arch_list(const std::vector<std::string>& args);

/// Parses the output of `nvcc --list-gpu-arch` (one "compute_XX" per line).
/// Lines that are not compute_XX are ignored.
std::vector<Arch> parse_nvcc_arch_list(std::string_view text);

/// Checks that nvcc can build every requested arch: the base number must be in
/// `supported`; an 'a' suffix needs number >= 90, an 'f' suffix number >= 100.
/// The error names the rejected arch and lists the buildable ones in display form.
Status validate_archs(const std::vector<Arch>& requested, const std::vector<Arch>& supported);

}  // namespace fad
