// cloud.js: the live cloud view. While the view is shown (and the tab visible) it polls
// /console/api/cloud and /console/api/requests once per health interval (at most every 2 s),
// keeps each replica's counters over the last minutes, and charts tokens/s from the deltas of
// successive polls (the counters are totals since a replica started; a drop means a restart).

import { getJSON, mode, HTTPError } from './api.js';
import { el, fmt } from './dom.js';
import { Chart, timeFormat } from './chart.js';

const $ = (id) => document.getElementById(id);
const keepSeconds = 300;
let timer = 0;
let active = false;
let inflight = false; // a poll is waiting for its answers (a view shown again starts no second loop)
let missing = false; // the process has no /console/api endpoints: poll nothing more
let tokensChart, kvChart;
const history = new Map(); // replica name -> [{t, gen, kv}]
let lastRate = new Map(); // replica name -> latest tokens/s

export function mount(_sec, { first }) {
  if (first) {
    tokensChart = new Chart($('cloud-chart-tokens'), { label: 'Generated tokens per second over time', xLabel: 'time', xName: 'time',
      xFormat: timeFormat, yMin: 0, yLabel: 'tokens/s', empty: 'Waiting for two polls…', xTicks: timeTicks });
    kvChart = new Chart($('cloud-chart-kv'), { label: 'KV-cache usage over time', xLabel: 'time', xName: 'time',
      xFormat: timeFormat, yMin: 0, yMax: 100, yLabel: 'KV %', yFormat: (v) => fmt(v, v % 1 ? 1 : 0), xTicks: timeTicks });
    document.addEventListener('visibilitychange', () => {
      if (active && !document.hidden && !timer) poll();
    });
  }
  active = true;
  if (mode() === 'train') {
    status('This console serves a training run: there is no cloud to show. Open it from `llmcloud serve`, `router` or `up`.');
    return;
  }
  if (!timer) poll();
}

export function unmount() {
  active = false;
  clearTimeout(timer);
  timer = 0;
}

// timeTicks puts x ticks on round multiples of 15 s, 30 s, 1 min... for a time axis in seconds.
function timeTicks(lo, hi) {
  const span = hi - lo;
  const step = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600].find((s) => span / s <= 5) || 600;
  const out = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi; v += step) out.push(v);
  return { lo, hi, ticks: out, step };
}

function status(text, isError) {
  const s = $('cloud-status');
  s.textContent = text;
  s.classList.toggle('error', !!isError);
}

async function poll() {
  timer = 0;
  if (!active || missing || document.hidden || inflight) return;
  let interval = 2;
  inflight = true;
  try {
    interval = await pollOnce();
  } catch (e) {
    status('Cannot show the cloud: ' + e.message, true);
  } finally {
    inflight = false;
  }
  if (active && !missing && interval) timer = setTimeout(poll, interval * 1000);
}

// pollOnce fetches and shows the cloud and the last requests once; it returns the seconds to
// the next poll, or 0 to stop.
async function pollOnce() {
  let interval = 2;
  const [cloud, reqs] = await Promise.allSettled([
    getJSON('/console/api/cloud'),
    getJSON('/console/api/requests?limit=20'),
  ]);
  if (cloud.status === 'fulfilled') {
    // One poll per health interval shows a dead replica within it; 1 to 2 s keeps the page at
    // no more than two requests a second.
    interval = Math.min(2, Math.max(1, Number(cloud.value.health_interval_s) || 2));
    showCloud(cloud.value);
    status(`${cloud.value.mode || mode()} · ${(cloud.value.replicas || []).length} replica(s) · updated ${new Date().toLocaleTimeString([], { hour12: false })}`);
  } else {
    const e = cloud.reason;
    if (e instanceof HTTPError && (e.status === 404 || e.status === 405)) {
      missing = true;
      status('This process does not serve /console/api/cloud: start it with a newer llmcloud (serve, router or up).', true);
      return 0;
    }
    status('Cannot reach the cloud: ' + e.message, true);
  }
  if (reqs.status === 'fulfilled') showRequests(reqs.value.requests || []);
  return interval;
}

function showCloud(c) {
  const now = Date.now() / 1000;
  const reps = c.replicas || [];
  lastRate = new Map();
  for (const r of reps) {
    const h = history.get(r.name) || [];
    h.push({ t: now, gen: Number(r.generation_tokens) || 0, kv: r.healthy ? (Number(r.kv_usage) || 0) * 100 : NaN });
    while (h.length && h[0].t < now - keepSeconds) h.shift();
    history.set(r.name, h);
    const n = h.length;
    if (n >= 2 && h[n - 1].gen >= h[n - 2].gen && h[n - 1].t > h[n - 2].t) {
      lastRate.set(r.name, (h[n - 1].gen - h[n - 2].gen) / (h[n - 1].t - h[n - 2].t));
    }
  }
  for (const name of [...history.keys()]) {
    if (!reps.some((r) => r.name === name)) history.delete(name);
  }
  showReplicas(reps);
  showCharts();
  showAutoscale(c.autoscale || []);
}

// labelCells gives each cell its column's name in data-label, which the phone layout shows
// beside the value when a row becomes a card.
function labelCells(table) {
  const names = [...table.tHead.rows[0].cells].map((c) => c.textContent);
  for (const tr of table.tBodies[0].rows) {
    [...tr.cells].forEach((c, i) => { if (names[i] && c.colSpan === 1) c.dataset.label = names[i]; });
  }
}

