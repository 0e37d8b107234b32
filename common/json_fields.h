// Reading fields of JSON objects that came from outside (a socket, a config
// file): typed, range-checked, and with errors that name the field. Shared by
// the protocol's message bodies and the config file.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"

namespace fad {

/// A key written again in an object that has it already.
struct RepeatedKey {
  std::string key;
  int occurrence = 0;  ///< how many `"key":` come before it in the text
};

/// json::parse of `text` (throwing as it does), noting the keys written more
/// than once in one object, in text order. JSON lets the last one win without
/// a word; from a config file or a peer, two values for one key are a mistake
/// (or a trick) whichever was meant.
nlohmann::json parse_noting_repeats(std::string_view text, std::vector<RepeatedKey>& repeated);

/// `field "NAME" must be WHAT`.
Error field_error(std::string_view field, std::string_view what);

/// The value as an integer in [lo, hi]; nullopt for non-integers (floats,
/// bools, strings) and out of range.
std::optional<std::int64_t> integer_in(const nlohmann::json& v, std::int64_t lo, std::int64_t hi);

/// Fails unless `body` is an object (every message body must be).
Status require_object(const nlohmann::json& body);

/// An optional string field: absent or null -> nullopt; empty only if allowed.
Result<std::optional<std::string>> optional_string(const nlohmann::json& body, const char* field, bool allow_empty);

/// A build's name is shown in every user's `fad status` and `fad history`:
/// bounded, so one client cannot widen everyone's table or push the listing
/// past the protocol's message limit.
inline constexpr std::size_t kMaxBuildNameBytes = 256;

/// What is wrong with `name` as a build's name, "" when nothing: over
/// kMaxBuildNameBytes, not UTF-8, a control or invisible character, or
/// spaces only (a row no one can tell from a blank one). Empty is no name:
/// the build is named for what it builds. The client says it for --name
/// before anything runs, fadd for the field.
std::string build_name_problem(std::string_view name);

/// The optional `name` field of a message that opens a build (empty: none).
Result<std::string> build_name_field(const nlohmann::json& body);

}  // namespace fad
