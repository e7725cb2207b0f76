// bench.js: the benchmark viewer. It reads `llmcloud bench serve` result files (vLLM's field
// names: ttfts, tpots, itls, e2els in seconds; mean_ttft_ms, p99_tpot_ms... in ms) from a file
// input, entirely in the page, and compares them: a table of throughput and latency statistics,
// CDFs of TTFT, TPOT and E2E latency, and a histogram of inter-token latencies.

import { el, fmt } from './dom.js';
import { Chart } from './chart.js';

const $ = (id) => document.getElementById(id);
const results = []; // {name, data}
const charts = {};

export function mount(_sec, { first }) {
  if (!first) return;
  $('bench-file').addEventListener('change', async (ev) => {
    const files = [...ev.target.files];
    ev.target.value = '';
    await load(files);
  });
  // Files dropped anywhere on the view load like the file input's.
  const view = $('view-bench');
  view.addEventListener('dragover', (ev) => { ev.preventDefault(); view.classList.add('dropping'); });
  view.addEventListener('dragleave', () => view.classList.remove('dropping'));
  view.addEventListener('drop', async (ev) => {
    ev.preventDefault();
    view.classList.remove('dropping');
    await load([...ev.dataTransfer.files]);
  });
  const box = $('bench-charts');
  for (const [key, title, x] of [
    ['ttft', 'Time to first token (CDF)', 'TTFT (ms)'],
    ['tpot', 'Time per output token (CDF)', 'TPOT (ms)'],
    ['e2el', 'End-to-end latency (CDF)', 'E2E latency (ms)'],
    ['itl', 'Inter-token latency (histogram)', 'ITL (ms)'],
  ]) {
    const div = el('div', { id: `bench-chart-${key}`, class: 'chart' });
    box.append(el('figure', { class: 'panel' }, el('figcaption', {}, title), div));
    charts[key] = new Chart(div, {
      label: title, xLabel: key === 'itl' ? x + ', log scale' : x, xName: x, step: true, yMin: 0, alwaysLegend: true,
      xLog: key === 'itl',
      yMax: key === 'itl' ? undefined : 100, yLabel: key === 'itl' ? '% of tokens' : '% of requests',
      yFormat: (v) => fmt(v, v % 1 ? 1 : 0), empty: 'Open result files to see this chart.',
    });
  }
  render();
}

export function unmount() {}

function status(text, isError) {
  const s = $('bench-status');
  s.textContent = text;
  s.classList.toggle('error', !!isError);
}

// check says what is wrong with a parsed file, or '' when it looks like a bench serve result.
function check(d) {
  if (!d || typeof d !== 'object' || Array.isArray(d)) return 'not a JSON object';
  const has = ['ttfts', 'e2els', 'itls'].some((k) => Array.isArray(d[k])) || typeof d.request_throughput === 'number';
  return has ? '' : 'not a `bench serve` result (no ttfts, e2els, itls or request_throughput)';
}

async function load(files) {
  let ok = 0;
  const errors = [];
  for (const f of files) {
    let d, why;
    try {
      d = JSON.parse(await f.text());
      why = check(d);
    } catch (e) {
      why = 'not JSON: ' + e.message;
    }
    if (why) { errors.push({ name: f.name, why }); continue; }
    // The file's label when it has one (bench serve --label), else its file name.
    let name = d.label || f.name;
    for (let i = 2; results.some((r) => r.name === name); i++) name = `${d.label || f.name} (${i})`;
    results.push({ name, file: f.name, data: d });
    ok++;
  }
  status(`${ok} file(s) loaded` + (errors.length ? `, ${errors.length} not loaded` : ''), errors.length > 0);
  render(errors);
}

function render(errors = []) {
  const list = $('bench-list');
  list.replaceChildren();
  results.forEach((r, i) => {
    const d = r.data;
    const meta = [d.model_id, d.dataset_name, d.request_rate !== undefined ? `rate ${d.request_rate}` : '', d.date]
      .filter(Boolean).join(' · ');
    const rm = el('button', { type: 'button', 'aria-label': `Remove ${r.name}` }, 'Remove');
    rm.addEventListener('click', () => { results.splice(i, 1); status(''); render(); });
    list.append(el('li', { class: 'bench-item', 'data-file': r.file },
      el('span', { class: `swatch sw${i % 6}`, 'aria-hidden': 'true' }),
      el('span', { class: 'name' }, r.name),
      el('span', { class: 'meta' }, [r.name === r.file ? '' : r.file, meta].filter(Boolean).join(' · ')), rm));
  });
  for (const e of errors) {
    // Not .bench-item: that class marks the loaded files only.
    list.append(el('li', { class: 'bench-error', 'data-file': e.name },
      el('span', { class: 'name' }, e.name), el('span', { class: 'meta' }, e.why)));
  }
  renderTable();
  renderCharts();
}

function sorted(xs) {
  return xs.filter((x) => typeof x === 'number' && Number.isFinite(x)).sort((a, b) => a - b);
}

function quantile(s, q) {
  if (!s.length) return NaN;
  const pos = (s.length - 1) * q, lo = Math.floor(pos), hi = Math.ceil(pos);
  return s[lo] + (s[hi] - s[lo]) * (pos - lo);
}