function cell(text, cls) {
  return el('td', cls ? { class: cls } : {}, text);
}

// restartsSeen remembers each replica's restart count and when it last grew, so a crash that
// the supervisor repaired between two polls (never seen down) still shows in its row for a while.
const restartsSeen = new Map(); // name -> { n, grewAt (ms) }
const restartShowMs = 30_000;

function restartCell(r) {
  if (r.restarts === undefined || r.restarts === null) return cell('', 'num');
  const n = Number(r.restarts) || 0;
  const seen = restartsSeen.get(r.name);
  const now = Date.now();
  let grewAt = seen ? seen.grewAt : 0;
  if (seen && n > seen.n) grewAt = now;
  restartsSeen.set(r.name, { n, grewAt });
  const recent = grewAt > 0 && now - grewAt < restartShowMs;
  const td = cell(recent ? `${n} (restarted ${Math.round((now - grewAt) / 1000)} s ago)` : String(n),
    recent ? 'num restarted' : 'num');
  if (recent) td.dataset.restarted = 'true';
  return td;
}

function showReplicas(reps) {
  const body = $('cloud-replicas').tBodies[0];
  body.replaceChildren();
  for (const r of reps) {
    const q = Number(r.prefix_cache_queries) || 0;
    const hit = q ? (100 * (Number(r.prefix_cache_hits) || 0)) / q : NaN;
    const rate = lastRate.get(r.name);
    const healthy = r.healthy === true;
    const tr = el('tr', { 'data-replica': r.name, 'data-healthy': String(healthy), 'data-state': r.state || '' },
      el('th', { scope: 'row' }, r.name || '(this server)'),
      cell(healthy ? 'up' : 'down', 'replica-health'),
      cell(r.state || ''),
      cell(r.role || ''),
      cell(r.model || ''),
      cell(String(r.running ?? ''), 'num'),
      cell(String(r.waiting ?? ''), 'num'),
      cell(fmt((Number(r.kv_usage) || 0) * 100, 1) + ' %', 'num'),
      cell(Number.isFinite(hit) ? fmt(hit, 1) + ' %' : '–', 'num'),
      cell(rate === undefined ? '–' : fmt(rate, 1), 'num'),
      cell(String(r.requests ?? ''), 'num'),
      restartCell(r));
    if (r.url) tr.title = r.url;
    body.append(tr);
  }
  if (!reps.length) body.append(el('tr', {}, el('td', { colspan: 12 }, 'No replicas.')));
  labelCells($('cloud-replicas'));
}

function showCharts() {
  const tok = [], kv = [];
  const total = new Map(); // poll time -> summed rate
  for (const [name, h] of history) {
    const pts = [];
    for (let i = 1; i < h.length; i++) {
      const dt = h[i].t - h[i - 1].t, dg = h[i].gen - h[i - 1].gen;
      if (dt > 0 && dg >= 0) {
        pts.push([h[i].t, dg / dt]);
        // Every replica's point of one poll has the same t, so the sum is keyed by it.
        total.set(h[i].t, (total.get(h[i].t) || 0) + dg / dt);
      }
    }
    tok.push({ name: name || 'this server', points: pts });
    kv.push({ name: name || 'this server', points: h.filter((p) => Number.isFinite(p.kv)).map((p) => [p.t, p.kv]) });
  }
  if (history.size > 1) tok.push({ name: 'all replicas', points: [...total].sort((a, b) => a[0] - b[0]) });
  tokensChart.setData(tok);
  kvChart.setData(kv);
}

function showAutoscale(list) {
  const ol = $('cloud-autoscale');
  ol.replaceChildren();
  for (const d of [...list].reverse()) {
    const when = d.time ? new Date(d.time).toLocaleTimeString([], { hour12: false }) : '';
    ol.append(el('li', { 'data-action': d.action || '' },
      el('time', { datetime: d.time || '' }, when), ' ',
      el('span', { class: `act-${d.action}` }, d.action || ''), ' ',
      `${d.before} → ${d.after} replicas (desired ${d.desired}): `,
      el('span', { class: 'reason' }, d.reason || '')));
  }
}

function showRequests(list) {
  const body = $('cloud-requests').tBodies[0];
  body.replaceChildren();
  for (const r of list) {
    const when = r.arrival_unix ? new Date(r.arrival_unix * 1000).toLocaleTimeString([], { hour12: false }) : '';
    const fin = el('td', { class: `finish finish-${r.finish_reason || ''}` }, r.finish_reason || '');
    if (r.error) { fin.append(': ', r.error); fin.classList.add('error', 'wrap'); }
    const tr = el('tr', { 'data-id': r.id || '', title: `${r.id || ''} ${r.model || ''}` },
      cell(when), cell(r.replica || ''),
      cell(fmt(r.queue_ms, 1), 'num'), cell(fmt(r.prefill_ms, 1), 'num'), cell(fmt(r.decode_ms, 1), 'num'),
      cell(fmt(r.e2e_ms, 1), 'num'), cell(String(r.prompt_tokens ?? ''), 'num'), cell(String(r.output_tokens ?? ''), 'num'), fin);
    body.append(tr);
  }
  if (!list.length) body.append(el('tr', {}, el('td', { colspan: 9 }, 'No finished requests yet.')));
  labelCells($('cloud-requests'));
}
