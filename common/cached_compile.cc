// A compile call's use of the cache; see cached_compile.h.
#include "common/file_read.h"
#include "common/cached_compile.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <random>

#include "common/compiler_identity.h"
#include "common/depfile.h"
#include "common/file_write.h"
#include "common/hash.h"
#include "common/include_probes.h"
#include "common/stale_temps.h"

namespace fad {

namespace fs = std::filesystem;

namespace {

// A manifest keeps this many header sets of one call key, newest first.
constexpr std::size_t kManifestEntries = 16;
// A header set's paths answering __has_include probes (include_probes.h) are
// marked so, with whether a file was there; past this many, not stored.
constexpr char kProbeMark = '\x02';
constexpr std::size_t kMaxProbePaths = 4096;
constexpr const char* kPresent = "present";
constexpr const char* kAbsent = "absent";

// As __has_include answers: a file (not a directory) by that name.
bool probe_finds(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && !S_ISDIR(st.st_mode);
}

bool regular_file_in(const std::string& path, const std::string& cwd) {
  struct stat st {};
  return ::stat(absolute_in(path, cwd).c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

/// A build tool never sees half an object (see file_write.h).
bool write_atomically(const std::string& path, const std::string& bytes) {
  return static_cast<bool>(write_file_atomically(path, bytes));
}

std::int64_t ns_of(const timespec& t) { return static_cast<std::int64_t>(t.tv_sec) * 1000000000 + t.tv_nsec; }

std::string result_key_of(const std::string& call_key, const std::vector<std::pair<std::string, std::string>>& files) {
  Sha256 h;
  h.field(call_key);
  for (const auto& [path, hash] : files) h.field(path).field(hash);
  return h.hex();
}

}  // namespace

CachedCompile::CachedCompile(CompileCache& cache, const std::vector<std::string>& argv, const std::string& cwd,
                             const EnvLookup& env, const std::string& compiler, std::string own_depfile,
                             std::optional<std::string> known_identity)
    : cache_(cache), cwd_(cwd), own_depfile_(std::move(own_depfile)) {
  const auto args = with_environment_flags(argv, env);
  plan_ = plan_cache(args, cwd, regular_file_in);
  if (!plan_.cacheable) return;
  if (auto why = environment_uncacheable_reason(env); !why.empty()) {
    plan_.cacheable = false;
    plan_.reason = why;
    return;
  }
  search_dirs_ = include_search_dirs(args, env);
  auto source = read_whole_file(absolute_in(plan_.source, cwd));
  if (!source) {
    plan_.cacheable = false;
    plan_.reason = "cannot read the source " + plan_.source;
    return;
  }
  source_hash_ = sha256_hex(*source);
  Result<std::string> nvcc =
      known_identity ? Result<std::string>(*known_identity) : compiler_identity(compiler, &cache_);
  if (!nvcc) {
    plan_.cacheable = false;
    plan_.reason = nvcc.error();
    return;
  }
  compiler_version_ = version_line(*nvcc);
  KeyInputs inputs;
  inputs.compiler_identity = *nvcc;
  const std::string host = host_compiler_program(plan_.host_compiler, env, cwd);
  if (!host.empty()) {
    auto host_identity = compiler_identity(host, &cache_);
    inputs.host_compiler_identity = host_identity ? *host_identity : "unidentified " + host;
  }
  inputs.source_hash = source_hash_;
  inputs.environment = compiler_environment(env);
  call_key_ = call_key(plan_, inputs);
  if (plan_.user_depfile.empty() && own_depfile_.empty()) {
    static std::mt19937_64 rng{std::random_device{}()};
    // Named after this process, so that one killed before its destructor ran
    // leaves nothing for good: the user's next compile stored or run removes it.
    own_depfile_ =
        (fs::temp_directory_path() / (temp_name_start(kDepfilePrefix) + std::to_string(rng() & 0xffffffff) + ".d"))
            .string();
    own_depfile_temporary_ = true;
  }
}

CachedCompile::~CachedCompile() {
  if (own_depfile_temporary_) ::unlink(own_depfile_.c_str());
}

std::vector<std::string> CachedCompile::extra_args() const {
  if (!plan_.cacheable || !plan_.user_depfile.empty()) return {};
  return {"--generate-dependencies-with-compile", "--dependency-output", own_depfile_};
}

std::string CachedCompile::depfile_to_read() const {
  return plan_.user_depfile.empty() ? own_depfile_ : absolute_in(plan_.user_depfile, cwd_);
}

std::optional<CompileResult> CachedCompile::restore() {
  if (!plan_.cacheable) {
    cache_.count(CacheEvent::uncacheable);
    return std::nullopt;
  }
  auto manifest = cache_.manifest(call_key_);
  std::map<std::string, std::optional<std::string>> hashes;  // files shared by header sets are read once
  auto hash_of = [&](const std::string& path) -> const std::optional<std::string>& {
    auto it = hashes.find(path);
    if (it != hashes.end()) return it->second;
    auto text = read_whole_file(path);
    return hashes.emplace(path, text ? std::optional<std::string>(sha256_hex(*text)) : std::nullopt).first->second;
  };
  for (const auto& entry : manifest ? manifest->entries : std::vector<CacheManifestEntry>{}) {
    const bool same = std::all_of(entry.files.begin(), entry.files.end(), [&](const auto& file) {
      if (!file.first.empty() && file.first[0] == kProbeMark)
        return file.second ==
               (probe_finds(absolute_in(unmark_root(file.first.substr(1), plan_.root), cwd_)) ? kPresent : kAbsent);
      const auto& now = hash_of(absolute_in(unmark_root(file.first, plan_.root), cwd_));
      return now && *now == file.second;
    });
    if (!same) continue;
    auto result = cache_.result(entry.result_key);
    if (!result) continue;
    if (result->depfile_template.has_value() != !plan_.user_depfile.empty()) continue;
    if (!write_atomically(absolute_in(plan_.output, cwd_), result->object)) break;  // nvcc will say why
    if (result->depfile_template &&
        !write_atomically(absolute_in(plan_.user_depfile, cwd_),
                          expand_depfile_template(*result->depfile_template, plan_.output, plan_.root)))
      break;
    cache_.count(CacheEvent::hit);
    return result;
  }
  cache_.count(CacheEvent::miss);
  return std::nullopt;
}

Status CachedCompile::store(std::chrono::system_clock::time_point started, const std::string& stdout_text,
                            const std::string& stderr_text) {
  if (!plan_.cacheable) return ok_status();
  // Here, after a compile, not on every lookup: a hit costs milliseconds,
  // and a temporary directory of many entries as much again to read.
  if (own_depfile_temporary_) sweep_stale_temps(fs::path(own_depfile_).parent_path().string(), StaleTemps::depfiles);
  const std::string depfile_path = depfile_to_read();
  auto depfile = read_whole_file(depfile_path);
  if (!depfile) return make_error("the compile wrote no dependency file " + depfile_path);
  const std::int64_t started_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(started.time_since_epoch()).count();
  std::vector<std::pair<std::string, std::string>> files;
  std::vector<std::string> probed;  // paths whose existence a probe asked about
  for (const auto& path : depfile_prerequisites(*depfile)) {
    const std::string abs = absolute_in(path, cwd_);
    struct stat st {};
    if (::stat(abs.c_str(), &st) != 0) return make_error("a file the compile read is gone: " + abs);
    // Changed while the compile ran: which version went into the object is unknown.
    if (ns_of(st.st_mtim) >= started_ns || ns_of(st.st_ctim) >= started_ns) return ok_status();
    // A filesystem that keeps whole seconds (ext4 with 128-byte inodes, some
    // network ones) dates a change later in the compile's first second
    // before it started: a time in that second may be either.
    const std::int64_t started_second = started_ns / 1000000000 * 1000000000;
    if ((st.st_mtim.tv_nsec == 0 && ns_of(st.st_mtim) >= started_second) ||
        (st.st_ctim.tv_nsec == 0 && ns_of(st.st_ctim) >= started_second))
      return ok_status();
    auto text = read_whole_file(abs);
    if (!text) return make_error("cannot read " + abs);
    if (uses_time_macros(*text)) return ok_status();  // the object holds the time of the compile
    files.emplace_back(mark_root(path, plan_.root), sha256_hex(*text));
    for (const auto& probe : find_include_probes(*text))
      for (auto& candidate : probe_candidates(probe, fs::path(path).parent_path().string(), search_dirs_))
        if (std::find(probed.begin(), probed.end(), candidate) == probed.end()) probed.push_back(std::move(candidate));
    if (probed.size() > kMaxProbePaths) return ok_status();
  }
  for (const auto& path : probed) {
    const std::string abs = absolute_in(path, cwd_);
    struct stat st {};
    const bool exists = ::stat(abs.c_str(), &st) == 0;
    // Appeared while the compile ran: whether the compile saw it is unknown.
    if (exists && (ns_of(st.st_mtim) >= started_ns || ns_of(st.st_ctim) >= started_ns)) return ok_status();
    // As probe_finds() answers, from the one stat.
    files.emplace_back(kProbeMark + mark_root(path, plan_.root), exists && !S_ISDIR(st.st_mode) ? kPresent : kAbsent);
  }
  CompileResult result;
  const std::string output = absolute_in(plan_.output, cwd_);
  // Written to /dev/null (or another device): no object to keep, and the
  // empty read of it must never be served to a compile that wants one.
  if (struct stat st{}; ::stat(output.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) return ok_status();
  auto object = read_whole_file(output);
  if (!object) return make_error("the compile wrote no " + plan_.output);
  result.object = std::move(*object);
  if (!plan_.user_depfile.empty()) {
    const bool output_marked = depfile_safe_path(plan_.output);
    result.depfile_template = make_depfile_template(*depfile, output_marked ? plan_.output : "", plan_.root);
    if (!result.depfile_template) return ok_status();
  }
  result.stdout_text = stdout_text;
  result.stderr_text = stderr_text;
  const std::string result_key = result_key_of(call_key_, files);
  if (auto put = cache_.put_result(result_key, result); !put) return put;
  CacheManifest manifest = cache_.manifest(call_key_).value_or(CacheManifest{});
  auto& entries = manifest.entries;
  entries.erase(std::remove_if(entries.begin(), entries.end(),
                               [&](const CacheManifestEntry& e) { return e.result_key == result_key; }),
                entries.end());
  entries.insert(entries.begin(), CacheManifestEntry{result_key, std::move(files)});
  if (entries.size() > kManifestEntries) entries.resize(kManifestEntries);
  return cache_.put_manifest(call_key_, manifest);
}

}  // namespace fad
