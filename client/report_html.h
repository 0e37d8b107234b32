// `fad report ID`: one self-contained HTML file (inline SVG, CSS and script;
// nothing fetched from the network) with the build's memory over time (fad's
// units stacked per unit, the budget, capacity and available memory as
// lines), a Gantt chart of its units and a table of estimate against peak.
// Everything is drawn here, so the file reads without script; the script
// only adds read-outs, highlighting and sorting. Pure.
#pragma once

#include <string>

#include "client/report_model.h"

namespace fad::client {

/// The HTML document for `model`. `generated_by` names the fad version.
std::string render_report_html(const ReportModel& model, const std::string& generated_by);

/// Chrome/Perfetto trace-event JSON of the same model: one track per unit
/// with its wait, run, suspended and paused spans, and memory counters (each
/// unit's samples, the machine's available memory and fad's capacity).
json render_trace(const ReportModel& model);

/// "&", "<", ">", '"' and "'" escaped for HTML text and attributes.
std::string html_escape(const std::string& text);

}  // namespace fad::client
