// Runs an ONNX model written by `llmcloud export --onnx OUT.onnx --reference-ids ...` with
// ONNX Runtime (onnxruntime-node, CPU) and compares its logits with llmcloud's, read from
// OUT.onnx.reference.json (per sequence: ids and float32 logits [len][vocab], base64).
//
// Cases: all sequences of one length as one batch, each sequence alone, the first half of the
// first sequence alone (causality: its logits must equal the first rows of the whole), and,
// for a model with a KV cache (export --kv-cache), the first sequence fed in chunks (half,
// then 1, 1, the rest), each after the cache the chunks before it returned.
// Errors: rel = max|a-b| / max|b| over a case's logits (the acceptance measure, <= --tol), and
// the largest elementwise |a-b| / max(|b|, floor) with floor = 1e-3 * max|b| (reported).
//
// Usage: node check.mjs OUT.onnx [REFERENCE.json] [--label NAME] [--tol 1e-4]
import { readFileSync } from 'node:fs';
import ort from 'onnxruntime-node';

const args = process.argv.slice(2);
const opt = { label: '', tol: 1e-4 };
const files = [];
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--label') opt.label = args[++i];
  else if (args[i] === '--tol') opt.tol = Number(args[++i]);
  else files.push(args[i]);
}
if (files.length < 1) {
  console.error('usage: node check.mjs OUT.onnx [REFERENCE.json] [--label NAME] [--tol 1e-4]');
  process.exit(2);
}
const [modelPath, refPath = `${files[0]}.reference.json`] = files;
const label = opt.label ? `[${opt.label}] ` : '';

const ref = JSON.parse(readFileSync(refPath, 'utf8'));
const V = ref.vocab;
const seqs = ref.sequences.map((s) => {
  const buf = Buffer.from(s.logits_f32_base64, 'base64');
  const logits = new Float32Array(buf.buffer, buf.byteOffset, buf.byteLength / 4);
  if (logits.length !== s.ids.length * V) throw new Error(`reference: ${logits.length} logits for ${s.ids.length} ids`);
  return { ids: s.ids, logits };
});

const t0 = Date.now();
const session = await ort.InferenceSession.create(modelPath, { executionProviders: ['cpu'], intraOpNumThreads: 2 });
const loadMs = Date.now() - t0;
if (session.inputNames[0] !== 'input_ids' || session.outputNames[0] !== 'logits') {
  throw new Error(`model has inputs ${session.inputNames} and outputs ${session.outputNames}, want input_ids and logits first`);
}
// With a KV cache (export --kv-cache): inputs past_key_values.L.key/value [batch, kv_heads,
// past_seq, head_dim], outputs present.L.key/value.
const pastInputs = session.inputMetadata.filter((m) => m.name.startsWith('past_key_values.'));
const presentOf = (name) => name.replace('past_key_values.', 'present.');

// run feeds a [batch, seq] batch of ids (after the cache `past`, a map from input name to
// tensor; none: empty) and returns the logits [batch*seq*vocab] and the present cache.
async function run(batch, past) {
  const S = batch[0].length;
  const ids = new BigInt64Array(batch.length * S);
  batch.forEach((b, i) => b.forEach((id, j) => { ids[i * S + j] = BigInt(id); }));
  const feeds = { input_ids: new ort.Tensor('int64', ids, [batch.length, S]) };
  for (const m of pastInputs) {
    feeds[m.name] = past?.[m.name] ?? new ort.Tensor('float32', new Float32Array(0), [batch.length, m.shape[1], 0, m.shape[3]]);
  }
  const out = await session.run(feeds);
  const l = out.logits;
  const want = [batch.length, S, V];
  if (l.dims.join() !== want.join()) throw new Error(`logits dims ${l.dims}, want ${want}`);
  const present = {};
  for (const m of pastInputs) present[m.name] = out[presentOf(m.name)];
  return { logits: l.data, present };
}

// decode runs one sequence in chunks (sizes), each after the cache of the ones before, and
// returns the logits of every position.
async function decode(ids, sizes) {
  const logits = new Float32Array(ids.length * V);
  let past, at = 0;
  for (const n of sizes) {
    const r = await run([ids.slice(at, at + n)], past);
    logits.set(r.logits, at * V);
    past = r.present;
    at += n;
  }
  return logits;
}

// compare returns the errors of got against want.
function compare(got, want) {
  let maxAbs = 0, maxRef = 0;
  for (let i = 0; i < want.length; i++) maxRef = Math.max(maxRef, Math.abs(want[i]));
  const floor = 1e-3 * maxRef;
  let maxElem = 0, argmaxDiff = 0;
  for (let i = 0; i < want.length; i++) {
    const d = Math.abs(got[i] - want[i]);
    if (!(d <= maxAbs)) maxAbs = d; // NaN propagates
    maxElem = Math.max(maxElem, d / Math.max(Math.abs(want[i]), floor));
  }
  for (let r = 0; r < want.length / V; r++) {
    let a = 0, b = 0;
    for (let j = 1; j < V; j++) {
      if (got[r * V + j] > got[r * V + a]) a = j;
      if (want[r * V + j] > want[r * V + b]) b = j;
    }
    if (a !== b) argmaxDiff++;
  }
  return { rel: maxAbs / maxRef, maxAbs, maxRef, maxElem, argmaxDiff, rows: want.length / V };
}

const cases = [];
const lengths = new Set(seqs.map((s) => s.ids.length));
if (seqs.length > 1 && lengths.size === 1) {
  const want = new Float32Array(seqs.length * seqs[0].logits.length);
  seqs.forEach((s, i) => want.set(s.logits, i * s.logits.length));
  cases.push({ name: `batch of ${seqs.length} x ${seqs[0].ids.length}`, batch: seqs.map((s) => s.ids), want });
}
seqs.forEach((s, i) => cases.push({ name: `sequence ${i} (${s.ids.length} tokens)`, batch: [s.ids], want: s.logits }));
const half = Math.max(1, Math.floor(seqs[0].ids.length / 2));
cases.push({ name: `prefix of sequence 0 (${half} tokens)`, batch: [seqs[0].ids.slice(0, half)], want: seqs[0].logits.subarray(0, half * V) });

if (pastInputs.length > 0) {
  const ids = seqs[0].ids;
  const sizes = [half, 1, 1, ids.length - half - 2].filter((n) => n > 0);
  cases.push({ name: `sequence 0 through the KV cache in chunks of ${sizes.join('+')}`, decode: () => decode(ids, sizes), want: seqs[0].logits });
}

let failed = false;
let worst = 0;
for (const c of cases) {
  const t = Date.now();
  const got = c.decode ? await c.decode() : (await run(c.batch)).logits;
  const e = compare(got, c.want);
  const ok = e.rel <= opt.tol && e.argmaxDiff === 0;
  worst = Math.max(worst, e.rel);
  failed ||= !ok;
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${label}${c.name}: rel ${e.rel.toExponential(2)} (max |a-b| ${e.maxAbs.toExponential(2)}, max |ref| ${e.maxRef.toFixed(3)}), ` +
    `elementwise rel ${e.maxElem.toExponential(2)} (floor 1e-3 max|ref|), argmax differs on ${e.argmaxDiff}/${e.rows} rows, ${Date.now() - t} ms`);
}
console.log(`${failed ? 'FAIL' : 'ok  '} ${label}ONNX Runtime ${ort.env.versions.node}: worst rel ${worst.toExponential(2)} <= ${opt.tol}? (session created in ${loadMs} ms)`);
process.exit(failed ? 1 : 0);
