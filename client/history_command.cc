// `fad history export FILE` and `fad history import FILE`: learnt unit
// profiles to and from a versioned JSON file (common/history_format.h), so a
// team or a CI job seeds a fresh machine. The client reads and writes the file
// as the user who runs it; fadd only sends and receives profiles, in pages
// that stay under the protocol's line limit.

#include <cerrno>
#include <cstring>
#include <ctime>
#include <ostream>

#include "client/commands.h"
#include "client/exit_codes.h"
#include "common/file_read.h"
#include "common/file_write.h"
#include "common/history_format.h"
#include "common/protocol.h"
#include "common/text.h"

namespace fad::client {
namespace {

/// Imports go out in batches of about this many bytes of JSON.
constexpr std::size_t kBatchBytes = 512 * 1024;
/// A history file larger than this is refused rather than read (fadd keeps
/// at most five profiles of 200 points per unit key: this is many thousands).
constexpr std::size_t kMaxFileBytes = 256ull << 20;

std::string utc_now() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

int usage_error(Context& ctx, const std::string& message) {
  ctx.err << "fad: " << shown_word(message) << "\n";  // it may quote the file's name
  return kExitUsage;
}

}  // namespace

int run_history_export(const Command& cmd, Context& ctx) {
  json profiles = json::array();
  HistoryExportRequest req;
  std::int64_t left_out = 0;
  std::string left_out_reason;
  while (true) {
    int rc = kExitOk;
    auto page = request(ctx, "history_export", req.to_json(), rc);
    if (!page) return rc;
    const json* list = page->contains("profiles") ? &(*page)["profiles"] : nullptr;
    if (list && list->is_array())
      for (const auto& p : *list) profiles.push_back(p);
    if (const auto n = page->value("left_out", json()); n.is_number_integer() && n.get<std::int64_t>() > 0)
      left_out += n.get<std::int64_t>();
    if (const auto r = page->value("left_out_reason", json()); r.is_string() && left_out_reason.empty())
      left_out_reason = r.get<std::string>();
    const json next = page->value("next_after", json());
    if (!next.is_number_integer() || next.get<std::int64_t>() <= req.after) break;
    req.after = next.get<std::int64_t>();
  }
  const std::size_t count = profiles.size();
  // Said, or a shorter file than the history looks like lost profiles.
  // The first one's reason, as fadd found it: which profile, and why import
  // would refuse it (its text is the client's to make safe for a terminal).
  const std::string note =
      left_out == 0
          ? std::string()
          : " (" + std::to_string(left_out) + " left out, which import would refuse" +
                (left_out_reason.empty() ? std::string() : "; the first, " + printable(left_out_reason)) + ")";
  const std::string document = history_document(std::move(profiles), utc_now()).dump(1) + "\n";
  // "-": the document on stdout (to pipe it to another machine's import),
  // so what is said about it goes to stderr.
  if (cmd.file == "-") {
    ctx.out << document << std::flush;
    ctx.err << "exported " << count << " unit profile(s) to stdout" << note << "\n";
    return kExitOk;
  }
  Status written = write_file_atomically(cmd.file, document);
  if (!written) return usage_error(ctx, "cannot write " + written.error());
  ctx.out << "exported " << count << " unit profile(s) to " << shown_word(cmd.file) << note << "\n";
  return kExitOk;
}

int run_history_import(const Command& cmd, Context& ctx) {
  // "-": what another machine's `fad history export -` writes into a pipe.
  // A file is checked on the open file, not by path first: a file swapped
  // for a FIFO between the two would otherwise hang the (root) client.
  const bool piped = cmd.file == "-";
  const std::string name = piped ? "standard input" : shown_word(cmd.file);
  auto text = piped ? ctx.read_stdin(kMaxFileBytes) : read_regular_file(cmd.file, kMaxFileBytes, "history file");
  if (!text) return usage_error(ctx, text.error());
  // 'fad history export - | fad history import -' with the exporting side
  // failed: say that nothing came, not that nothing is JSON.
  if (piped && text->find_first_not_of(" \t\r\n") == std::string::npos)
    return usage_error(ctx, "standard input is empty: no history file came");
  // Before parsing: a file of nested brackets costs the parser about 40
  // bytes of memory per byte of file; no history file nests that deep.
  if (Status depth = check_nesting(*text); !depth) return usage_error(ctx, name + ": " + depth.error());
  json doc = json::parse(*text, nullptr, false);
  if (doc.is_discarded()) return usage_error(ctx, name + ": not valid JSON");
  auto profiles = parse_history_document(doc);
  if (!profiles) return usage_error(ctx, name + ": " + profiles.error());

  std::int64_t imported = 0, skipped = 0;
  std::size_t sent = 0;
  // At least one request, even for an empty file: fadd decides who may
  // import, and says so to a user who may not.
  do {
    json batch = json::array();
    std::size_t bytes = 0;
    for (; sent < profiles->size() && (batch.empty() || bytes < kBatchBytes); ++sent) {
      json p = history_profile_to_json((*profiles)[sent]);
      bytes += p.dump().size();
      batch.push_back(std::move(p));
    }
    int rc = kExitOk;
    auto result = request(ctx, "history_import", json{{"profiles", std::move(batch)}}, rc);
    if (!result) {
      if (imported > 0) ctx.err << "fad: " << imported << " profile(s) were imported before the error\n";
      return rc;
    }
    imported += result->value("imported", 0);
    skipped += result->value("skipped", 0);
  } while (sent < profiles->size());
  ctx.out << "imported " << imported << " unit profile(s) from " << name;
  if (skipped > 0) ctx.out << " (" << skipped << " already known)";
  ctx.out << "\n";
  return kExitOk;
}

}  // namespace fad::client
