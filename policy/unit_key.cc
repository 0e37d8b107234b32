// UnitKey and profile rescaling; see unit_key.h.
#include "policy/unit_key.h"

#include <algorithm>

namespace fad {

namespace {
// \x1e (record separator) cannot appear in paths or family names.
std::string in_scope(const std::string& scope, const std::string& what) {
  return scope.empty() ? what : scope + '\x1e' + what;
}
}  // namespace

std::string UnitKey::scoped_source() const { return source.empty() ? source : in_scope(scope, source); }
std::string UnitKey::scoped_family() const { return family.empty() ? family : in_scope(scope, family); }

std::string UnitKey::exact() const {
  // \x1f (unit separator) cannot appear in paths, flags or version strings.
  std::string out = in_scope(scope, "");
  for (const std::string* part : {&source, &content_hash, &flags, &archs, &compiler}) {
    out += *part;
    out += '\x1f';
  }
  return out;
}

int effective_parallelism(int threads, int arch_count) {
  return std::max(1, std::min(threads, std::max(arch_count, 1)));
}

Profile rescale(const Profile& profile, const UnitKey& from, int from_threads, const UnitKey& to, int to_threads) {
  const int arch_from = std::max(from.arch_count, 1);
  const int arch_to = std::max(to.arch_count, 1);
  const int e_from = effective_parallelism(from_threads, arch_from);
  const int e_to = effective_parallelism(to_threads, arch_to);
  double time = static_cast<double>(e_from) / e_to * arch_to / arch_from;
  const double per_arch = static_cast<double>(e_from) / arch_from;  // one arch's share of the measured time
  time = std::max(time, per_arch);
  const double memory =
      e_to >= e_from ? static_cast<double>(e_to) / e_from : static_cast<double>(e_to + 1) / (e_from + 1);
  return profile.scaled(memory, time);
}

double cross_parallelism_share(const UnitKey& from, int from_threads, const UnitKey& to, int to_threads) {
  constexpr double kMeasuredOverLinear = 0.85;
  const bool up =
      effective_parallelism(to_threads, to.arch_count) > effective_parallelism(from_threads, from.arch_count);
  return up ? kMeasuredOverLinear : 1.0;
}

bool same_parallelism(const UnitKey& from, int from_threads, const UnitKey& to, int to_threads) {
  return std::max(from.arch_count, 1) == std::max(to.arch_count, 1) &&
         effective_parallelism(from_threads, from.arch_count) == effective_parallelism(to_threads, to.arch_count);
}

}  // namespace fad
