// GPU architecture spellings. Users write compute capabilities in several
// forms; fad keeps one canonical Arch and renders each form nvcc or a user needs.
#include "common/arch.h"

#include <algorithm>
#include <cctype>

#include "common/text.h"

namespace fad {
namespace {

// Compute capabilities below 3.0 were never built by any CUDA that fad can
// drive; a number this small is almost surely "12" meant as 12.0.
constexpr int kMinArchNumber = 30;
constexpr int kMaxArchNumber = 999;

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

bool all_digits(std::string_view s) {
  return !s.empty() &&
         std::all_of(s.begin(), s.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
}

Error arch_error(std::string_view text) {
  return make_error("invalid arch '" + printable(text) +
                    "': expected a compute capability such as 12.0, 120, sm_120, compute_120 or 9.0a");
}

std::string suffix_string(char suffix) { return suffix ? std::string(1, suffix) : std::string(); }

}  // namespace

std::string Arch::display() const {
  return std::to_string(number / 10) + "." + std::to_string(number % 10) + suffix_string(suffix);
}
std::string Arch::sm() const { return "sm_" + std::to_string(number) + suffix_string(suffix); }
std::string Arch::compute() const { return "compute_" + std::to_string(number) + suffix_string(suffix); }
std::string Arch::gencode() const { return "arch=" + compute() + ",code=" + sm(); }

Result<Arch> parse_arch(std::string_view text) {
  std::string s(trim(text));
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  std::string_view rest = s;
  bool prefixed = false;
  for (std::string_view prefix : {std::string_view("sm_"), std::string_view("compute_")}) {
    if (rest.substr(0, prefix.size()) == prefix) {
      rest.remove_prefix(prefix.size());
      prefixed = true;
      break;
    }
  }

  Arch arch;
  if (!rest.empty() && (rest.back() == 'a' || rest.back() == 'f')) {
    arch.suffix = rest.back();
    rest.remove_suffix(1);
  }

  std::size_t dot = rest.find('.');
  if (dot != std::string_view::npos && !prefixed) {
    std::string_view major = rest.substr(0, dot);
    std::string_view minor = rest.substr(dot + 1);
    if (!all_digits(major) || major.size() > 2 || !all_digits(minor) || minor.size() != 1) return arch_error(text);
    arch.number = std::stoi(std::string(major)) * 10 + (minor[0] - '0');
  } else {
    if (!all_digits(rest) || rest.size() > 3) return arch_error(text);
    arch.number = std::stoi(std::string(rest));
    if (arch.number > 0 && arch.number < kMinArchNumber && !prefixed) {
      return make_error("invalid arch '" + printable(text) + "': ambiguous; write " + std::string(rest) + ".0 or " +
                        std::string(rest) + "0");
    }
  }
  if (arch.number < kMinArchNumber || arch.number > kMaxArchNumber) return arch_error(text);
  return arch;
}

Result<std::vector<Arch>> parse_arch_list(const std::vector<std::string>& args) {
  std::vector<Arch> out;
  for (const std::string& arg : args) {
    std::string_view rest = arg;
    while (true) {
      std::size_t comma = rest.find(',');
      // "12.0," or "9.0,,12.0": the list is what is wrong, not an arch named "".
      if (trim(rest.substr(0, comma)).empty() && arg.find(',') != std::string::npos)
        return make_error("empty arch in the list '" + printable(arg) + "': separate archs with single commas");
      Result<Arch> arch = parse_arch(rest.substr(0, comma));
      if (!arch) return Error{arch.error()};
      if (std::find(out.begin(), out.end(), *arch) == out.end()) {
        if (out.size() == kMaxArchs)
          return make_error("too many archs: at most " + std::to_string(kMaxArchs) + " in one build");
        out.push_back(*arch);
      }
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
  }
  return out;
}

std::vector<Arch> parse_nvcc_arch_list(std::string_view text) {
  std::vector<Arch> out;
  while (!text.empty()) {
    std::size_t nl = text.find('\n');
    std::string_view line = trim(text.substr(0, nl));
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    if (line.substr(0, 8) != "compute_") continue;
    Result<Arch> arch = parse_arch(line);
    if (arch) out.push_back(*arch);
  }
  return out;
}

Status validate_archs(const std::vector<Arch>& requested, const std::vector<Arch>& supported) {
  std::vector<int> numbers;
  for (const Arch& arch : supported) numbers.push_back(arch.number);
  std::sort(numbers.begin(), numbers.end());
  numbers.erase(std::unique(numbers.begin(), numbers.end()), numbers.end());

  auto can_build = [&] {
    std::string list;
    for (int number : numbers) {
      if (!list.empty()) list += ", ";
      list += Arch{number, 0}.display();
    }
    return list.empty() ? std::string("nothing") : list;
  };

  for (const Arch& arch : requested) {
    if (!std::binary_search(numbers.begin(), numbers.end(), arch.number)) {
      return make_error("arch " + arch.display() + " is not supported by this nvcc; it can build: " + can_build());
    }
    if (arch.suffix == 'a' && arch.number < 90) {
      return make_error("arch " + arch.display() + " is not supported: the 'a' suffix needs arch 9.0 or newer");
    }
    if (arch.suffix == 'f' && arch.number < 100) {
      return make_error("arch " + arch.display() + " is not supported: the 'f' suffix needs arch 10.0 or newer");
    }
  }
  return ok_status();
}

}  // namespace fad
