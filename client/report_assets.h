// The style sheet and script inlined into every HTML report (report_html.cc):
// kept apart so the drawing code reads without them.
#pragma once

namespace fad::client {

/// CSS for the report page.
extern const char* const kReportCss;

/// The page's script: memory read-out under the pointer, unit highlighting
/// across chart, Gantt and table, table sorting. It ends by setting
/// data-ready="1" and data-bars (the Gantt bars it found) on <body>; errors
/// land in data-error, which the browser test checks.
extern const char* const kReportScript;

}  // namespace fad::client
