// Before fadd opens STATE/fad.db for writing: is the file fad's own? A
// database of another application (a misconfigured --state-dir, a copied
// file) must be refused and left byte for byte as it was, never migrated into
// a fad database; a damaged one must be refused rather than written over.
// fad databases carry PRAGMA application_id = kApplicationId; those made
// before it existed are recognised by their tables.
#pragma once

#include <cstdint>
#include <string>

#include "common/result.h"

namespace fad {

/// "fadb" in ASCII: the SQLite application_id of every fad database.
inline constexpr std::int32_t kApplicationId = 0x66616462;

/// What is at the database path.
enum class DatabaseKind {
  absent,  ///< no file or an empty one: fadd creates a fresh database
  fad,     ///< a fad database (with the application_id, or an older one by its tables)
};

/// Classifies the file at `path` without writing to it. Fails, with a message
/// that names the file, what it is and what to do, when it is not an SQLite
/// database, is another application's database, or cannot be read.
Result<DatabaseKind> check_database_file(const std::string& path);

}  // namespace fad
