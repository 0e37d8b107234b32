// `fad report ID [-o FILE] [--trace FILE] [--json]`: asks fadd for the build's
// report data and writes the HTML page (and the trace-event JSON). fadd only
// returns data; drawing happens here.
#include <filesystem>
#include <optional>
#include <ostream>

#include "client/commands.h"
#include "client/exit_codes.h"
#include "client/report_html.h"
#include "common/file_write.h"
#include "common/size.h"
#include "common/text.h"

namespace fad::client {

namespace fs = std::filesystem;

namespace {
// Writes `text` to `path` ("-": stdout) as history export does (whole, never
// through a link); an error line and false when it cannot.
bool write_output(Context& ctx, const std::string& path, const std::string& text) {
  if (path == "-") {
    ctx.out << text;
    return true;
  }
  if (Status written = write_file_atomically(path, text); !written) {
    ctx.err << "fad: cannot write " << shown_word(written.error()) << "\n";
    return false;
  }
  return true;
}
}  // namespace

int run_report(const Command& cmd, Context& ctx) {
  BuildRequest req;
  req.id = cmd.id.value_or(0);
  // The page, or with --json the report's data; "-" is stdout.
  const std::string path = cmd.output.value_or(cmd.json ? "-" : "fad-report-" + std::to_string(req.id) + ".html");
  // Checked before anything is written: the trace would replace the page.
  if (cmd.trace) {
    std::error_code ec;
    const auto a = fs::weakly_canonical(path, ec), b = fs::weakly_canonical(*cmd.trace, ec);
    if (path == *cmd.trace || (!ec && a == b)) {
      ctx.err << "fad: " << (cmd.json ? "the report's data" : "the page") << " and --trace both name "
              << (path == "-" ? "stdout" : *cmd.trace) << "; give the trace a file of its own\n";
      return kExitUsage;
    }
  }
  int rc = kExitOk;
  auto result = request(ctx, "report", req.to_json(), rc);
  if (!result) return rc;
  std::string text;
  std::optional<ReportModel> model;
  if (cmd.json) {
    text = with_schema(*result).dump(2) + "\n";
  } else {
    model = build_report_model(*result);
    text = render_report_html(*model, std::string("fad ") + FAD_VERSION);
  }
  // A path that cannot be written is a bad argument, as for history export.
  if (!write_output(ctx, path, text)) return kExitUsage;
  if (cmd.trace) {
    if (!model) model = build_report_model(*result);
    if (!write_output(ctx, *cmd.trace, render_trace(*model).dump() + "\n")) return kExitUsage;
  }
  // Said on stderr when the page or the data went to stdout.
  std::ostream& note = path == "-" ? ctx.err : ctx.out;
  if (path != "-" && cmd.json)
    note << "wrote " << shown_word(path) << " (" << format_size(text.size()) << "): the report's data of build "
         << req.id << "\n";
  else if (path != "-")
    note << "wrote " << shown_word(path) << " (" << format_size(text.size()) << "): build " << req.id << ", "
         << model->units.size() << " units; open it in a browser\n";
  if (cmd.trace && *cmd.trace != "-")
    note << "wrote " << shown_word(*cmd.trace) << ": open it in https://ui.perfetto.dev or chrome://tracing\n";
  return kExitOk;
}

}  // namespace fad::client
