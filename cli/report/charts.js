// The report page's charts, drawn with Chart.js 3 (inlined before this script; page.cpp).
//
// It reads the JSON blob the page embeds with id "report-data" (page.cpp): `runs`, one entry per run
// with its metrics as columns, and `detail`, the one run's per-op, per-module and memory lists (null
// on a comparison page). Each chart is a <canvas id="chart-..."> in a <figure>; a chart whose data
// is missing says why in its figure instead. What each chart drew (datasets and their points) goes
// into #report-status as JSON, which the Chromium test reads; with #selftest in the URL it also
// hovers the last point of each chart and records the tooltip, and flips the log-axis control.
(function () {
'use strict';
const data = JSON.parse(document.getElementById('report-data').textContent);
const runs = Array.isArray(data.runs) ? data.runs : [];
const detail = data.detail && typeof data.detail === 'object' ? data.detail : null;
const comparing = runs.length > 1;
const RUN_COLORS = ['#2563eb', '#ea580c', '#16a34a', '#9333ea', '#dc2626', '#0891b2', '#ca8a04', '#db2777', '#4b5563', '#65a30d'];
const PHASE = { forward: '#2563eb', backward: '#ea580c', optimizer: '#16a34a' };
const CATEGORIES = [['parameters', '#2563eb'], ['working_copies', '#7c3aed'], ['gradients', '#ea580c'], ['optimizer_state', '#16a34a'],
                    ['activations', '#dc2626'], ['kv_cache', '#0891b2'], ['other', '#9ca3af']];
const NO_SUMMARY = 'Needs summary.json, which the run writes when it ends.';

// ---- numbers for humans (the tables' conventions: SI for counts, binary prefixes for bytes) ----
function num(v) { return typeof v === 'number' && isFinite(v) ? v : NaN; }
function arr(v) { return Array.isArray(v) ? v.filter(x => x && typeof x === 'object') : []; }
function phaseColor(p) { return PHASE[p] || '#7c3aed'; }
function three(v) {
  const a = Math.abs(v);
  const s = a >= 99.95 ? v.toFixed(0) : a >= 9.995 ? v.toFixed(1) : a >= 0.9995 || a === 0 ? v.toFixed(2) : v.toPrecision(3);
  return s.indexOf('.') >= 0 && s.indexOf('e') < 0 ? s.replace(/0+$/, '').replace(/\.$/, '') : s;
}
function si(v, unit) {
  const p = [[1e18, 'E'], [1e15, 'P'], [1e12, 'T'], [1e9, 'G'], [1e6, 'M'], [1e3, 'k'], [1, ''], [1e-3, 'm'], [1e-6, 'µ'], [1e-9, 'n']];
  const a = Math.abs(v);
  if (!isFinite(v)) return String(v);
  if (a === 0) return unit ? '0 ' + unit : '0';
  for (let i = 0; i < p.length; i++)
    if (a >= 0.9995 * p[i][0] || i === p.length - 1) return (three(v / p[i][0]) + ' ' + p[i][1] + (unit || '')).trim();
}
const IEC = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
function bytes(v) {
  let k = 0;
  while (Math.abs(v) >= 1024 * Math.pow(1024, k) && k + 1 < IEC.length) k++;
  return three(v / Math.pow(1024, k)) + ' ' + IEC[k];
}
function secs(v) {
  const a = Math.abs(v);
  if (a === 0) return '0 s';
  if (a < 0.9995e-6) return three(v * 1e9) + ' ns';
  if (a < 0.9995e-3) return three(v * 1e6) + ' µs';
  if (a < 0.9995) return three(v * 1e3) + ' ms';
  if (a < 120) return three(v) + ' s';
  return a < 7200 ? three(v / 60) + ' min' : three(v / 3600) + ' h';
}
function percent(v) { return three(v) + '%'; }
// Log axes get a label at each power of ten only (Chart.js places ticks at 1-9 times each).
function decade(v) { const e = Math.log10(v); return Math.abs(e - Math.round(e)) < 1e-9 ? si(v, '') : ''; }
// On a log y axis the curves label 1, 2 and 5 times each power of ten.
function oneTwoFive(v) { const m = Math.round(v / Math.pow(10, Math.floor(Math.log10(v) + 1e-9)) * 1e6) / 1e6; return m === 1 || m === 2 || m === 5; }
// Byte axes step by a round number of the axis's binary unit (4 MiB, not 4.77 MiB).
function bytesStep(max) {
  let unit = 1;
  while (max >= 1024 * unit && unit < Math.pow(1024, IEC.length - 1)) unit *= 1024;
  const raw = max / unit / 6, mag = Math.pow(10, Math.floor(Math.log10(raw))), r = raw / mag;
  return (r < 1.5 ? 1 : r < 3 ? 2 : r < 7 ? 5 : 10) * mag * unit;
}
function withAlpha(hex, alpha) { return hex + Math.round(alpha * 255).toString(16).padStart(2, '0'); }

// {x, y} points of two columns, skipping the rows where either is missing.
function points(xs, ys, scale) {
  const out = [];
  for (let i = 0; i < Math.min((xs || []).length, (ys || []).length); i++) {
    const x = num(xs[i]), y = num(ys[i]);
    if (!isNaN(x) && !isNaN(y)) out.push({ x, y: y * (scale || 1) });
  }
  return out;
}
// TensorBoard's smoothing: an exponential moving average with weight w, debiased so that the
// first points are not pulled toward 0.
function smooth(pts, w) {
  if (!(w > 0)) return pts;
  let acc = 0;
  return pts.map((p, i) => { acc = acc * w + (1 - w) * p.y; return { x: p.x, y: acc / (1 - Math.pow(w, i + 1)) }; });
}

// ---- Chart.js settings shared by every chart ----
Chart.defaults.animation = false;
Chart.defaults.maintainAspectRatio = false;
Chart.defaults.font.family = 'system-ui, -apple-system, "Segoe UI", sans-serif';
Chart.defaults.font.size = 11;
Chart.defaults.color = '#374151';
Chart.defaults.plugins.legend.labels.boxWidth = 12;
Chart.defaults.plugins.title.display = false;  // the <figcaption> is the title

// Reference marks Chart.js has no element for: shaded bands (the memory chart's phases) behind
// the data, and labelled vertical lines (resumptions) in front of it.
Chart.register({
  id: 'tallyMarks',
  beforeDatasetsDraw(chart, args, opts) {
    const { ctx, chartArea: a, scales: { x } } = chart;
    for (const b of opts.bands || []) {
      const x0 = Math.max(a.left, x.getPixelForValue(b.from)), x1 = Math.min(a.right, x.getPixelForValue(b.to));
      if (!(x1 > x0)) continue;
      ctx.save();
      ctx.fillStyle = b.color;
      ctx.fillRect(x0, a.top, x1 - x0, a.bottom - a.top);
      if (b.label && x1 - x0 > 50) {
        ctx.fillStyle = '#6b7280';
        ctx.textAlign = 'center';
        ctx.fillText(b.label, (x0 + x1) / 2, a.top + 12);
      }
      ctx.restore();
    }
  },
  afterDatasetsDraw(chart, args, opts) {
    const { ctx, chartArea: a, scales: { x } } = chart;
    for (const v of opts.vlines || []) {
      const px = x.getPixelForValue(v.x);
      if (!(px >= a.left && px <= a.right)) continue;
      ctx.save();
      ctx.strokeStyle = '#6b7280';
      ctx.setLineDash([2, 3]);
      ctx.beginPath();
      ctx.moveTo(px, a.top);
      ctx.lineTo(px, a.bottom);
      ctx.stroke();
      ctx.fillStyle = '#6b7280';
      ctx.fillText(v.label, px + 3, a.top + 10);
      ctx.restore();
    }
  },
});

// The page's record of what each chart drew, for the tests and for anyone reading the DOM.
const drawn = {};
function record(id, chart) {
  const sets = chart.data.datasets.map(d => ({ label: d.label, points: d.data.length, hidden: !!d.hidden }));
  const vlines = ((chart.options.plugins.tallyMarks || {}).vlines || []).map(v => v.label);
  drawn[id] = Object.assign(drawn[id] || {}, { empty: false, datasets: sets, labels: (chart.data.labels || []).map(String), vlines });
  return chart;
}
function figureOf(id) { return document.getElementById(id); }
function empty(id, why) {
  const canvas = figureOf(id), box = canvas.parentNode;
  const p = document.createElement('p');
  p.className = 'empty-note';
  p.textContent = why;
  box.replaceWith(p);
  drawn[id] = { empty: true, note: why };
}
function make(id, config) { return record(id, new Chart(figureOf(id), config)); }
function axisTitle(text) { return { display: true, text }; }
function tooltip(title, label) {
  return { mode: 'nearest', axis: 'x', intersect: false,
           filter: item => !item.dataset.raw, callbacks: { title, label } };
}

// ---- the curves: one line per run (two per run when smoothed: the raw faint behind) ----
const state = { smoothing: 0, logY: false };
const CURVES = [
  { id: 'chart-loss', key: 'loss', what: 'loss', axis: 'loss (nats/token)', fmt: three, smooth: true, log: true },
  { id: 'chart-lr', key: 'lr', what: 'learning rate', axis: 'learning rate', fmt: v => v.toExponential(2), smooth: false, log: true },
  { id: 'chart-grad-norm', key: 'grad_norm', what: 'gradient norm', axis: 'gradient norm (before clipping)', fmt: three, smooth: true, log: true },
  { id: 'chart-throughput', key: 'tokens_per_s', what: 'throughput', axis: 'tokens/s', fmt: v => si(v, ''), smooth: true, log: false },
  { id: 'chart-mfu', key: 'mfu', what: 'MFU', axis: 'MFU (% of the promised peak)', fmt: percent, smooth: true, log: false, scale: 100 },
];
const curveCharts = {};

function curveDatasets(spec) {
  const sets = [];
  runs.forEach((run, r) => {
    const m = run.metrics || {}, color = comparing ? RUN_COLORS[r % RUN_COLORS.length] : '#2563eb';
    const raw = points(m.step, m[spec.key], spec.scale);
    if (!raw.length) return;
    const name = comparing ? run.name : spec.what;
    const smoothed = spec.smooth && state.smoothing > 0;
    if (smoothed)
      sets.push({ label: name + ' (raw)', raw: true, data: raw, borderColor: withAlpha(color, 0.25), borderWidth: 1, pointRadius: 0 });
    sets.push({ label: name, data: smoothed ? smooth(raw, state.smoothing) : raw, borderColor: color, backgroundColor: color,
                borderWidth: 1.6, pointRadius: 0, pointHitRadius: 4 });
    if (spec.key === 'loss') {
      const v = run.validation || {}, val = points(v.step, v.val_loss);
      const vcolor = comparing ? color : '#ea580c';
      if (val.length)
        sets.push({ label: (comparing ? run.name + ' ' : '') + 'validation loss', data: val, borderColor: vcolor, backgroundColor: vcolor,
                    borderDash: comparing ? [5, 3] : [], borderWidth: 1.6, pointRadius: 3 });
      const ent = num(run.unigram_entropy);
      if (!comparing && !isNaN(ent))
        sets.push({ label: 'unigram entropy of the corpus ' + three(ent), data: [{ x: raw[0].x, y: ent }, { x: raw[raw.length - 1].x, y: ent }],
                    borderColor: '#16a34a', borderDash: [6, 4], borderWidth: 1.5, pointRadius: 0 });
    }
  });
  return sets;
}

function drawCurve(spec) {
  if (!figureOf(spec.id)) return;
  const sets = curveDatasets(spec);
  if (!sets.length)
    return empty(spec.id, comparing ? `None of the runs recorded the ${spec.what} (metrics.jsonl's "${spec.key}").`
                                    : `No ${spec.what} recorded: metrics.jsonl is empty or missing, or has no "${spec.key}".`);
  const vlines = comparing ? [] : (runs[0].resumes || []).filter(s => !isNaN(num(s))).map(s => ({ x: s, label: 'resumed' }));
  curveCharts[spec.id] = make(spec.id, {
    type: 'line',
    data: { datasets: sets },
    options: {
      parsing: false, normalized: true, spanGaps: true,
      scales: { x: { type: 'linear', title: axisTitle('step'), ticks: { callback: v => si(v, '') } },
                y: { type: spec.log && state.logY ? 'logarithmic' : 'linear', title: axisTitle(spec.axis),
                     ticks: { callback: v => (spec.log && state.logY && !oneTwoFive(v) ? '' : spec.fmt(v)) } } },
      interaction: { mode: 'nearest', axis: 'x', intersect: false },
      plugins: { legend: { labels: { filter: (item, d) => !d.datasets[item.datasetIndex].raw } },
                 tooltip: tooltip(items => 'step ' + si(items[0].parsed.x, ''), item => `${item.dataset.label}: ${spec.fmt(item.parsed.y)}`),
                 tallyMarks: { vlines } },
    },
  });
}

// The controls redraw the curves in place: new data for the smoothing, a new y scale for the log axis.
function redrawCurves() {
  for (const spec of CURVES) {
    const chart = curveCharts[spec.id];
    if (!chart) continue;
    chart.data.datasets = curveDatasets(spec);
    chart.options.scales.y.type = spec.log && state.logY ? 'logarithmic' : 'linear';
    chart.update('none');
    record(spec.id, chart);
  }
  writeStatus();
}
function hookControls() {
  const slider = document.getElementById('smoothing'), shown = document.getElementById('smoothing-value');
  const log = document.getElementById('log-y');
  if (slider) {
    state.smoothing = num(parseFloat(slider.value)) || 0;
    const show = () => { if (shown) shown.textContent = state.smoothing.toFixed(2); };
    show();
    slider.addEventListener('input', () => { state.smoothing = num(parseFloat(slider.value)) || 0; show(); redrawCurves(); });
  }
  if (log) {
    state.logY = log.checked;
    log.addEventListener('change', () => { state.logY = log.checked; redrawCurves(); });
  }
}

// ---- one run's detail: FLOPs and time by module, memory over a step, the roofline ----
function drawModules() {
  const ids = ['chart-modules-flops', 'chart-modules-time'];
  if (!figureOf(ids[0])) return;
  const mods = arr(detail.modules);
  if (!mods.length) {
    const why = detail.has_summary ? 'summary.json lists no modules.' : NO_SUMMARY;
    return ids.forEach(id => empty(id, why));
  }
  const rows = new Map(), phases = [];
  for (const m of mods) {
    const path = String(m.path === undefined ? '?' : m.path), phase = String(m.phase || 'other');
    if (!rows.has(path)) rows.set(path, { path, flops: {}, seconds: {} });
    const r = rows.get(path);
    r.flops[phase] = (r.flops[phase] || 0) + (num(m.flops) || 0);
    r.seconds[phase] = (r.seconds[phase] || 0) + (num(m.seconds) || 0);
    if (phases.indexOf(phase) < 0) phases.push(phase);
  }
  const total = o => Object.values(o).reduce((a, b) => a + b, 0);
  let list = Array.from(rows.values());
  const MAX = 24, dropped = Math.max(0, list.length - MAX);
  if (dropped) list = list.slice().sort((a, b) => total(b.seconds) - total(a.seconds)).slice(0, MAX);
  const labels = list.map(r => r.path.length > 28 ? '…' + r.path.slice(-27) : r.path);
  [['flops', 'FLOPs', v => si(v, 'FLOP')], ['seconds', 'time', secs]].forEach(([key, label, fmt], k) => {
    const id = ids[k];
    figureOf(id).parentNode.style.height = (70 + 18 * list.length) + 'px';
    make(id, {
      type: 'bar',
      data: { labels, datasets: phases.map(p => ({ label: p, data: list.map(r => r[key][p] || 0), backgroundColor: phaseColor(p) })) },
      options: {
        indexAxis: 'y',
        scales: { x: { stacked: true, title: axisTitle(label + (dropped && k === 0 ? ` (${dropped} modules with less time not shown)` : '')),
                       ticks: { callback: v => fmt(v) } },
                  y: { stacked: true, ticks: { autoSkip: false } } },
        plugins: { tooltip: { callbacks: { title: items => list[items[0].dataIndex].path,
                                           label: item => `${item.dataset.label}: ${fmt(item.parsed.x)}` } } },
      },
    });
  });
}

function drawMemory() {
  const id = 'chart-memory';
  if (!figureOf(id)) return;
  const tl = arr(detail.memory_timeline);
  if (!tl.length) return empty(id, detail.has_summary ? 'summary.json has no memory_timeline.' : NO_SUMMARY);
  const xs = tl.map((p, i) => isNaN(num(p.op)) ? i : p.op);
  const sets = [];
  for (const [cat, color] of CATEGORIES) {
    const ys = tl.map(p => Math.max(0, num(p[cat]) || 0));
    if (!ys.some(v => v > 0)) continue;
    sets.push({ label: cat.replace('_', ' '), data: xs.map((x, i) => ({ x, y: ys[i] })), borderColor: color, borderWidth: 1,
                backgroundColor: withAlpha(color, 0.7), fill: sets.length ? '-1' : 'origin', pointRadius: 0 });
  }
  const bands = [];  // the step's phases behind the areas: forward, backward, optimizer
  for (let i = 0; i < tl.length;) {
    let j = i;
    while (j + 1 < tl.length && tl[j + 1].phase === tl[i].phase) j++;
    bands.push({ from: xs[i], to: xs[j], color: withAlpha(phaseColor(tl[i].phase), 0.07), label: String(tl[i].phase || '') });
    i = j + 1;
  }
  make(id, {
    type: 'line',
    data: { datasets: sets },
    options: {
      parsing: false, normalized: true,
      scales: { x: { type: 'linear', title: axisTitle('op index in the step') },
                y: { stacked: true, beginAtZero: true, title: axisTitle('live bytes'),
                     ticks: { stepSize: bytesStep(Math.max(...xs.map((x, i) => sets.reduce((a, d) => a + d.data[i].y, 0)))), callback: v => bytes(v) } } },
      interaction: { mode: 'index', intersect: false },
      plugins: { tooltip: { callbacks: { title: items => `after op ${items[0].parsed.x}` + (tl[items[0].dataIndex].name ? ` (${tl[items[0].dataIndex].name})` : ''),
                                         label: item => `${item.dataset.label}: ${bytes(item.raw.y)}` } },
                 tallyMarks: { bands } },
    },
  });
}

function drawRoofline() {
  const id = 'chart-roofline';
  if (!figureOf(id)) return;
  const m = detail.machine && typeof detail.machine === 'object' ? detail.machine : {};
  const peak = num(m.peak_flops_measured), bw = num(m.peak_bandwidth_measured), promised = num(m.peak_flops_promised);
  const byPhase = new Map();
  let skipped = 0;
  for (const op of arr(detail.ops)) {
    const f = num(op.flops), b = num(op.bytes), s = num(op.seconds);
    const I = num(op.intensity) > 0 ? op.intensity : f / b, perf = f / s;
    if (!(I > 0 && isFinite(I) && perf > 0 && isFinite(perf))) { skipped++; continue; }
    const ph = String(op.phase || 'other');
    if (!byPhase.has(ph)) byPhase.set(ph, []);
    byPhase.get(ph).push({ x: I, y: perf, op });
  }
  const pts = Array.from(byPhase.values()).flat();
  if (!pts.length && !(peak > 0)) return empty(id, detail.has_summary ? 'summary.json lists no ops with FLOPs and time.' : NO_SUMMARY);
  const ridge = peak > 0 && bw > 0 ? peak / bw : NaN;
  const Is = pts.map(p => p.x).concat(isNaN(ridge) ? [] : [ridge]);
  const lo = Math.min(...(Is.length ? Is : [0.1])) / 2, hi = Math.max(...(Is.length ? Is : [100])) * 2;
  const roof = [];
  if (bw > 0) roof.push({ x: lo, y: bw * lo });
  if (peak > 0) { roof.push(bw > 0 ? { x: ridge, y: peak } : { x: lo, y: peak }); roof.push({ x: hi, y: peak }); }
  else if (bw > 0) roof.push({ x: hi, y: bw * hi });
  const sets = [];
  if (roof.length > 1) {
    const parts = [peak > 0 ? 'measured peak ' + si(peak, 'FLOP/s') : '', bw > 0 ? 'bandwidth ' + si(bw, 'B/s') : '',
                   isNaN(ridge) ? '' : 'ridge ' + three(ridge) + ' FLOP/B'].filter(Boolean);
    sets.push({ type: 'line', label: 'roof: ' + parts.join(', '), data: roof, borderColor: '#111827', borderWidth: 2.2, pointRadius: 0 });
  }
  if (promised > 0)
    sets.push({ type: 'line', label: 'promised peak ' + si(promised, 'FLOP/s'), data: [{ x: lo, y: promised }, { x: hi, y: promised }],
                borderColor: '#6b7280', borderDash: [2, 3], borderWidth: 1.2, pointRadius: 0 });
  for (const [ph, list] of byPhase)
    sets.push({ label: ph, data: list, backgroundColor: withAlpha(phaseColor(ph), 0.8), borderColor: '#fff', pointRadius: 4.5, pointHoverRadius: 6 });
  make(id, {
    type: 'scatter',
    data: { datasets: sets },
    options: {
      parsing: false,
      scales: { x: { type: 'logarithmic', min: lo, max: hi, title: axisTitle('arithmetic intensity (FLOP/byte)' + (skipped ? ` — ${skipped} ops without FLOPs or time (views, copies) not placed` : '')),
                     ticks: { callback: decade } },
                y: { type: 'logarithmic', title: axisTitle('achieved (FLOP/s)'), ticks: { callback: decade } } },
      plugins: { tooltip: { filter: item => !!item.raw.op, callbacks: {
        title: items => String(items[0].raw.op.name),
        label: item => {
          const op = item.raw.op;
          return `${item.dataset.label}: ${num(op.calls) || '?'} calls, ${si(num(op.flops), 'FLOP')}, ${bytes(num(op.bytes) || 0)}, ${secs(num(op.seconds))}; ` +
                 `${three(item.raw.x)} FLOP/byte, ${si(item.raw.y, 'FLOP/s')}` + (op.bound ? `, ${op.bound}-bound` : '');
        } } } },
    },
  });
}

// ---- draw everything, each chart on its own so that one failure does not hide the others ----
const status = document.getElementById('report-status');
function writeStatus() {
  status.dataset.status = window.__tallyErrors.length ? 'error' : 'ok';
  status.textContent = JSON.stringify(drawn);
}
const jobs = CURVES.map(spec => [spec.id, () => drawCurve(spec)]);
if (detail) jobs.push(['chart-modules', drawModules], ['chart-memory', drawMemory], ['chart-roofline', drawRoofline]);
hookControls();
for (const [id, draw] of jobs) {
  try { draw(); } catch (e) { window.__tallyError(id + ': ' + (e && e.message ? e.message : e)); }
}
writeStatus();

// #selftest: hover the last point of each chart and record the tooltip; then turn the log axis on.
if (location.hash === '#selftest') {
  for (const id in drawn) {
    const chart = Chart.getChart(id);
    if (!chart) continue;
    const k = chart.data.datasets.findIndex(d => !d.raw && !d.hidden && d.data.length && (d.data[0].op || chart.config.type !== 'scatter'));
    if (k < 0) continue;
    const el = chart.getDatasetMeta(k).data[chart.data.datasets[k].data.length - 1];
    chart.tooltip.setActiveElements([{ datasetIndex: k, index: chart.data.datasets[k].data.length - 1 }], { x: el.x, y: el.y });
    chart.update('none');
    drawn[id].hover = (chart.tooltip.title || []).concat(...(chart.tooltip.body || []).map(b => b.lines));
  }
  const log = document.getElementById('log-y');
  if (log) { log.checked = true; log.dispatchEvent(new Event('change')); }
  for (const id in curveCharts) drawn[id].y_scale = curveCharts[id].scales.y.type;
  writeStatus();
}
})();
