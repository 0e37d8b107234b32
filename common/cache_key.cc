// Compile-cache keys; see cache_key.h.
#include "common/cache_key.h"

#include <algorithm>
#include <array>
#include <filesystem>

#include "common/depfile.h"
#include "common/hash.h"
#include "common/project_root.h"
#include "common/shell_words.h"

namespace fad {

namespace fs = std::filesystem;

const std::vector<std::string_view> kToolEnvironment{"INCLUDES", "SYSTEM_INCLUDES", "CUDAFE_FLAGS", "PTXAS_FLAGS"};

// nvcc.profile appends the environment's INCLUDES, SYSTEM_INCLUDES,
// CUDAFE_FLAGS and PTXAS_FLAGS to its own ("+="): they are flags of every compile.
const std::vector<std::string_view> kCompilerEnvironment{
    "NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS", "NVCC_CCBIN",        "CPATH",    "C_INCLUDE_PATH",  "CPLUS_INCLUDE_PATH",
    "GCC_EXEC_PREFIX",    "COMPILER_PATH",     "SOURCE_DATE_EPOCH", "INCLUDES", "SYSTEM_INCLUDES", "CUDAFE_FLAGS",
    "PTXAS_FLAGS"};

namespace {

constexpr std::array<std::string_view, 8> kSourceExtensions{".cu", ".c", ".cc", ".cpp", ".cxx", ".ptx", ".C", ".cup"};

bool has_source_extension(const std::string& a) {
  return std::any_of(kSourceExtensions.begin(), kSourceExtensions.end(), [&](std::string_view ext) {
    return a.size() > ext.size() && a.compare(a.size() - ext.size(), ext.size(), ext) == 0;
  });
}

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

/// "--opt value" or "--opt=value" for one of `names`; advances `i` past a separate value.
bool option_value(const std::vector<std::string>& args, std::size_t& i, std::initializer_list<std::string_view> names,
                  std::string* value) {
  const std::string& a = args[i];
  for (auto name : names) {
    if (a == name) {
      if (i + 1 >= args.size()) return false;
      *value = args[++i];
      return true;
    }
    if (a.size() > name.size() && starts_with(a, name) && a[name.size()] == '=') {
      *value = a.substr(name.size() + 1);
      return true;
    }
  }
  return false;
}

bool is_one_of(const std::string& a, std::initializer_list<std::string_view> names) {
  return std::find(names.begin(), names.end(), a) != names.end();
}

// Options whose outputs the cache cannot capture (more files, other places),
// or that make nvcc do something other than one compile.
const char* uncacheable_reason(const std::string& a) {
  if (is_one_of(a, {"-keep", "--keep", "-save-temps", "--save-temps", "-keep-dir", "--keep-dir"}))
    return "keeps intermediate files (--keep)";
  if (is_one_of(a, {"-odir", "--output-directory"})) return "output directory option (-odir)";
  // Glued too ("--options-file=F"): the file's content is not in the key.
  if (is_one_of(a, {"-optf", "--options-file"}) || a.rfind("-optf=", 0) == 0 || a.rfind("--options-file=", 0) == 0)
    return "options read from a file (--options-file)";
  if (is_one_of(a, {"-MMD", "--generate-nonsystem-dependencies-with-compile"}))
    return "non-system dependencies only (-MMD): system headers would go unchecked";
  if (is_one_of(a, {"-M",      "--generate-dependencies",
                    "-MM",     "--generate-nonsystem-dependencies",
                    "-E",      "--preprocess",
                    "-dryrun", "--dryrun",
                    "-run",    "--run",
                    "-time",   "--time",
                    "-fatbin", "--fatbin",
                    "-cubin",  "--cubin",
                    "-ptx",    "--ptx",
                    "-lib",    "--lib",
                    "-link",   "--link"}))
    return "not a plain compile";
  return nullptr;
}

// Why the words nvcc hands a tool through a shell (an -X value, split at
// commas; INCLUDES, PTXAS_FLAGS, ...) make a compile uncacheable, or "":
// `@opts.rsp` makes gcc read more options from a file, and an expansion
// (`$HOME`) puts in what the key does not hold.
std::string tool_words_reason(const std::string& text, const std::string& where) {
  const auto words = nvcc_tool_words(text);
  if (!words) return "the shell nvcc runs its tools through would expand " + where;
  for (const auto& w : *words)
    if (starts_with(w, "@")) return "options read from a file (" + where + " @FILE)";
  return "";
}

bool is_debug_flag(const std::string& a) {
  if (a == "-g" || a == "-G" || a == "--debug" || a == "--device-debug" || a == "-lineinfo" ||
      a == "--generate-line-info")
    return true;
  return a.size() > 2 && starts_with(a, "-g") && !starts_with(a, "-gencode");  // -g3, -ggdb
}

}  // namespace

bool uses_time_macros(std::string_view text) {
  return text.find("__DATE__") != std::string_view::npos || text.find("__TIME__") != std::string_view::npos ||
         text.find("__TIMESTAMP__") != std::string_view::npos;
}

std::string absolute_in(const std::string& path, const std::string& cwd) {
  fs::path p(path);
  const fs::path joined = p.is_absolute() ? p : fs::path(cwd) / p;
  // ".." is the kernel's to resolve: after a symlinked directory it leads up
  // from where the link points, not back to where the text says.
  for (const auto& part : joined)
    if (part == "..") return joined.string();
  return joined.lexically_normal().string();
}

std::vector<std::string> with_environment_flags(const std::vector<std::string>& argv, const EnvLookup& env) {
  // nvcc splits them at spaces, and puts them before and after its arguments.
  const auto words = [&](std::string_view name) {
    std::vector<std::string> out;
    const auto v = env(name);
    if (!v) return out;
    std::string word;
    for (char c : *v + ' ') {
      if (c == ' ' || c == '\t' || c == '\n') {
        if (!word.empty()) out.push_back(std::move(word));
        word.clear();
      } else {
        word += c;
      }
    }
    return out;
  };
  if (argv.empty()) return argv;
  std::vector<std::string> out{argv.front()};
  for (auto& w : words("NVCC_PREPEND_FLAGS")) out.push_back(std::move(w));
  out.insert(out.end(), argv.begin() + 1, argv.end());
  for (auto& w : words("NVCC_APPEND_FLAGS")) out.push_back(std::move(w));
  return out;
}

std::string environment_uncacheable_reason(const EnvLookup& env) {
  for (std::string_view name : kToolEnvironment)
    if (auto v = env(name))
      if (auto why = tool_words_reason(*v, std::string(name)); !why.empty()) return why;
  return "";
}

std::vector<std::string> compiler_environment(const EnvLookup& env) {
  std::vector<std::string> out;
  for (auto name : kCompilerEnvironment) {
    auto v = env(name);
    out.push_back(std::string(name) + (v ? "=" + *v : std::string()));
  }
  return out;
}

CachePlan plan_cache(const std::vector<std::string>& argv, const std::string& cwd,
                     bool (*exists)(const std::string& path, const std::string& cwd)) {
  CachePlan plan;
  std::vector<std::string> args(argv.begin() + (argv.empty() ? 0 : 1), argv.end());
  // Before root relabelling; false: kept as written. A macro's value goes
  // into the code (-DDATA_DIR=/abs/path), so defines are never relabelled.
  std::vector<std::pair<std::string, bool>> kept;
  std::vector<std::string> sources;
  std::string depfile;
  bool compile = false, wants_deps = false, debug = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    std::string value;
    if (const char* why = uncacheable_reason(a)) {
      plan.reason = why;
      return plan;
    }
    // A macro given the time of the compile (-DSTAMP=__TIME__): the object holds it.
    if (uses_time_macros(a)) {
      plan.reason = "the command line uses __DATE__, __TIME__ or __TIMESTAMP__";
      return plan;
    }
    if (option_value(args, i, {"-o", "--output-file"}, &value)) {
      plan.output = value;
      continue;
    }
    if (option_value(args, i, {"-MF", "--dependency-output"}, &value)) {
      depfile = value;
      continue;
    }
    if (option_value(args, i, {"--threads", "-t"}, &value)) continue;
    if (option_value(args, i, {"-ccbin", "--compiler-bindir"}, &value)) {
      plan.host_compiler = value;
      kept.emplace_back("-ccbin=" + value, true);
      continue;
    }
    if (starts_with(a, "@")) {
      plan.reason = "options read from a file (@FILE)";
      return plan;
    }
    if (option_value(args, i, {"-Xcompiler", "--compiler-options"}, &value)) {
      if (auto why = tool_words_reason(value, "-Xcompiler"); !why.empty()) {
        plan.reason = why;
        return plan;
      }
      // Host-compiler dependency files land beside nvcc's temporaries.
      if (value.find("-M") != std::string::npos) {
        plan.reason = "host compiler writes its own dependency file (-Xcompiler -M...)";
        return plan;
      }
      if (value.find("-g") != std::string::npos) debug = true;
      kept.emplace_back("-Xcompiler=" + value, value.find("-D") == std::string::npos);
      continue;
    }
    const std::size_t start = i;
    if (option_value(args, i,
                     {"-MT",
                      "-MQ",
                      "--dependency-target-name",
                      "-I",
                      "--include-path",
                      "-include",
                      "--pre-include",
                      "-isystem",
                      "--system-include",
                      "-D",
                      "--define-macro",
                      "-U",
                      "--undefine-macro",
                      "-x",
                      "--x",
                      "-gencode",
                      "--generate-code",
                      "-arch",
                      "--gpu-architecture",
                      "-code",
                      "--gpu-code",
                      "-Xptxas",
                      "--ptxas-options",
                      "-Xcudafe",
                      "-Xfatbin",
                      "--fatbin-options",
                      "-std",
                      "--std"},
                     &value)) {
      if (starts_with(args[start], "-X") || starts_with(args[start], "--ptxas") ||
          starts_with(args[start], "--fatbin")) {
        if (auto why = tool_words_reason(value, args[start]); !why.empty()) {
          plan.reason = why;
          return plan;
        }
      }
      // One element with its value, so that a value is never taken for the
      // source; "-I x" and "-I=x" stay distinct spellings.
      kept.emplace_back(i == start ? a : args[start] + "\x1f" + value,
                        !is_one_of(args[start], {"-D", "--define-macro"}) && !starts_with(a, "-D=") &&
                            !starts_with(a, "--define-macro="));
      continue;
    }
    if (a == "-c" || a == "--compile" || a == "-dc" || a == "--device-c" || a == "-dw" || a == "--device-w")
      compile = true;
    if (a == "-MD" || a == "--generate-dependencies-with-compile") wants_deps = true;
    if (is_debug_flag(a)) debug = true;
    if (!starts_with(a, "-") && has_source_extension(a) && exists(a, cwd)) sources.push_back(a);
    kept.emplace_back(a, !starts_with(a, "-D") && !starts_with(a, "--define-macro"));
  }
  if (!compile) {
    plan.reason = "not a compile (-c)";
    return plan;
  }
  if (sources.size() != 1) {
    plan.reason = sources.empty() ? "no source file found" : "several source files in one call";
    return plan;
  }
  if (!depfile.empty() && !wants_deps) {
    plan.reason = "-MF without -MD (nvcc refuses it)";
    return plan;
  }
  plan.source = sources.front();
  if (plan.output.empty()) plan.output = fs::path(plan.source).stem().string() + ".o";
  // nvcc's -MD without -MF writes OUTPUT with its extension replaced by .d.
  if (wants_deps)
    plan.user_depfile = depfile.empty() ? fs::path(plan.output).replace_extension(".d").string() : depfile;

  std::string root = project_root(cwd, absolute_in(plan.source, cwd));
  if (root.empty() || !depfile_safe_path(root)) {
    root.clear();
    plan.key_literals.push_back("cwd=" + cwd);  // nothing relabelled: the paths are what they are
  }
  plan.root = root;
  if (!depfile_safe_path(plan.output)) plan.key_literals.push_back("output=" + plan.output);
  if (debug) {
    // Debug info records the directories the compile ran in.
    plan.key_literals.push_back("debug-cwd=" + cwd);
    plan.key_literals.push_back("debug-root=" + root);
  }
  for (const auto& [a, relabel] : kept) plan.key_args.push_back(relabel ? replace_root(a, root, "\x01") : a);
  plan.cacheable = true;
  return plan;
}

std::string call_key(const CachePlan& plan, const KeyInputs& in) {
  Sha256 h;
  h.field("fad compile cache key 1");
  h.field(in.compiler_identity).field(in.host_compiler_identity).field(in.source_hash);
  h.field("env");
  for (const auto& e : in.environment) h.field(e);
  h.field("args");
  for (const auto& a : plan.key_args) h.field(a);
  h.field("literals");
  for (const auto& l : plan.key_literals) h.field(l);
  return h.hex();
}

}  // namespace fad
