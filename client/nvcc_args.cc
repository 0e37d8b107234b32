// nvcc command lines; see nvcc_args.h.
#include "client/nvcc_args.h"

#include "common/arch.h"

#include <algorithm>
#include <array>
#include <stdexcept>
#include <string>
#include <string_view>

namespace fad::client {

namespace {
constexpr std::array<std::string_view, 8> kSourceExtensions{".cu", ".c", ".cc", ".cpp", ".cxx", ".ptx", ".C", ".cup"};

bool has_source_extension(const std::string& a) {
  return std::any_of(kSourceExtensions.begin(), kSourceExtensions.end(), [&](std::string_view ext) {
    return a.size() > ext.size() && a.compare(a.size() - ext.size(), ext.size(), ext) == 0;
  });
}

// "sm_90", "compute_90a", ... in display form; names like "native" are skipped.
void add_arch(std::vector<std::string>& archs, const std::string& name) {
  auto arch = parse_arch(name);
  if (!arch) return;
  auto display = arch->display();
  if (std::find(archs.begin(), archs.end(), display) == archs.end()) archs.push_back(display);
}

// "arch=compute_90,code=sm_90" or "arch=compute_90,code=[sm_90,compute_90]":
// the virtual arch is what counts.
void add_gencode(std::vector<std::string>& archs, const std::string& value) {
  auto pos = value.find("arch=");
  if (pos == std::string::npos) return;
  auto end = value.find(',', pos);
  add_arch(archs, value.substr(pos + 5, end == std::string::npos ? std::string::npos : end - pos - 5));
}

// Long options may be written "--opt=value" or "--opt value".
bool option_value(const std::vector<std::string>& args, std::size_t& i, std::initializer_list<std::string_view> names,
                  std::string* value) {
  const auto& a = args[i];
  for (auto name : names) {
    if (a == name) {
      if (i + 1 >= args.size()) return false;
      *value = args[++i];
      return true;
    }
    if (a.size() > name.size() && a.compare(0, name.size(), name) == 0 && a[name.size()] == '=') {
      *value = a.substr(name.size() + 1);
      return true;
    }
  }
  return false;
}
}  // namespace

NvccCall parse_nvcc_call(const std::vector<std::string>& args, bool (*exists)(const std::string&)) {
  NvccCall call;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const auto& a = args[i];
    std::string value;
    if (a == "-c" || a == "--compile" || a == "-dc" || a == "--device-c" || a == "-dw" || a == "--device-w") {
      call.compile = true;
    } else if (option_value(args, i, {"-o", "--output-file"}, &value)) {
      call.output = value;
    } else if (option_value(args, i, {"-gencode", "--generate-code"}, &value)) {
      add_gencode(call.archs, value);
    } else if (option_value(args, i, {"-arch", "--gpu-architecture"}, &value)) {
      add_arch(call.archs, value);
    } else if (option_value(args, i, {"-I", "--include-path"}, &value)) {
      call.include_dirs.push_back(value);
    } else if (a.size() > 2 && a.compare(0, 2, "-I") == 0) {
      call.include_dirs.push_back(a.substr(2));
    } else if (option_value(args, i,
                            {"-MF", "-MT", "-MQ", "-odir", "--output-directory", "-ccbin", "-code", "--gpu-code",
                             "--compiler-bindir", "-Xcompiler", "-Xptxas", "-Xlinker", "-Xcudafe", "-include", "-x"},
                            &value)) {
      // A value that may look like a file; never the source.
    } else if (a.rfind("-", 0) != 0 && call.source.empty() && has_source_extension(a) && exists(a)) {
      call.source = a;
    }
  }
  if (call.source.empty()) call.compile = false;  // nothing to schedule (e.g. -c with a .o input)
  // Asked to stop before compiling (-E, -M, --dryrun ...) or to do something
  // else (-ptx, -cubin still compile and stay units): quick, not scheduled.
  for (const auto& a : args)
    if (a == "-E" || a == "--preprocess" || a == "-M" || a == "--generate-dependencies" || a == "-MM" ||
        a == "--generate-nonsystem-dependencies" || a == "-dryrun" || a == "--dryrun")
      call.compile = false;
  return call;
}

int requested_threads(const std::vector<std::string>& args) {
  int threads = 1;
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string value;
    if (!option_value(args, i, {"--threads", "-t"}, &value)) continue;
    try {
      threads = std::max(0, std::stoi(value));
    } catch (const std::exception&) {
      // nvcc rejects it; the count only sizes a memory claim
    }
  }
  return threads;
}

std::vector<std::string> with_threads(const std::vector<std::string>& args, int threads) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const auto& a = args[i];
    if (a == "--threads" || a == "-t") {
      ++i;  // drop its value too
      continue;
    }
    if (a.rfind("--threads=", 0) == 0 || a.rfind("-t=", 0) == 0) continue;
    out.push_back(a);
  }
  out.push_back("--threads");
  out.push_back(std::to_string(threads));
  return out;
}

}  // namespace fad::client
