// UnitKey and profile rescaling; see unit_key.h.
#include "policy/unit_key.h"

#include <algorithm>

#include "policy/spikes.h"

namespace fad {

namespace {
// \x1e (record separator) cannot appear in paths or family names.
std::string in_scope(const std::string& scope, const std::string& what) {
  return scope.empty() ? what : scope + '\x1e' + what;
}
}  // namespace

std::string UnitKey::scoped_source() const {
  if (source.empty()) return source;
  // A path relative to its project's root ("<root>/kernel.cu", launched
  // compiles) is the same in every project laid out alike: only with the
  // same content is it the same source.
  if (source.rfind(kProjectRootMark, 0) == 0) return in_scope(scope, source + '\x1f' + content_hash);
  return in_scope(scope, source);
}
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

namespace {
/// The part of `p` in [from, to), starting at 0.
Profile slice(const Profile& p, double from, double to) {
  Profile out;
  out.duration_s = to - from;
  out.points.emplace_back(0.0, p.at(from));
  for (const auto& [t, v] : p.points)
    if (t > from && t < to) out.points.emplace_back(t - from, v);
  return out;
}
}  // namespace

int effective_parallelism(int threads, int arch_count) {
  return std::max(1, std::min(threads, std::max(arch_count, 1)));
}

Profile rescale(const Profile& profile, const UnitKey& from, int from_threads, const UnitKey& to, int to_threads) {
  const int arch_from = std::max(from.arch_count, 1);
  const int arch_to = std::max(to.arch_count, 1);
  const int e_from = effective_parallelism(from_threads, arch_from);
  const int e_to = effective_parallelism(to_threads, arch_to);
  const double memory =
      e_to >= e_from ? static_cast<double>(e_to) / e_from : static_cast<double>(e_to + 1) / (e_from + 1);
  const int turns_from = arch_turns(from_threads, arch_from);
  const int turns_to = arch_turns(to_threads, arch_to);
  // A turn compiles as many archs at once as there are threads, in about one
  // arch's time however many that is: time goes with the number of turns.
  if (turns_from == turns_to || profile.duration_s <= 0) return profile.scaled(memory, 1.0);
  // nvcc compiles the archs in turns, one cicc spike each: stretching the
  // whole profile would make one long spike of a unit that has two short
  // ones (and ones at the wrong time). The profile is cut into its turns,
  // laid over each other (the highest at each moment) and played once per
  // turn of the target.
  const double turn = profile.duration_s / turns_from;
  Profile one;
  for (int k = 0; k < turns_from; ++k) one = Profile::max_of(one, slice(profile, k * turn, (k + 1) * turn));
  one = one.scaled(memory, 1.0);
  Profile out;
  for (int k = 0; k < turns_to; ++k)
    for (const auto& [t, v] : one.points) out.points.emplace_back(t + k * one.duration_s, v);
  out.duration_s = turns_to * one.duration_s;
  return out;
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
