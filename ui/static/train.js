// train.js: the training viewer. Served by `llmcloud ui RUN` or `train --ui`, it polls
// /console/api/run?after=K every 2 s while the run is not done, appending the new log.jsonl
// records (docs/training.md: one per step with loss, one per validation with val_loss); in any
// mode it can also open a run's log.jsonl from disk. It charts loss and validation loss, learning
// rate, gradient norm and MFU, and sums up the latest step.

import { getJSON, mode, HTTPError } from './api.js';
import { el, fmt, fmtNum } from './dom.js';
import { Chart } from './chart.js';

const $ = (id) => document.getElementById(id);
let records = [];
let runDir = '';
let done = false;
let timer = 0;
let active = false;
let inflight = false; // a poll is waiting for its answer
let live = true; // polling the served run (false once a file was opened instead)
let charts;

export function mount(_sec, { first }) {
  if (first) {
    const step = { xLabel: 'step', xName: 'step' };
    charts = {
      loss: new Chart($('train-chart-loss'), { ...step, label: 'Training and validation loss by step', yLabel: 'loss', alwaysLegend: true }),
      lr: new Chart($('train-chart-lr'), { ...step, label: 'Learning rate by step', yLabel: 'lr', yMin: 0 }),
      gradnorm: new Chart($('train-chart-gradnorm'), { ...step, label: 'Gradient norm by step', yLabel: 'grad norm', yMin: 0 }),
      mfu: new Chart($('train-chart-mfu'), { ...step, label: 'Model FLOPs utilisation by step, percent', yLabel: 'MFU %', yMin: 0 }),
    };
    $('train-file').addEventListener('change', openFile);
    document.addEventListener('visibilitychange', () => {
      if (active && live && !done && !document.hidden && !timer) poll();
    });
    render();
  }
  active = true;
  if (mode() !== 'train') {
    live = false;
    if (!records.length) status('A training run opens live with `llmcloud ui RUN` or `llmcloud train --ui ADDR`; here you can open a run\'s log.jsonl.');
    return;
  }
  if (live && !done && !timer) poll();
}

export function unmount() {
  active = false;
  clearTimeout(timer);
  timer = 0;
}

function status(text, isError) {
  const s = $('train-status');
  s.textContent = text;
  s.classList.toggle('error', !!isError);
}

async function poll() {
  timer = 0;
  if (!active || !live || done || document.hidden || inflight) return;
  inflight = true;
  try {
    const r = await getJSON(`/console/api/run?after=${records.length}`);
    if (!live) return;
    runDir = r.dir || '';
    done = !!r.done;
    if (Array.isArray(r.records) && r.records.length) records = records.concat(r.records);
    render();
    status(`${runDir}${done ? ' · finished' : ' · training, refreshed every 2 s'}`);
  } catch (e) {
    if (e instanceof HTTPError && (e.status === 404 || e.status === 405)) {
      status('This process does not serve /console/api/run: open the run with `llmcloud ui RUN`.', true);
      live = false;
      return;
    }
    status('Cannot read the run: ' + e.message, true);
  } finally {
    inflight = false;
  }
  if (active && live && !done) timer = setTimeout(poll, 2000);
}

async function openFile(ev) {
  const f = ev.target.files[0];
  ev.target.value = '';
  if (!f) return;
  const out = [];
  let bad = 0;
  for (const line of (await f.text()).split('\n')) {
    if (!line.trim()) continue;
    try {
      const r = JSON.parse(line);
      if (r && typeof r === 'object' && typeof r.step === 'number') out.push(r); else bad++;
    } catch { bad++; }
  }
  if (!out.length) {
    status(`${f.name}: no training records (want log.jsonl lines like {"step":1,"loss":3.2})`, true);
    return;
  }
  live = false;
  clearTimeout(timer);
  timer = 0;
  records = out;
  runDir = f.name;
  done = true;
  status(`${f.name}: ${out.length} records` + (bad ? `, ${bad} lines skipped (not JSON records)` : ''), bad > 0);
  render();
}

// isVal says whether a record is a validation (val_loss set, or a non-finite val_loss dropped).
function isVal(r) {
  return r.val_loss !== undefined || (Array.isArray(r.non_finite) && r.non_finite.some((s) => s.startsWith('val_loss=')));
}

function render() {
  const steps = records.filter((r) => !isVal(r));
  const vals = records.filter(isVal);
  document.body.dataset.trainSteps = String(steps.length);
  const pts = (rs, f) => rs.filter((r) => typeof f(r) === 'number' && Number.isFinite(f(r))).map((r) => [r.step, f(r)]);
  charts.loss.setData([
    { name: 'train', points: pts(steps, (r) => r.loss) },
    { name: 'validation', points: pts(vals, (r) => r.val_loss) },
  ]);
  charts.lr.setData([{ name: 'lr', points: pts(steps, (r) => r.lr) }]);
  charts.gradnorm.setData([{ name: 'grad norm', points: pts(steps, (r) => r.grad_norm) }]);
  const mfu = [{ name: 'MFU', points: pts(steps, (r) => (r.mfu ? r.mfu * 100 : undefined)) }];
  // HFU differs from MFU only when the run recomputes activations; otherwise it would hide MFU.
  if (steps.some((r) => r.hfu && Math.abs(r.hfu - (r.mfu || 0)) > 1e-9)) mfu.push({ name: 'HFU', points: pts(steps, (r) => (r.hfu ? r.hfu * 100 : undefined)) });
  charts.mfu.setData(mfu);

  const last = steps[steps.length - 1] || {};
  const lastVal = vals[vals.length - 1];
  const skipped = steps.filter((r) => r.skipped).length;
  const items = [
    ['step', 'Step', last.step !== undefined ? String(last.step) : '–'],
    ['loss', 'Loss', fmt(last.loss, 3)],
    ['val_loss', 'Val loss', lastVal ? fmt(lastVal.val_loss, 3) + ` (step ${lastVal.step})` : '–'],
    ['tokens_per_s', 'Tokens/s', fmtNum(last.tokens_per_s)],
    ['mfu', 'MFU', last.mfu ? fmt(last.mfu * 100, 1) + ' %' : '–'],
    ['lr', 'Learning rate', fmtNum(last.lr)],
    ['grad_norm', 'Grad norm', fmtNum(last.grad_norm)],
    ['tokens', 'Tokens seen', fmtNum(last.tokens)],
    ['state', 'State', records.length ? (done ? 'done' : 'training') : '–'],
  ];
  if (skipped) items.push(['skipped', 'Skipped steps', String(skipped)]);
  $('train-summary').replaceChildren(...items.map(([k, dt, dd]) => el('div', { 'data-key': k }, el('dt', {}, dt), el('dd', {}, dd))));
}
