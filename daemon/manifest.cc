// Kernels manifest parsing; see manifest.h.
#include "daemon/manifest.h"

#include <regex>
#include <set>

#include <nlohmann/json.hpp>

#include "common/file_read.h"

namespace fad {

namespace {
using nlohmann::json;

// A manifest of thousands of units is a few hundred KiB.
constexpr std::size_t kMaxManifestBytes = 16u << 20;

Result<std::vector<std::string>> string_list(const json& obj, const char* key, const std::string& where) {
  std::vector<std::string> out;
  if (!obj.contains(key)) return out;
  const auto& v = obj.at(key);
  if (!v.is_array()) return make_error(where + ": \"" + key + "\" must be an array of strings");
  for (const auto& e : v) {
    if (!e.is_string()) return make_error(where + ": \"" + key + "\" must be an array of strings");
    out.push_back(e.get<std::string>());
  }
  return out;
}

Result<std::string> required_string(const json& obj, const char* key, const std::string& where) {
  if (!obj.contains(key) || !obj.at(key).is_string() || obj.at(key).get<std::string>().empty())
    return make_error(where + ": \"" + key + "\" must be a non-empty string");
  return obj.at(key).get<std::string>();
}
}  // namespace

Result<Manifest> parse_manifest(std::string_view text, std::string_view filename) {
  const std::string file(filename);
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return make_error(file + ": not a JSON object");
  Manifest m;
  if (!j.contains("version") || !j["version"].is_number_integer() || j["version"].get<int>() != 1)
    return make_error(file + ": unsupported manifest \"version\" (this fadd reads version 1)");
  auto library = required_string(j, "library", file);
  if (!library) return make_error(library.error());
  m.library = *library;
  for (auto [key, field] : {std::pair{"include_dirs", &m.include_dirs}, std::pair{"flags", &m.flags},
                            std::pair{"link_flags", &m.link_flags}}) {
    auto list = string_list(j, key, file);
    if (!list) return make_error(list.error());
    *field = std::move(*list);
  }
  if (!j.contains("units") || !j["units"].is_array() || j["units"].empty())
    return make_error(file + ": \"units\" must be a non-empty array");
  static const std::regex kName("[a-z0-9_]+");
  std::set<std::string> seen;
  for (const auto& u : j["units"]) {
    const std::string where = file + ": unit #" + std::to_string(m.units.size() + 1);
    if (!u.is_object()) return make_error(where + ": not an object");
    ManifestUnit unit;
    auto name = required_string(u, "name", where);
    if (!name) return make_error(name.error());
    if (!std::regex_match(*name, kName)) return make_error(where + ": name '" + *name + "' must match [a-z0-9_]+");
    if (!seen.insert(*name).second) return make_error(where + ": duplicate unit name '" + *name + "'");
    unit.name = *name;
    auto source = required_string(u, "source", where);
    if (!source) return make_error(source.error());
    unit.source = *source;
    unit.family = u.contains("family") && u["family"].is_string() ? u["family"].get<std::string>() : unit.name;
    auto flags = string_list(u, "flags", where);
    if (!flags) return make_error(flags.error());
    unit.flags = std::move(*flags);
    if (u.contains("required")) {
      if (!u["required"].is_boolean()) return make_error(where + ": \"required\" must be true or false");
      unit.required = u["required"].get<bool>();
    }
    if (u.contains("prior") && u["prior"].is_object()) {
      const auto& p = u["prior"];
      if (p.contains("peak_bytes") && p["peak_bytes"].is_number_unsigned())
        unit.prior.peak_bytes = p["peak_bytes"].get<std::uint64_t>();
      if (p.contains("duration_s") && p["duration_s"].is_number())
        unit.prior.duration_s = p["duration_s"].get<double>();
    }
    m.units.push_back(std::move(unit));
  }
  return m;
}

Result<Manifest> load_manifest(const std::string& kernels_dir) {
  const std::string path = kernels_dir + "/manifest.json";
  auto text = read_regular_file(path, kMaxManifestBytes, "kernels manifest");
  if (!text)
    return make_error(text.error() +
                      " (kernels_dir in the config, or fadd --kernels-dir, names the directory holding manifest.json)");
  return parse_manifest(*text, path);
}

}  // namespace fad
