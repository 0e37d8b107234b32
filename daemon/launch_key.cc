// The learning key of a launched compile; see launch_key.h.
#include "daemon/launch_key.h"

#include <filesystem>

#include "common/hash.h"
#include "common/project_root.h"
#include "common/text.h"
#include "policy/unit_key.h"

namespace fad {

namespace fs = std::filesystem;

namespace {

// Past this, a learning key's flags are a prefix and a digest.
constexpr std::size_t kMaxKeyFlagsBytes = 2048;

// Flags whose value names one of this call's own files rather than how it
// compiles: left out, so the same kernel built elsewhere is known.
bool takes_path_value(const std::string& a) {
  return a == "-o" || a == "-MF" || a == "-MT" || a == "-MQ" || a == "--output-file" || a == "-odir" ||
         a == "--output-directory" || a == "--dependency-output";
}

// Options whose value is a file of more options: its name says nothing of
// what it holds, so it is kept as given, never relabelled (the same name in
// two projects may list different archs or defines).
bool names_options_file(const std::string& a) { return a == "-optf" || a == "--options-file"; }

// The arguments of `argv` (the compiler first) that say how it compiles:
// without the source, the files it writes (-o, dependency files) and the
// thread count fadd chooses; paths under `root` (project_root()) as
// "<root>/...". Past 2 KiB a prefix and a digest.
std::string key_flags(const std::vector<std::string>& argv, const std::string& source, const std::string& root) {
  const fs::path source_name = fs::path(source).filename();
  std::string out;
  for (std::size_t i = 1; i < argv.size(); ++i) {
    const auto& a = argv[i];
    if (takes_path_value(a) || a == "--threads" || a == "-t") {
      ++i;
      continue;
    }
    if (a.rfind("--threads=", 0) == 0 || a.rfind("--dependency-output=", 0) == 0 || a == source ||
        fs::path(a).filename() == source_name)
      continue;
    out += out.empty() ? "" : " ";
    if (names_options_file(a) && i + 1 < argv.size()) {
      out += a + " " + argv[++i];
      continue;
    }
    const bool options_file = a.rfind('@', 0) == 0 || a.rfind("--options-file=", 0) == 0 || a.rfind("-optf=", 0) == 0;
    out += options_file ? a : replace_root(a, root, kProjectRootMark);
  }
  // Only ever compared whole: past a length no real compile reaches, a digest
  // tells the same flags apart as well, and the rows stay small.
  if (out.size() > kMaxKeyFlagsBytes) out = utf8_prefix(out, kMaxKeyFlagsBytes / 2) + " ...sha256:" + sha256_hex(out);
  return out;
}

/// "flash_fwd_hdim128_fp16_sm80.cu" -> "flash_fwd_hdim_fp_sm": siblings that
/// differ in head dim or dtype share a family and inform each other's estimates.
std::string family_of(const std::string& source) {
  std::string stem = fs::path(source).stem().string(), out;
  for (char c : stem)
    if (c < '0' || c > '9') out += c;
  return out;
}

}  // namespace

LaunchKey launch_key(const std::vector<std::string>& argv, const std::string& cwd, const std::string& source,
                     bool content_known) {
  // Without the source's content hash, "<root>/k.cu" would be every
  // project's k.cu: such a call keeps its absolute paths, as before roots.
  const std::string root = content_known ? project_root(cwd, source) : "";
  return LaunchKey{replace_root(source, root, kProjectRootMark), key_flags(argv, source, root), family_of(source)};
}

}  // namespace fad
