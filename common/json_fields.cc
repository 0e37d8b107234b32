// Typed JSON field readers; see json_fields.h.
#include "common/json_fields.h"

#include <map>
#include <set>

#include "common/text.h"

namespace fad {

nlohmann::json parse_noting_repeats(std::string_view text, std::vector<RepeatedKey>& repeated) {
  using json = nlohmann::json;
  std::vector<std::set<std::string>> open;
  std::map<std::string, int> seen;  // every object's keys, by name: which `"key":` of the text this is
  json::parser_callback_t note = [&](int, json::parse_event_t event, json& parsed) {
    if (event == json::parse_event_t::object_start) {
      open.emplace_back();
    } else if (event == json::parse_event_t::object_end && !open.empty()) {
      open.pop_back();
    } else if (event == json::parse_event_t::key && !open.empty() && parsed.is_string()) {
      const auto& key = parsed.get_ref<const std::string&>();
      const int occurrence = seen[key]++;
      if (!open.back().insert(key).second) repeated.push_back({key, occurrence});
    }
    return true;
  };
  return json::parse(text.begin(), text.end(), note);
}

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

std::string build_name_problem(std::string_view name) {
  if (name.size() > kMaxBuildNameBytes)
    return "at most " + std::to_string(kMaxBuildNameBytes) + " bytes, got " + std::to_string(name.size());
  if (!valid_utf8(name)) return "not valid UTF-8";
  // Another user's terminal shows it: no escape sequences, no line breaks.
  if (has_control(name)) return "control or invisible characters are not allowed";
  if (!name.empty() && blank(name)) return "only spaces (leave it empty for the default name)";
  return "";
}

Result<std::string> build_name_field(const nlohmann::json& body) {
  auto name = optional_string(body, "name", true);
  if (!name) return Error{name.error()};
  if (!*name || (*name)->empty()) return std::string();  // none: fadd names it
  // The same rules as build_name_problem, in the words of a field.
  if ((*name)->size() > kMaxBuildNameBytes)
    return field_error("name", "at most " + std::to_string(kMaxBuildNameBytes) + " bytes");
  if (has_control(**name)) return field_error("name", "printable text (no control characters)");
  if (blank(**name)) return field_error("name", "more than spaces");
  return **name;
}

}  // namespace fad
