// The report page's stylesheet and scripts (page.h), hand-written, no libraries: the page must open
// offline and from a file. The chart script reads the JSON in <script id="report-data"> (page.cpp's
// chart_data) and draws each chart as SVG into its <svg id="chart-...">; a chart whose data is
// missing says so inside its frame. Every drawn data mark has class "mark" (tests count them).

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
#charts { display: grid; grid-template-columns: 1fr 1fr; gap: 12px; margin-top: 14px; }
#charts figure, #charts .side { margin: 0; border: 1px solid var(--line); border-radius: 8px; padding: 6px; min-width: 0; }
#charts svg { width: 100%; height: auto; display: block; font: 11px system-ui, sans-serif; }
svg .title { font-size: 14px; font-weight: 600; fill: var(--ink); }
svg .tick { fill: var(--muted); } svg .grid { stroke: #eef0f3; } svg .axis { stroke: #9ca3af; }
svg .label { fill: #374151; font-size: 11.5px; } svg .empty-note { fill: #9ca3af; font-size: 13px; font-style: italic; }
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

const char* const kChartsJs = R"JS(
(function () {
'use strict';
const NS = 'http://www.w3.org/2000/svg';
const data = JSON.parse(document.getElementById('report-data').textContent);
const PHASE = { forward: '#2563eb', backward: '#ea580c', optimizer: '#16a34a' };
const CATEGORIES = [['parameters', '#2563eb'], ['working_copies', '#7c3aed'], ['gradients', '#ea580c'], ['optimizer_state', '#16a34a'],
                    ['activations', '#dc2626'], ['kv_cache', '#0891b2'], ['other', '#9ca3af']];
const W = 640;

// ---- helpers: elements, numbers for humans ----
function el(parent, tag, attrs, text) {
  const e = document.createElementNS(NS, tag);
  for (const k in attrs || {}) if (attrs[k] !== undefined) e.setAttribute(k, attrs[k]);
  if (text !== undefined) e.textContent = text;
  if (parent) parent.appendChild(e);
  return e;
}
function num(v) { return typeof v === 'number' && isFinite(v) ? v : NaN; }
function arr(v) { return Array.isArray(v) ? v.filter(x => x && typeof x === 'object') : []; }
function phaseColor(p) { return PHASE[p] || '#7c3aed'; }
function three(v) {
  const a = Math.abs(v);
  const s = a >= 99.95 ? v.toFixed(0) : a >= 9.995 ? v.toFixed(1) : v.toFixed(2);
  return s.indexOf('.') >= 0 ? s.replace(/0+$/, '').replace(/\.$/, '') : s;
}
function join(v, unit) { return unit ? v + ' ' + unit : v; }
function si(v, unit) {
  const p = [[1e18, 'E'], [1e15, 'P'], [1e12, 'T'], [1e9, 'G'], [1e6, 'M'], [1e3, 'k'], [1, ''], [1e-3, 'm'], [1e-6, 'µ'], [1e-9, 'n']];
  const a = Math.abs(v);
  if (a === 0) return join('0', unit);
  for (let i = 0; i < p.length; i++)
    if (a >= 0.9995 * p[i][0] || i === p.length - 1) return three(v / p[i][0]) + ' ' + p[i][1] + (unit || '');
}
const IEC = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
function iecPower(v) { let k = 0; while (Math.abs(v) >= 1024 && k + 1 < IEC.length) { v /= 1024; k++; } return k; }
function bytes(v) { const k = iecPower(v); return three(v / Math.pow(1024, k)) + ' ' + IEC[k]; }
function secs(v) {
  const a = Math.abs(v);
  if (a === 0) return '0 s';
  if (a < 0.9995e-6) return three(v * 1e9) + ' ns';
  if (a < 0.9995e-3) return three(v * 1e6) + ' µs';
  if (a < 0.9995) return three(v * 1e3) + ' ms';
  if (a < 120) return three(v) + ' s';
  return a < 7200 ? three(v / 60) + ' min' : three(v / 3600) + ' h';
}

// ---- axes: linear (nice steps), bytes (nice steps in the axis's binary unit), log (decades) ----
function niceStep(span, n) {
  const raw = span / n, mag = Math.pow(10, Math.floor(Math.log10(raw))), r = raw / mag;
  return (r < 1.5 ? 1 : r < 3 ? 2 : r < 7 ? 5 : 10) * mag;
}
function linAxis(lo, hi, label, fmt, n) {
  if (!(hi > lo)) { const d = Math.abs(lo) * 0.1 || 1; lo -= d; hi += d; }
  const s = niceStep(hi - lo, n || 5);
  lo = Math.floor(lo / s + 1e-9) * s; hi = Math.ceil(hi / s - 1e-9) * s;
  const ticks = [];
  for (let i = 0, t = lo; t <= hi + s * 1e-6 && i < 50; i++, t = lo + i * s) ticks.push(Math.abs(t) < s * 1e-9 ? 0 : t);
  return { lo, hi, ticks, label, fmt: fmt || (v => si(v, '')), log: false };
}
function bytesAxis(hi, label) {
  const k = iecPower(hi), unit = Math.pow(1024, k);
  const a = linAxis(0, hi / unit || 1, label, v => three(v) + ' ' + IEC[k], 5);
  return { lo: 0, hi: a.hi * unit, ticks: a.ticks.map(t => t * unit), label, fmt: v => a.fmt(v / unit), log: false };
}
function logAxis(lo, hi, label, fmt) {
  let a = Math.floor(Math.log10(lo)), b = Math.ceil(Math.log10(hi));
  if (b <= a) b = a + 1;
  const ticks = [];
  for (let e = a; e <= b; e++) ticks.push(Math.pow(10, e));
  return { lo: Math.pow(10, a), hi: Math.pow(10, b), ticks, label, fmt, log: true };
}
function mapper(ax, from, to) {
  const f = ax.log ? Math.log10 : (v => v), a = f(ax.lo), b = f(ax.hi);
  return v => from + (f(v) - a) / (b - a) * (to - from);
}

let clipCount = 0;
// A plot area at box {x, y, w, h} with axes xa, ya (ya may be null: no y ticks); returns mappers
// X, Y and a group g clipped to the area for the data marks.
function panel(svg, box, xa, ya) {
  const X = mapper(xa, box.x, box.x + box.w);
  const Y = ya ? mapper(ya, box.y + box.h, box.y) : null;
  const axes = el(svg, 'g');
  for (const t of xa.ticks) {
    const x = X(t);
    el(axes, 'line', { x1: x, x2: x, y1: box.y, y2: box.y + box.h, class: 'grid' });
    el(axes, 'text', { x, y: box.y + box.h + 14, 'text-anchor': 'middle', class: 'tick' }, xa.fmt(t));
  }
  if (ya) for (const t of ya.ticks) {
    const y = Y(t);
    el(axes, 'line', { x1: box.x, x2: box.x + box.w, y1: y, y2: y, class: 'grid' });
    el(axes, 'text', { x: box.x - 6, y: y + 4, 'text-anchor': 'end', class: 'tick' }, ya.fmt(t));
  }
  el(axes, 'path', { d: `M${box.x} ${box.y}V${box.y + box.h}H${box.x + box.w}`, class: 'axis', fill: 'none' });
  el(axes, 'text', { x: box.x + box.w / 2, y: box.y + box.h + 30, 'text-anchor': 'middle', class: 'label' }, xa.label);
  if (ya) el(axes, 'text', { transform: `translate(${box.x - 52} ${box.y + box.h / 2}) rotate(-90)`, 'text-anchor': 'middle', class: 'label' }, ya.label);
  const id = svg.id + '-clip-' + (++clipCount);
  const cp = el(el(svg, 'defs'), 'clipPath', { id });
  el(cp, 'rect', { x: box.x, y: box.y - 1, width: box.w, height: box.h + 2 });
  return { X, Y, box, g: el(svg, 'g', { 'clip-path': `url(#${id})` }) };
}
function frame(svg, height, title) {
  svg.setAttribute('viewBox', `0 0 ${W} ${height}`);
  el(svg, 'text', { x: 12, y: 20, class: 'title' }, title);
}
function empty(svg, title, why) {
  frame(svg, 140, title);
  el(svg, 'rect', { x: 12, y: 34, width: W - 24, height: 90, fill: 'none', stroke: '#d1d5db', 'stroke-dasharray': '4 3', rx: 6 });
  el(svg, 'text', { x: W / 2, y: 84, 'text-anchor': 'middle', class: 'empty-note' }, why);
}
function legend(svg, x, y, items) {
  for (const [name, color, dashed] of items) {
    if (dashed) el(svg, 'line', { x1: x, x2: x + 14, y1: y - 4, y2: y - 4, stroke: color, 'stroke-width': 2, 'stroke-dasharray': '4 3' });
    else el(svg, 'rect', { x, y: y - 9, width: 12, height: 10, fill: color, rx: 2 });
    x += 18 + el(svg, 'text', { x: x + 18, y, class: 'label' }, name).getComputedTextLength() + 14;
  }
}
function line(P, pts, color, extra) {
  if (!pts.length) return;
  const d = pts.map((p, i) => (i ? 'L' : 'M') + P.X(p[0]).toFixed(1) + ' ' + P.Y(p[1]).toFixed(1)).join('');
  el(P.g, 'path', Object.assign({ d, fill: 'none', stroke: color, 'stroke-width': 1.6, class: 'mark series' }, extra || {}));
}
function pairs(xs, ys) {
  const out = [];
  for (let i = 0; i < Math.min((xs || []).length, (ys || []).length); i++)
    if (!isNaN(num(xs[i])) && !isNaN(num(ys[i]))) out.push([xs[i], ys[i]]);
  return out;
}
function minOf(a) { return a.reduce((m, v) => Math.min(m, v), Infinity); }
function maxOf(a) { return a.reduce((m, v) => Math.max(m, v), -Infinity); }
function stepAxis(pts) { return linAxis(minOf(pts.map(p => p[0])), maxOf(pts.map(p => p[0])), 'step', v => si(v, '')); }
function resumeMarks(P, xa) {
  const resumes = Array.isArray(data.resumes) ? data.resumes : [];
  for (const s of resumes.filter(v => !isNaN(num(v)) && v >= xa.lo && v <= xa.hi)) {
    el(P.g, 'line', { x1: P.X(s), x2: P.X(s), y1: P.box.y, y2: P.box.y + P.box.h, stroke: '#6b7280', 'stroke-dasharray': '2 3' });
    el(P.g, 'text', { x: P.X(s) + 3, y: P.box.y + 10, class: 'tick' }, 'resumed');
  }
}
const NO_SUMMARY = 'Needs summary.json, which the run writes when it ends.';

// ---- the charts ----
function chartLoss(svg) {
  const title = 'Training and validation loss (nats/token) by step';
  const pts = pairs(data.metrics.step, data.metrics.loss);
  if (!pts.length) return empty(svg, title, 'No loss recorded: metrics.jsonl is empty or missing.');
  const val = pairs((data.validation || {}).step, (data.validation || {}).val_loss);
  const ent = num(data.unigram_entropy), ys = pts.map(p => p[1]).concat(val.map(p => p[1]));
  if (!isNaN(ent)) ys.push(ent);
  const xa = stepAxis(pts), ya = linAxis(Math.min(0, minOf(ys)), maxOf(ys), 'loss (nats/token)', v => three(v));
  frame(svg, 330, title);
  const P = panel(svg, { x: 70, y: 44, w: W - 90, h: 236 }, xa, ya);
  if (!isNaN(ent)) {
    el(P.g, 'line', { x1: P.box.x, x2: P.box.x + P.box.w, y1: P.Y(ent), y2: P.Y(ent), stroke: '#16a34a', 'stroke-width': 1.5, 'stroke-dasharray': '6 4', class: 'mark' });
    el(P.g, 'text', { x: P.box.x + P.box.w - 4, y: P.Y(ent) - 5, 'text-anchor': 'end', class: 'label', fill: '#16a34a' }, 'unigram entropy ' + three(ent));
  }
  line(P, pts, '#2563eb');
  line(P, val, '#ea580c');
  for (const p of val) el(P.g, 'circle', { cx: P.X(p[0]), cy: P.Y(p[1]), r: 3, fill: '#ea580c', class: 'mark' });
  resumeMarks(P, xa);
  legend(svg, 300, 20, [['training loss', '#2563eb']].concat(val.length ? [['validation loss', '#ea580c']] : [])
    .concat(isNaN(ent) ? [] : [['unigram entropy of the corpus', '#16a34a', true]]));
}

function chartThroughput(svg) {
  const title = 'Throughput (tokens/s) and MFU by step';
  const tps = pairs(data.metrics.step, data.metrics.tokens_per_s);
  const mfu = pairs(data.metrics.step, data.metrics.mfu).map(p => [p[0], p[1] * 100]);
  if (!tps.length && !mfu.length) return empty(svg, title, 'No throughput recorded: metrics.jsonl is empty or missing.');
  frame(svg, 380, title);
  const xa = stepAxis(tps.length ? tps : mfu);
  const panels = [[tps, 'tokens/s', v => si(v, ''), '#2563eb', 40], [mfu, 'MFU (%)', v => three(v) + '%', '#9333ea', 210]];
  for (const [pts, label, fmt, color, top] of panels) {
    const box = { x: 70, y: top, w: W - 90, h: 120 };
    if (!pts.length) {
      el(svg, 'text', { x: W / 2, y: top + 60, 'text-anchor': 'middle', class: 'empty-note' }, label + ': not recorded');
      continue;
    }
    const ya = linAxis(0, maxOf(pts.map(p => p[1])), label, fmt, 4);
    const P = panel(svg, box, Object.assign({}, xa, { label: top > 100 ? 'step' : '' }), ya);
    line(P, pts, color);
    resumeMarks(P, xa);
  }
}

function chartModules(svg) {
  const title = 'FLOPs and time by module (one profiled step)';
  const mods = arr(data.modules);
  if (!mods.length) return empty(svg, title, data.has_summary ? 'summary.json lists no modules.' : NO_SUMMARY);
  const rows = new Map(), phases = ['forward', 'backward', 'optimizer'];
  for (const m of mods) {
    const path = String(m.path === undefined ? '?' : m.path), phase = String(m.phase || 'other');
    if (!rows.has(path)) rows.set(path, { path, flops: {}, seconds: {} });
    const r = rows.get(path);
    r.flops[phase] = (r.flops[phase] || 0) + (num(m.flops) || 0);
    r.seconds[phase] = (r.seconds[phase] || 0) + (num(m.seconds) || 0);
    if (phases.indexOf(phase) < 0) phases.push(phase);
  }
  const total = (o) => Object.values(o).reduce((a, b) => a + b, 0);
  let list = Array.from(rows.values());
  const MAX = 24, dropped = Math.max(0, list.length - MAX);
  if (dropped) list = list.slice().sort((a, b) => total(b.seconds) - total(a.seconds)).slice(0, MAX);
  const rowH = 18, top = 56, h = list.length * rowH, labelW = 170, gap = 50, pw = (W - labelW - 20 - gap) / 2;
  frame(svg, top + h + 50 + (dropped ? 14 : 0), title);
  const used = phases.filter(p => list.some(r => r.flops[p] || r.seconds[p]));
  legend(svg, 12, 40, used.map(p => [p, phaseColor(p)]));
  const specs = [['flops', 'FLOPs', v => si(v, '')], ['seconds', 'time', v => secs(v)]];
  specs.forEach(([key, label, fmt], k) => {
    const box = { x: labelW + 10 + k * (pw + gap), y: top, w: pw, h };
    const xa = linAxis(0, maxOf(list.map(r => total(r[key]))) || 1, label, fmt, 3);
    const P = panel(svg, box, xa, null);
    list.forEach((r, i) => {
      let x0 = 0;
      for (const p of used) {
        const v = r[key][p] || 0;
        if (!(v > 0)) continue;
        const rect = el(P.g, 'rect', { x: P.X(x0), y: top + i * rowH + 3, width: Math.max(0.5, P.X(x0 + v) - P.X(x0)), height: rowH - 6, fill: phaseColor(p), class: 'mark bar' });
        el(rect, 'title', {}, `${r.path} (${p}): ${key === 'flops' ? si(v, 'FLOP') : secs(v)}`);
        x0 += v;
      }
    });
  });
  list.forEach((r, i) => {
    const shown = r.path.length > 28 ? '…' + r.path.slice(-27) : r.path;
    const t = el(svg, 'text', { x: labelW, y: top + i * rowH + 13, 'text-anchor': 'end', class: 'label' }, shown);
    el(t, 'title', {}, r.path);
  });
  if (dropped) el(svg, 'text', { x: 12, y: top + h + 48, class: 'tick' }, `${dropped} more modules with less time not shown`);
}

function chartMemory(svg) {
  const title = 'Live memory by category over one step (after each op)';
  const tl = arr(data.memory_timeline);
  if (!tl.length) return empty(svg, title, data.has_summary ? 'summary.json has no memory_timeline.' : NO_SUMMARY);
  const xs = tl.map((p, i) => isNaN(num(p.op)) ? i : p.op);
  const stacks = [], base = tl.map(() => 0);
  for (const [cat, color] of CATEGORIES) {
    const lower = base.slice();
    tl.forEach((p, i) => { base[i] += Math.max(0, num(p[cat]) || 0); });
    stacks.push({ cat, color, lower, upper: base.slice() });
  }
  frame(svg, 340, title);
  const xa = linAxis(minOf(xs), maxOf(xs), 'op index in the step', v => si(v, ''));
  const ya = bytesAxis(maxOf(base) || 1, 'live bytes');
  const P = panel(svg, { x: 70, y: 56, w: W - 90, h: 226 }, xa, ya);
  // Phase bands behind the areas: forward, backward, optimizer.
  for (let i = 0; i < tl.length;) {
    let j = i;
    while (j + 1 < tl.length && tl[j + 1].phase === tl[i].phase) j++;
    const x0 = P.X(xs[i]), x1 = P.X(xs[j]);
    el(P.g, 'rect', { x: x0, y: P.box.y, width: Math.max(1, x1 - x0), height: P.box.h, fill: phaseColor(tl[i].phase), opacity: 0.06 });
    if (x1 - x0 > 40) el(P.g, 'text', { x: (x0 + x1) / 2, y: P.box.y + 12, 'text-anchor': 'middle', class: 'tick' }, String(tl[i].phase || ''));
    i = j + 1;
  }
  for (const s of stacks) {
    if (!s.upper.some((u, i) => u > s.lower[i])) continue;
    const up = xs.map((x, i) => P.X(x).toFixed(1) + ' ' + P.Y(s.upper[i]).toFixed(1));
    const down = xs.map((x, i) => P.X(x).toFixed(1) + ' ' + P.Y(s.lower[i]).toFixed(1)).reverse();
    const a = el(P.g, 'path', { d: 'M' + up.join('L') + 'L' + down.join('L') + 'Z', fill: s.color, 'fill-opacity': 0.75, stroke: s.color, class: 'mark area' });
    el(a, 'title', {}, `${s.cat}: peak ${bytes(maxOf(s.upper.map((u, i) => u - s.lower[i])))}`);
  }
  legend(svg, 12, 42, CATEGORIES.map(([c, color]) => [c.replace('_', ' '), color]));
}

function chartRoofline(svg) {
  const title = 'Roofline: achieved FLOP/s vs arithmetic intensity, per op';
  const m = data.machine && typeof data.machine === 'object' ? data.machine : {};
  const peak = num(m.peak_flops_measured), bw = num(m.peak_bandwidth_measured), promised = num(m.peak_flops_promised);
  const pts = [];
  let skipped = 0;
  for (const op of arr(data.ops)) {
    const f = num(op.flops), b = num(op.bytes), s = num(op.seconds);
    const I = num(op.intensity) > 0 ? op.intensity : f / b, perf = f / s;
    if (I > 0 && isFinite(I) && perf > 0 && isFinite(perf)) pts.push({ op, I, perf });
    else skipped++;
  }
  if (!pts.length && !(peak > 0)) return empty(svg, title, data.has_summary ? 'summary.json lists no ops with FLOPs and time.' : NO_SUMMARY);
  const ridge = peak > 0 && bw > 0 ? peak / bw : NaN;
  const Is = pts.map(p => p.I).concat(isNaN(ridge) ? [] : [ridge]);
  const Ps = pts.map(p => p.perf).concat([peak, promised].filter(v => v > 0));
  const xa = logAxis(minOf(Is.length ? Is : [0.1]) / 2, maxOf(Is.length ? Is : [100]) * 2, 'arithmetic intensity (FLOP/byte)', v => si(v, ''));
  const ya = logAxis(minOf(Ps) / 2, maxOf(Ps) * 2, 'achieved (FLOP/s)', v => si(v, ''));
  frame(svg, 380, title);
  const P = panel(svg, { x: 70, y: 44, w: W - 90, h: 256 }, xa, ya);
  const roof = [];
  if (bw > 0) roof.push([xa.lo, bw * xa.lo]);
  if (peak > 0) { if (bw > 0) roof.push([ridge, peak]); else roof.push([xa.lo, peak]); roof.push([xa.hi, peak]); }
  else if (bw > 0) roof.push([xa.hi, bw * xa.hi]);
  if (roof.length > 1) {
    line(P, roof, '#111827', { 'stroke-width': 2.2 });
    if (peak > 0) el(P.g, 'text', { x: P.box.x + P.box.w - 4, y: P.Y(peak) - 5, 'text-anchor': 'end', class: 'label' }, 'measured peak ' + si(peak, 'FLOP/s'));
    if (bw > 0) {
      const xl = Math.max(xa.lo * 1.5, Math.min(isNaN(ridge) ? xa.hi : ridge / 30, xa.hi));
      el(P.g, 'text', { x: P.X(xl) + 4, y: P.Y(bw * xl) - 6, class: 'label' }, 'bandwidth ' + si(bw, 'B/s'));
    }
    if (!isNaN(ridge)) el(P.g, 'text', { x: P.X(ridge), y: P.Y(peak) + 14, 'text-anchor': 'middle', class: 'tick' }, 'ridge ' + three(ridge) + ' FLOP/B');
  }
  if (promised > 0) {
    el(P.g, 'line', { x1: P.box.x, x2: P.box.x + P.box.w, y1: P.Y(promised), y2: P.Y(promised), stroke: '#6b7280', 'stroke-dasharray': '2 3' });
    el(P.g, 'text', { x: P.box.x + 4, y: P.Y(promised) - 5, class: 'tick' }, 'promised peak ' + si(promised, 'FLOP/s'));
  }
  const phases = [];
  for (const p of pts) {
    const ph = String(p.op.phase || 'other');
    if (phases.indexOf(ph) < 0) phases.push(ph);
    const c = el(P.g, 'circle', { cx: P.X(p.I).toFixed(1), cy: P.Y(p.perf).toFixed(1), r: 4.5, fill: phaseColor(ph), 'fill-opacity': 0.8, stroke: '#fff', 'stroke-width': 0.8, class: 'mark point' });
    el(c, 'title', {}, `${String(p.op.name)} (${ph}): ${num(p.op.calls) || '?'} calls, ${si(num(p.op.flops), 'FLOP')}, ${bytes(num(p.op.bytes) || 0)}, ` +
       `${secs(num(p.op.seconds))}; ${three(p.I)} FLOP/byte, ${si(p.perf, 'FLOP/s')}` + (p.op.bound ? `, ${p.op.bound}-bound` : ''));
  }
  legend(svg, 12, 356, phases.map(ph => [ph, phaseColor(ph)]));
  if (skipped) el(svg, 'text', { x: W - 12, y: 372, 'text-anchor': 'end', class: 'tick' }, `${skipped} ops without FLOPs or time (views, copies) not placed`);
}

const charts = { 'chart-loss': chartLoss, 'chart-throughput': chartThroughput, 'chart-modules': chartModules,
                 'chart-memory': chartMemory, 'chart-roofline': chartRoofline };
let drawn = 0;
for (const id in charts) {
  const svg = document.getElementById(id);
  try { charts[id](svg); drawn++; } catch (e) {
    window.__tallyError(id + ': ' + (e && e.message ? e.message : e));
    el(svg, 'text', { x: 12, y: 60, class: 'empty-note' }, 'This chart failed to draw: ' + (e && e.message));
  }
}
const status = document.getElementById('report-status');
status.dataset.status = window.__tallyErrors.length ? 'error' : 'ok';
status.textContent = `charts drawn: ${drawn} of ${Object.keys(charts).length}`;
})();
)JS";

}  // namespace tally::cli::report
