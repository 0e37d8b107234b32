// Tolerant reads of fadd's JSON answers for the views: the daemon may add
// fields or send null, and a view must never be what crashes.
#pragma once

#include <cstdint>
#include <string>

#include "common/protocol.h"
#include "common/text.h"

namespace fad::client {

/// The field, or nullptr when `j` is no object or the field is missing or null.
inline const json* field(const json& j, const char* key) {
  if (!j.is_object()) return nullptr;
  auto it = j.find(key);
  return it == j.end() || it->is_null() ? nullptr : &*it;
}

/// A string field as text to show; "-" when missing or empty, other values as JSON.
inline std::string text(const json& j, const char* key) {
  const json* f = field(j, key);
  if (!f) return "-";
  if (f->is_string()) return f->get<std::string>().empty() ? "-" : printable(f->get<std::string>());
  return f->dump();
}

/// A string field, or "" when missing or not a string.
inline std::string str(const json& j, const char* key) {
  const json* f = field(j, key);
  return f && f->is_string() ? f->get<std::string>() : std::string();
}

/// An integer count; 0 when missing or not a number.
inline std::int64_t count(const json& j, const char* key) {
  const json* f = field(j, key);
  return f && f->is_number() ? f->get<std::int64_t>() : 0;
}

/// A number, or `fallback` when missing or not a number.
inline bool is_true(const json& j, const char* key) {
  const json* f = field(j, key);
  return f && f->is_boolean() && f->get<bool>();
}

inline double number(const json& j, const char* key, double fallback = 0) {
  const json* f = field(j, key);
  return f && f->is_number() ? f->get<double>() : fallback;
}

/// The array field, or an empty array.
inline const json& array_of(const json& j, const char* key) {
  static const json kEmpty = json::array();
  const json* f = field(j, key);
  return f && f->is_array() ? *f : kEmpty;
}

/// The object field, or an empty object.
inline const json& object_of(const json& j, const char* key) {
  static const json kEmpty = json::object();
  const json* f = field(j, key);
  return f && f->is_object() ? *f : kEmpty;
}

}  // namespace fad::client
