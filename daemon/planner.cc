// Build planning; see planner.h.
#include "daemon/planner.h"

#include <fnmatch.h>

#include <algorithm>
#include <filesystem>

#include "common/file_read.h"
#include "common/text.h"

namespace fad {

namespace fs = std::filesystem;

std::string artifact_path(const std::string& build_dir, const Manifest& manifest) {
  return build_dir + "/lib/lib" + manifest.library + ".so";
}

namespace {

// Kernel sources and headers are text; a file larger than this is not one.
constexpr std::size_t kMaxSourceBytes = 64u << 20;

Result<std::string> read_file(const fs::path& path) {
  return read_regular_file(path.string(), kMaxSourceBytes, "kernel source");
}

// Every unit includes the shared headers, so their content is part of each key:
// editing a template header must not reuse the old profile as "exact".
std::string headers_hash(const Manifest& manifest, const fs::path& kernels_dir) {
  std::vector<fs::path> files;
  for (const auto& dir : manifest.include_dirs) {
    std::error_code ec;
    for (fs::recursive_directory_iterator it(kernels_dir / dir, ec), end; !ec && it != end; it.increment(ec)) {
      auto ext = it->path().extension().string();
      if (it->is_regular_file() && (ext == ".h" || ext == ".cuh" || ext == ".hpp")) files.push_back(it->path());
    }
  }
  std::sort(files.begin(), files.end());
  std::string all;
  for (const auto& f : files)
    if (auto text = read_file(f)) all += f.filename().string() + '\0' + *text;
  return content_hash(all);
}

}  // namespace

UnitKey unit_key(const UnitRecord& u) {
  return UnitKey{u.source,
                 u.content_hash,
                 u.flags,
                 join(u.archs, ","),
                 u.compiler,
                 u.family,
                 std::max<int>(1, static_cast<int>(u.archs.size())),
                 u.scope};
}

Result<std::vector<UnitRecord>> plan_build(const Manifest& manifest, const PlanRequest& req) {
  const fs::path kdir(req.kernels_dir);
  const std::string build_dir = req.state_dir + "/builds/{build}";
  const std::string headers = headers_hash(manifest, kdir);

  std::vector<std::string> arch_args;
  std::vector<std::string> arch_names;
  for (const auto& a : req.archs) {
    arch_args.push_back("-gencode");
    arch_args.push_back(a.gencode());
    arch_names.push_back(a.display());
  }

  // A required unit (the library's entry points) joins any non-empty
  // selection: a subset of the kernels still links into a usable library.
  const auto selected = [&](const ManifestUnit& mu) { return ::fnmatch(req.glob.c_str(), mu.name.c_str(), 0) == 0; };
  const bool any = std::any_of(manifest.units.begin(), manifest.units.end(),
                               [&](const ManifestUnit& mu) { return !mu.required && selected(mu); });
  std::vector<UnitRecord> units;
  std::vector<std::string> objects;
  for (const auto& mu : manifest.units) {
    if (!selected(mu) && !(mu.required && any)) continue;
    auto text = read_file(kdir / mu.source);
    if (!text) return make_error(text.error());
    UnitRecord u;
    u.seq = static_cast<int>(units.size());
    u.name = mu.name;
    u.kind = UnitKind::compile;
    u.source = mu.source;
    u.family = mu.family;
    u.archs = arch_names;
    u.output_path = build_dir + "/obj/" + mu.name + ".o";
    u.log_path = build_dir + "/logs/" + mu.name + ".log";
    std::vector<std::string> flags = manifest.flags;
    flags.insert(flags.end(), mu.flags.begin(), mu.flags.end());
    for (const auto& inc : manifest.include_dirs) flags.push_back("-I" + (kdir / inc).string());
    u.argv = {req.toolchain.path, "-c", (kdir / mu.source).string(), "-o", u.output_path};
    u.argv.insert(u.argv.end(), flags.begin(), flags.end());
    u.argv.insert(u.argv.end(), arch_args.begin(), arch_args.end());
    u.content_hash = content_hash(*text + '\0' + headers);
    u.source_bytes = text->size();
    // Include paths differ between installs; they are not part of what is compiled.
    u.flags = join(std::vector<std::string>(manifest.flags.begin(), manifest.flags.end()), " ") +
              (mu.flags.empty() ? "" : " " + join(mu.flags, " "));
    u.compiler = req.toolchain.version;
    u.prior_peak = mu.prior.peak_bytes;
    u.prior_duration_s = mu.prior.duration_s;
    u.key = unit_key(u).exact();
    objects.push_back(u.output_path);
    units.push_back(std::move(u));
  }
  if (units.empty()) {
    std::string names;
    for (std::size_t i = 0; i < manifest.units.size() && i < 3; ++i) names += (i ? ", " : "") + manifest.units[i].name;
    return make_error("no kernel unit matches '" + req.glob + "' (units are named like " + names + ")");
  }

  UnitRecord link;
  link.seq = static_cast<int>(units.size());
  link.name = "link";
  link.kind = UnitKind::link;
  link.source = "";
  link.family = "link";
  link.archs = arch_names;
  link.output_path = artifact_path(build_dir, manifest);
  link.log_path = build_dir + "/logs/link.log";
  // Written under a temporary name and renamed by the daemon once nvcc succeeded,
  // so a crash never leaves a half-written library at the published path.
  link.argv = {req.toolchain.path, "-shared", "-o", link.output_path + ".tmp"};
  link.argv.insert(link.argv.end(), objects.begin(), objects.end());
  link.argv.insert(link.argv.end(), manifest.link_flags.begin(), manifest.link_flags.end());
  link.argv.insert(link.argv.end(), arch_args.begin(), arch_args.end());
  link.compiler = req.toolchain.version;
  link.flags = join(manifest.link_flags, " ");
  link.key = unit_key(link).exact();
  units.push_back(std::move(link));
  return units;
}

}  // namespace fad
