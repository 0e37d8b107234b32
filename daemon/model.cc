// String forms of the daemon's states; these strings are stored and sent, so
// they never change.
#include "daemon/model.h"

#include <array>
#include <utility>

namespace fad {

namespace {
constexpr std::array<std::pair<BuildState, std::string_view>, 6> kBuildStates{{
    {BuildState::queued, "queued"},
    {BuildState::running, "running"},
    {BuildState::paused, "paused"},
    {BuildState::succeeded, "succeeded"},
    {BuildState::failed, "failed"},
    {BuildState::cancelled, "cancelled"},
}};
constexpr std::array<std::pair<UnitState, std::string_view>, 5> kUnitStates{{
    {UnitState::queued, "queued"},
    {UnitState::running, "running"},
    {UnitState::succeeded, "succeeded"},
    {UnitState::failed, "failed"},
    {UnitState::cancelled, "cancelled"},
}};
constexpr std::array<std::pair<UnitKind, std::string_view>, 3> kUnitKinds{{
    {UnitKind::compile, "compile"},
    {UnitKind::link, "link"},
    {UnitKind::external, "external"},
}};

template <class E, std::size_t N>
std::string_view name_of(const std::array<std::pair<E, std::string_view>, N>& table, E value) {
  for (const auto& [e, s] : table)
    if (e == value) return s;
  return "unknown";
}
template <class E, std::size_t N>
std::optional<E> value_of(const std::array<std::pair<E, std::string_view>, N>& table, std::string_view text) {
  for (const auto& [e, s] : table)
    if (s == text) return e;
  return std::nullopt;
}
}  // namespace

std::string_view to_string(BuildState s) { return name_of(kBuildStates, s); }
std::string_view to_string(UnitState s) { return name_of(kUnitStates, s); }
std::string_view to_string(UnitKind k) { return name_of(kUnitKinds, k); }
std::optional<BuildState> build_state_from(std::string_view s) { return value_of(kBuildStates, s); }
std::optional<UnitState> unit_state_from(std::string_view s) { return value_of(kUnitStates, s); }
std::optional<UnitKind> unit_kind_from(std::string_view s) { return value_of(kUnitKinds, s); }

bool is_final(BuildState s) {
  return s == BuildState::succeeded || s == BuildState::failed || s == BuildState::cancelled;
}

}  // namespace fad
