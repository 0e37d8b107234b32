// Typed JSON field readers; see json_fields.h.
#include "common/json_fields.h"

#include "common/text.h"

namespace fad {

Error field_error(std::string_view field, std::string_view what) {
  return make_error("field \"" + std::string(field) + "\" must be " + std::string(what));
}

std::optional<std::int64_t> integer_in(const nlohmann::json& v, std::int64_t lo, std::int64_t hi) {
  if (!v.is_number_integer()) return std::nullopt;
  if (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(hi)) return std::nullopt;
  auto i = v.get<std::int64_t>();
  if (i < lo || i > hi) return std::nullopt;
  return i;
}

Status require_object(const nlohmann::json& body) {
  if (!body.is_object()) return make_error("\"body\" must be an object");
  return ok_status();
}

Result<std::optional<std::string>> optional_string(const nlohmann::json& body, const char* field, bool allow_empty) {
  auto it = body.find(field);
  if (it == body.end() || it->is_null()) return std::optional<std::string>();
  if (!it->is_string() || (!allow_empty && it->get<std::string>().empty())) {
    return field_error(field, allow_empty ? "a string" : "a non-empty string");
  }
  return std::optional<std::string>(it->get<std::string>());
}

Result<std::string> build_name_field(const nlohmann::json& body) {
  auto name = optional_string(body, "name", true);
  if (!name) return Error{name.error()};
  if (*name && (*name)->size() > kMaxBuildNameBytes) {
    return field_error("name", "at most " + std::to_string(kMaxBuildNameBytes) + " bytes");
  }
  // Another user's terminal shows it: no escape sequences, no line breaks.
  if (*name && has_control(**name)) return field_error("name", "printable text (no control characters)");
  return name->value_or("");
}

}  // namespace fad