// samplesMs returns a metric's per-request (per-token for itl) values in ms, sorted.
function samplesMs(d, m) {
  const key = { ttft: 'ttfts', tpot: 'tpots', itl: 'itls', e2el: 'e2els' }[m];
  let xs = Array.isArray(d[key]) ? d[key] : [];
  if (m === 'itl') xs = xs.flat();
  // A request that failed or made one token has no TPOT: bench writes 0 for it.
  if (m === 'tpot') xs = xs.filter((x) => x > 0);
  if (m === 'ttft' || m === 'e2el') xs = xs.filter((x, i) => x > 0 && !(Array.isArray(d.errors) && d.errors[i]));
  return sorted(xs.map((x) => x * 1000));
}

// stat reads a statistic the file wrote (mean_ttft_ms...) or computes it from the samples.
function stat(d, kind, m) {
  const k = `${kind}_${m}_ms`;
  if (typeof d[k] === 'number') return d[k];
  const s = samplesMs(d, m);
  if (!s.length) return NaN;
  if (kind === 'mean') return s.reduce((a, b) => a + b, 0) / s.length;
  if (kind === 'median') return quantile(s, 0.5);
  const p = kind.match(/^p(\d+(?:\.\d+)?)$/);
  return p ? quantile(s, Number(p[1]) / 100) : NaN;
}

function renderTable() {
  const t = $('bench-compare');
  const head = t.tHead.rows[0];
  head.replaceChildren(el('th', { scope: 'col' }, 'Metric'));
  for (const r of results) head.append(el('th', { scope: 'col', class: 'num' }, r.name));
  const body = t.tBodies[0];
  body.replaceChildren();
  if (!results.length) {
    body.append(el('tr', {}, el('td', {}, 'Open one or more result files to compare them.')));
    return;
  }
  const num = (v, dgt = 2) => (typeof v === 'number' && Number.isFinite(v) ? fmt(v, dgt) : '–');
  const rows = [
    ['Model', (d) => d.model_id || '–', 'model'],
    ['Dataset', (d) => d.dataset_name || '–', 'dataset'],
    ['Request rate (req/s)', (d) => String(d.request_rate ?? '–'), 'request_rate'],
    ['Max concurrency', (d) => String(d.max_concurrency ?? '–'), 'max_concurrency'],
    ['Completed / failed', (d) => `${d.completed ?? '–'} / ${d.failed ?? '–'}`, 'completed'],
    ['Duration (s)', (d) => num(d.duration), 'duration'],
    ['Request throughput (req/s)', (d) => num(d.request_throughput, 3), 'request_throughput'],
    ['Output throughput (tok/s)', (d) => num(d.output_throughput), 'output_throughput'],
    ['Total token throughput (tok/s)', (d) => num(d.total_token_throughput), 'total_token_throughput'],
  ];
  const names = { ttft: 'TTFT', tpot: 'TPOT', itl: 'ITL', e2el: 'E2E' };
  for (const m of ['ttft', 'tpot', 'itl', 'e2el']) {
    for (const [kind, label] of [['mean', 'mean'], ['median', 'p50'], ['p99', 'p99']]) {
      rows.push([`${names[m]} ${label} (ms)`, (d) => num(stat(d, kind, m)), `${kind}_${m}_ms`]);
    }
  }
  for (const [label, f, key] of rows) {
    const tr = el('tr', { 'data-metric': key }, el('th', { scope: 'row' }, label));
    for (const r of results) tr.append(el('td', { class: 'num' }, f(r.data)));
    body.append(tr);
  }
}

// cdf turns sorted samples into at most max step points (x, % of samples <= x).
function cdf(s, max = 400) {
  if (!s.length) return [];
  const pts = [[s[0], 0]];
  const n = s.length;
  const stride = Math.max(1, Math.floor(n / max));
  for (let i = 0; i < n;) {
    let j = Math.min(n - 1, i + stride - 1);
    while (j + 1 < n && s[j + 1] === s[j]) j++; // the CDF jumps once per distinct value
    pts.push([s[j], ((j + 1) / n) * 100]);
    i = j + 1;
  }
  if (pts[pts.length - 1][1] < 100) pts.push([s[n - 1], 100]);
  return pts;
}

function renderCharts() {
  for (const m of ['ttft', 'tpot', 'e2el']) {
    charts[m].setData(results.map((r) => ({ name: r.name, points: cdf(samplesMs(r.data, m)) })));
  }
  // ITL histogram: 40 bins shared by the files, evenly spaced on a log axis (inter-token
  // latencies spread over decades: sub-millisecond bursts to second-long stalls); values
  // outside [p0.5, max] are counted in the end bins.
  const all = results.map((r) => samplesMs(r.data, 'itl').filter((x) => x > 0));
  const some = all.filter((s) => s.length);
  const lo = some.length ? Math.min(...some.map((s) => quantile(s, 0.005))) : 1;
  const hi = some.length ? Math.max(...some.map((s) => s[s.length - 1])) : 10;
  const bins = 40;
  const l0 = Math.log10(lo), step = (Math.log10(Math.max(hi, lo * 1.01)) - l0) / bins;
  charts.itl.setData(results.map((r, i) => {
    const s = all[i];
    if (!s.length) return { name: r.name, points: [] };
    const counts = new Array(bins).fill(0);
    for (const x of s) counts[Math.max(0, Math.min(bins - 1, Math.floor((Math.log10(x) - l0) / step)))]++;
    const pts = counts.map((c, b) => [10 ** (l0 + b * step), (100 * c) / s.length]);
    pts.push([10 ** (l0 + bins * step), pts[bins - 1][1]]);
    return { name: r.name, points: pts };
  }));
}
