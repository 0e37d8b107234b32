// Make-style dependency files as nvcc writes them (-MD -MF,
// --generate-dependencies-with-compile --dependency-output): "target : dep \"
// lines. The compile cache reads the files a compile depended on from them, and
// stores them as templates so that a hit restores, byte for byte, the file nvcc
// would have written for the new call: its output path and its project root
// (where the call's absolute paths begin) are marks in the template. Pure.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fad {

/// The prerequisites of every rule in `text`, unescaped ("\ " -> " ", "$$" ->
/// "$"), in order, without duplicates. Targets are not listed.
std::vector<std::string> depfile_prerequisites(std::string_view text);

/// True when `path` can be a mark in a dependency-file template: no
/// whitespace, no character make escapes, no control character.
bool depfile_safe_path(std::string_view path);

/// `text` with the call's output path (a whole target or prerequisite) and
/// `root` (a prefix "ROOT/" of an absolute path) replaced by marks. Either may
/// be empty (not replaced); both must be depfile_safe_path. nullopt when
/// `text` already holds a mark byte (it could not be restored exactly).
std::optional<std::string> make_depfile_template(std::string_view text, std::string_view output, std::string_view root);

/// The inverse: the dependency file for a call writing `output` under `root`.
/// expand(make(t, o, r), o, r) == t for every t that make accepts.
std::string expand_depfile_template(std::string_view tmpl, std::string_view output, std::string_view root);

/// `path` with a leading "ROOT/" replaced by the root mark (for manifests);
/// unchanged when it does not start so or `root` is empty.
std::string mark_root(const std::string& path, std::string_view root);
/// The inverse of mark_root.
std::string unmark_root(const std::string& path, std::string_view root);

}  // namespace fad
