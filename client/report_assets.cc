// Inline CSS and script of the HTML report; see report_assets.h.
#include "client/report_assets.h"

namespace fad::client {

const char* const kReportCss = R"css(
body { font: 14px/1.4 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 24px; color: #222; background: #fff; }
h1 { font-size: 20px; margin: 0 0 4px; }
h2 { font-size: 16px; margin: 28px 0 6px; }
.summary { color: #555; margin-bottom: 8px; }
svg { display: block; width: 100%; height: auto; max-width: 1200px; }
svg text { font: 11px system-ui, sans-serif; fill: #444; }
.axis line, .grid line { stroke: #ddd; }
.axis path { stroke: #999; fill: none; }
.line-available { stroke: #1565c0; stroke-width: 1.5; fill: none; stroke-dasharray: 5 3; }
.line-capacity { stroke: #ef6c00; stroke-width: 1.5; fill: none; }
.line-budget { stroke: #c62828; stroke-width: 1.5; fill: none; stroke-dasharray: 2 3; }
.mem-unit { stroke: #fff; stroke-width: 0.3; opacity: 0.85; }
.mem-unit.hl, .unit-row.hl .bar { stroke: #000; stroke-width: 1.2; opacity: 1; }
.span.wait { fill: #e6e6e6; }
.span.suspended { fill: #fdd835; opacity: 0.85; }
.span.paused { fill: #8e24aa; opacity: 0.55; }
.outcome-succeeded { fill: #43a047; }
.outcome-failed { fill: #e53935; }
.outcome-cancelled { fill: #9e9e9e; }
.outcome-requeued { fill: #fb8c00; }
.outcome-oom { fill: #8e0000; }
.outcome-shutdown, .outcome-lost, .outcome-disk_full { fill: #78909c; }
.outcome-running, .outcome-paused, .outcome-suspended { fill: #1e88e5; }
.unit-row:hover text { fill: #000; font-weight: 600; }
.legend { display: flex; flex-wrap: wrap; gap: 14px; color: #444; font-size: 12px; margin: 4px 0; }
.legend span::before { content: ""; display: inline-block; width: 12px; height: 10px; margin-right: 4px;
  vertical-align: -1px; background: var(--c); }
#readout { font-size: 12px; color: #333; min-height: 1.4em; }
table { border-collapse: collapse; font-size: 12px; margin-top: 6px; }
th, td { padding: 3px 8px; border-bottom: 1px solid #eee; text-align: right; white-space: nowrap; }
th { cursor: pointer; background: #fafafa; position: sticky; top: 0; }
td:first-child, th:first-child, td.l, th.l { text-align: left; }
tr.over td.ratio { color: #c62828; font-weight: 600; }
tr.hl td { background: #fff6d6; }
.note { color: #777; font-size: 12px; margin-top: 20px; }
)css";

const char* const kReportScript = R"js(
(function () {
  'use strict';
  var body = document.body;
  window.addEventListener('error', function (e) { body.setAttribute('data-error', String(e.message)); });
  var data = JSON.parse(document.getElementById('fad-data').textContent);

  function size(b) {
    var u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'], i = 0;
    while (b >= 1024 && i < u.length - 1) { b /= 1024; i++; }
    return (i ? b.toFixed(1) : String(Math.round(b))) + ' ' + u[i];
  }
  function clock(s) {
    s = Math.max(0, Math.round(s));
    var h = Math.floor(s / 3600), m = Math.floor(s / 60) % 60, r = s % 60;
    return (h ? h + 'h ' : '') + (h || m ? m + 'm ' : '') + r + 's';
  }
  function valueAt(series, t) {  // series: [[t, v], ...] sorted; last value at or before t
    var v = null;
    for (var i = 0; i < series.length && series[i][0] <= t; i++) v = series[i][1];
    return v;
  }

  // Memory read-out under the pointer.
  var mem = document.getElementById('memory'), readout = document.getElementById('readout');
  var cursor = document.getElementById('cursor');
  if (mem && readout && cursor) {
    mem.addEventListener('mousemove', function (ev) {
      var box = mem.getBoundingClientRect();
      var x = (ev.clientX - box.left) * (data.width / box.width);
      if (x < data.left || x > data.right) return;
      var t = (x - data.left) / (data.right - data.left) * data.duration;
      var k = Math.min(data.grid.length - 1, Math.max(0, Math.floor(t / data.duration * (data.grid.length - 1))));
      var parts = [clock(t) + ': fad\u2019s units ' + size(data.fad[k])];
      var a = valueAt(data.available, t), c = valueAt(data.capacity, t);
      if (a !== null) parts.push('available ' + size(a));
      if (c !== null) parts.push('capacity ' + size(c));
      if (data.budget) parts.push('budget ' + size(data.budget));
      readout.textContent = parts.join(', ');
      cursor.setAttribute('x1', x);
      cursor.setAttribute('x2', x);
      cursor.style.display = '';
    });
    mem.addEventListener('mouseleave', function () { cursor.style.display = 'none'; });
  }

  // One unit highlighted everywhere it is drawn.
  function highlight(unit, on) {
    var sel = '[data-unit="' + unit + '"]';
    document.querySelectorAll(sel).forEach(function (el) { el.classList.toggle('hl', on); });
  }
  document.querySelectorAll('[data-unit]').forEach(function (el) {
    var unit = el.getAttribute('data-unit');
    el.addEventListener('mouseenter', function () { highlight(unit, true); });
    el.addEventListener('mouseleave', function () { highlight(unit, false); });
  });

  // Sortable table: click a header; numbers sort by their data-v.
  var table = document.getElementById('units');
  if (table) {
    table.querySelectorAll('th').forEach(function (th, col) {
      var asc = true;
      th.addEventListener('click', function () {
        var rows = Array.prototype.slice.call(table.tBodies[0].rows);
        rows.sort(function (a, b) {
          var x = a.cells[col], y = b.cells[col];
          var vx = x.hasAttribute('data-v') ? parseFloat(x.getAttribute('data-v')) : x.textContent;
          var vy = y.hasAttribute('data-v') ? parseFloat(y.getAttribute('data-v')) : y.textContent;
          var r = vx < vy ? -1 : vx > vy ? 1 : 0;
          return asc ? r : -r;
        });
        asc = !asc;
        rows.forEach(function (r) { table.tBodies[0].appendChild(r); });
      });
    });
  }

  body.setAttribute('data-bars', String(document.querySelectorAll('#gantt rect.bar').length));
  body.setAttribute('data-ready', '1');
})();
)js";

}  // namespace fad::client
