// The report page's stylesheet and its first script (page.h). The charts are drawn by charts.js
// with Chart.js, both compiled in from files (CMakeLists.txt) and inlined: the page opens offline.

#include "cli/report/page.h"

namespace tally::cli::report {

const char* const kPageCss = R"CSS(
:root { --ink: #1f2937; --muted: #6b7280; --line: #e5e7eb; --bg: #f8fafc; }
* { box-sizing: border-box; }
body { margin: 0 auto; max-width: 1200px; padding: 16px 24px; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--ink); background: #fff; }
h1 { font-size: 22px; margin: 4px 0 12px; } h1 .run-name { color: var(--muted); font-weight: 500; }
h2 { font-size: 16px; margin: 18px 0 8px; }
code { font: 12.5px ui-monospace, "DejaVu Sans Mono", monospace; word-break: break-all; }
#js-errors { background: #fee2e2; color: #991b1b; padding: 8px 12px; white-space: pre-wrap; border-radius: 6px; }
#notes ul { margin: 0 0 12px; padding: 8px 12px 8px 28px; background: #fef9c3; border-radius: 6px; }
.cards { display: grid; grid-template-columns: repeat(3, 1fr); gap: 12px; }
.card { border: 1px solid var(--line); border-radius: 8px; padding: 4px 14px 10px; background: var(--bg); min-width: 0; }
.card h2 { margin-top: 8px; }
table { border-collapse: collapse; width: 100%; }
th, td { padding: 3px 8px; border-bottom: 1px solid var(--line); text-align: left; vertical-align: top; }
thead th { border-bottom: 2px solid #cbd5e1; font-weight: 600; }
table.kv th { font-weight: 500; color: var(--muted); width: 42%; }
table.numbers td + td, table.numbers th + th { text-align: right; white-space: nowrap; }
table.ops td:nth-child(2), table.ops th:nth-child(2) { text-align: left; }
.missing { color: #9ca3af; font-style: italic; }
p.missing { padding: 8px 12px; border: 1px dashed #d1d5db; border-radius: 6px; }
.note { color: var(--muted); font-size: 13px; }
#controls { display: flex; gap: 24px; align-items: center; margin: 14px 0 0; color: var(--muted); }
#controls label { display: flex; gap: 8px; align-items: center; }
#charts { display: grid; grid-template-columns: 1fr 1fr; gap: 12px; margin-top: 10px; }
#charts figure, #charts .side { margin: 0; border: 1px solid var(--line); border-radius: 8px; padding: 6px 8px; min-width: 0; }
#charts figure.wide { grid-column: 1 / -1; }
figcaption { font-size: 14px; font-weight: 600; margin: 2px 4px 6px; }
.chart-box { position: relative; height: 280px; }
.chart-pair { display: grid; grid-template-columns: 1fr 1fr; gap: 12px; }
.empty-note { color: #9ca3af; font-style: italic; padding: 30px 12px; border: 1px dashed #d1d5db; border-radius: 6px; text-align: center; margin: 4px; }
.grid { display: grid; grid-template-columns: 1fr 1fr; gap: 16px; }
#charts .side h2 { margin-top: 4px; }
.split { display: flex; height: 14px; border-radius: 4px; overflow: hidden; margin: 6px 0; max-width: 600px; }
.split .compute { background: #2563eb; } .split .memory { background: #f59e0b; }
details { margin: 8px 0; } summary { cursor: pointer; color: #2563eb; }
footer { margin: 24px 0 8px; color: var(--muted); font-size: 12px; border-top: 1px solid var(--line); padding-top: 8px; }
#report-status { display: none; }
@media (max-width: 900px) { .cards, #charts, .grid { grid-template-columns: 1fr; } }
)CSS";

const char* const kErrorHookJs = R"JS(
window.__tallyErrors = [];
window.__tallyShowErrors = function () {
  var d = document.getElementById('js-errors');
  if (d && window.__tallyErrors.length) { d.hidden = false; d.textContent = 'Script errors on this page:\n' + window.__tallyErrors.join('\n'); }
};
window.__tallyError = function (msg) { window.__tallyErrors.push(String(msg)); window.__tallyShowErrors(); };
window.onerror = function (msg, src, line) { window.__tallyError(msg + ' (line ' + line + ')'); };
document.addEventListener('DOMContentLoaded', window.__tallyShowErrors);
)JS";

}  // namespace tally::cli::report
