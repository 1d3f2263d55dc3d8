// eco.wasm (src/fit compiled for the browser) against the C service: on a grid of GPUs x sizes x precisions x
// batches (every label: measured, interpolated, extrapolated, estimated) the browser's answer must equal
// GET /v1/estimate field by field, numbers within 1e-9 relative; the same for /v1/optimize; errors must name the
// same field; `eco estimate --json` must agree within the digits it prints. Runs the module in node.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { SRC, BIN, makeData, startServer, stopServer, cleanup, diffJson } from './web_lib.mjs';

const { loadEco } = await import(pathToFileURL(join(SRC, 'web/js/eco-wasm.js')).href);

let data, srv, eco, curvesDoc;

before(async () => {
  data = makeData('eco-web-wasm-', { runs: true }); // with this project's H200 and H100 runs: two cards of one arch
  const wasm = join(data.tmp, 'eco.wasm');
  execFileSync('bash', [join(SRC, 'scripts/build-wasm.sh'), wasm], { stdio: 'pipe' });
  eco = await loadEco(readFileSync(wasm));
  curvesDoc = JSON.parse(readFileSync(data.curves, 'utf8'));
  eco.loadCurves(curvesDoc);
  srv = await startServer(data, null);
});

after(async () => { await stopServer(srv); cleanup(data); });

async function api(path, params) {
  const qs = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') qs.set(k, String(v));
  const r = await fetch(`${srv.base}${path}?${qs}`);
  return { status: r.status, body: await r.json() };
}

function wasmCall(fn, q) {
  try { return { ok: true, body: eco[fn](q) }; } catch (e) { return { ok: false, field: e.field, code: e.code, message: e.message }; }
}

const GPUS = ['T4', 'A800', 'RTX 4090', 'RTX 4090D', 'RTX 5090', 'H200', 'A100', 'L4', 'ada', 'turing', 'hopper'];
const SIZES = [0.2, 0.5, 1.1, 1.5, 2, 3, 5, 7, 9, 14, 30, 70, 405, 7e9];
const PRECS = ['nf4', 'int8', 'int8-mixed', 'nf4-dq', 'fp8'];

test('estimate grid: wasm equals GET /v1/estimate within 1e-9, every label covered', async () => {
  const labels = new Map();
  let compared = 0, errors = 0;
  for (const gpu of GPUS)
    for (const params_b of SIZES)
      for (const precision of PRECS)
        for (const batch of params_b === 7 ? [1, 8, 64] : [1]) {
          const q = { gpu, params_b, precision, batch };
          const want = await api('/v1/estimate', q);
          const got = wasmCall('estimate', q);
          if (want.status !== 200) {
            assert.equal(got.ok, false, `${JSON.stringify(q)}: API ${want.status} but wasm answered`);
            assert.equal(got.field, want.body.field, `${JSON.stringify(q)}: error field differs`);
            if (want.body.detail && want.body.detail !== want.body.title) assert.equal(got.message, want.body.detail, `${JSON.stringify(q)}: error message differs`);
            errors++;
            continue;
          }
          assert.ok(got.ok, `${JSON.stringify(q)}: wasm failed: ${got.message}`);
          const d = diffJson(got.body, want.body);
          assert.deepEqual(d, [], `${JSON.stringify(q)} differs:\n${d.join('\n')}`);
          labels.set(want.body.label, (labels.get(want.body.label) || 0) + 1);
          compared++;
        }
  for (const l of ['measured', 'interpolated', 'extrapolated', 'estimated'])
    assert.ok(labels.get(l) > 0, `no ${l} case in the grid (labels seen: ${[...labels.keys()]})`);
  assert.ok(compared > 200, `only ${compared} successful comparisons`);
  assert.ok(errors > 0, 'the grid should include unsupported combinations (e.g. fp8)');
});

test('estimate by model preset, ctx and same-model measured rule', async () => {
  const models = JSON.parse(JSON.stringify(eco.info().models)).map((m) => m.name);
  assert.ok(models.length >= 5);
  const cases = [];
  for (const model of models) cases.push({ gpu: 'RTX 4090', model, precision: 'nf4' }, { gpu: 'A800', model, precision: 'int8', ctx: 8192 });
  cases.push({ gpu: 'RTX 5090', model: 'Qwen2-7B', params_b: 7.2, precision: 'nf4' }); // same model name -> measured
  // hopper holds two cards: each answers from its own measurements and fp16 baseline, a third card and the arch pool both
  for (const gpu of ['H100 SXM', 'H200', 'H100 PCIe', 'hopper'])
    for (const model of ['Qwen2.5-7B', 'Qwen2.5-14B']) cases.push({ gpu, model, precision: 'nf4' });
  for (const q of cases) {
    const want = await api('/v1/estimate', q);
    const got = wasmCall('estimate', q);
    if (want.status !== 200) { assert.equal(got.ok, false, JSON.stringify(q)); continue; }
    assert.ok(got.ok, `${JSON.stringify(q)}: ${got.message}`);
    assert.deepEqual(diffJson(got.body, want.body), [], JSON.stringify(q));
  }
  const m = eco.estimate({ gpu: 'RTX 5090', model: 'Qwen2-7B', params_b: 7.2, precision: 'nf4' });
  assert.equal(m.label, 'measured');
  const h100 = eco.estimate({ gpu: 'H100 SXM', model: 'Qwen2.5-7B', precision: 'nf4' });
  const h200 = eco.estimate({ gpu: 'H200', model: 'Qwen2.5-7B', precision: 'nf4' });
  assert.equal(h100.energy.fp16_mj_per_token.label, 'measured');
  assert.ok(Math.abs(h100.energy.fp16_mj_per_token.value - h200.energy.fp16_mj_per_token.value) > 100, 'each card its own fp16 energy');
  // each card answers from its own curve, the architecture and a card without one from the pool
  assert.equal(h100.curve.card, 'NVIDIA H100 80GB HBM3');
  assert.equal(h200.curve.card, 'NVIDIA H200');
  assert.equal(eco.estimate({ gpu: 'hopper', model: 'Qwen2.5-7B', precision: 'nf4' }).curve.card, null);
  assert.equal(eco.estimate({ gpu: 'H100 PCIe', model: 'Qwen2.5-7B', precision: 'nf4' }).curve.card, null);
});

// A card's own curve (after its pool in curves.json): the chart draws that curve, with the band the estimator answers
// for that card, not the pool's.
test('chart band: a card\'s own curve', async () => {
  const own = curvesDoc.curves.filter((c) => c.card);
  assert.ok(own.length >= 2, 'hopper has curves of its two cards');
  for (const c of own.slice(0, 4)) {
    const n = 7, x0 = c.n_min_b / 2, x1 = c.n_max_b * 3;
    const s = eco.curveSeries(c.arch, c.precision, n, x0, x1, c.card);
    const pool = eco.curveSeries(c.arch, c.precision, n, x0, x1);
    assert.ok(s.y.some((y, i) => Math.abs(y - pool.y[i]) > 0.1), `${c.arch}/${c.precision} (${c.card}): not the pool's curve`);
    for (let i = 0; i < n; i++) {
      const { status, body } = await api('/v1/estimate', { gpu: c.card, params_b: s.x[i], precision: c.precision });
      assert.equal(status, 200);
      assert.equal(body.curve.card, c.card);
      if (body.label === 'measured') continue; // a measurement answers, not the curve
      assert.ok(Math.abs(body.delta_pct - s.y[i]) <= 1e-9 * (1 + Math.abs(s.y[i])), `${c.card} at ${s.x[i]}: ${body.delta_pct} vs ${s.y[i]}`);
      assert.ok(Math.abs(s.lo[i] - body.range95[0]) <= 1e-9 * (1 + Math.abs(s.lo[i])), `${c.card} at ${s.x[i]}: lo`);
      assert.ok(Math.abs(s.hi[i] - body.range95[1]) <= 1e-9 * (1 + Math.abs(s.hi[i])), `${c.card} at ${s.x[i]}: hi`);
    }
  }
});

test('optimize grid: wasm equals GET /v1/optimize', async () => {
  let n = 0;
  for (const gpu of ['T4', 'A800', 'RTX 4090', 'RTX 5090', 'H200', 'H100 SXM', 'L4', 'blackwell'])
    for (const params_b of [1.1, 7, 14, 70])
      for (const extra of [{}, { objective: 'latency' }, { objective: 'balanced', ctx: 8192 }, { max_vram_gb: 8 }, { max_latency_ms: 5 },
        { batch: 1 }, { batch: 3, objective: 'latency' }, { batch: 2000 }]) {
        const q = { gpu, params_b, ...extra };
        const want = await api('/v1/optimize', q);
        const got = wasmCall('optimize', q);
        if (want.status !== 200) { assert.equal(got.ok, false, JSON.stringify(q)); continue; }
        assert.ok(got.ok, `${JSON.stringify(q)}: ${got.message}`);
        const d = diffJson(got.body, want.body);
        assert.deepEqual(d, [], `${JSON.stringify(q)} differs:\n${d.join('\n')}`);
        n++;
      }
  assert.ok(n >= 100, `only ${n} optimize comparisons`);
});

test('bad input: same error field as the API', async () => {
  const cases = [
    { gpu: 'Voodoo 5', params_b: 7 }, { gpu: 'RTX 4090' }, { gpu: 'RTX 4090', params_b: -1 },
    { gpu: 'RTX 4090', params_b: 7, precision: 'fp16' }, { gpu: 'RTX 4090', params_b: 7, precision: 'int3' },
    { gpu: 'RTX 4090', params_b: 7, batch: 0 }, { gpu: 'RTX 4090', params_b: 5000 }, { gpu: 'RTX 4090', model: 'NoSuchModel' },
    // lengths in characters, as maxLength counts them, whatever the bytes; bounds printed as written
    { gpu: 'ü'.repeat(150), params_b: 7 }, { gpu: 'ü'.repeat(201), params_b: 7 }, { gpu: 'x'.repeat(600), params_b: 7 },
    { gpu: 'RTX 4090', model: '€'.repeat(300) }, { gpu: 'RTX 4090', params_b: 7, ctx: 0 },
  ];
  for (const q of cases) {
    const want = await api('/v1/estimate', q);
    assert.ok(want.status >= 400 && want.status < 500, `${JSON.stringify(q)}: API ${want.status}`);
    const got = wasmCall('estimate', q);
    assert.equal(got.ok, false, `${JSON.stringify(q)}: wasm accepted it`);
    assert.equal(got.field, want.body.field, `${JSON.stringify(q)}: field`);
    // the API drops the detail where the service formats eco_last_error() into itself (reported); compare when given
    if (want.body.detail && want.body.detail !== want.body.title) assert.equal(got.message, want.body.detail, `${JSON.stringify(q)}: message`);
    else assert.ok(got.message.length > 10, `${JSON.stringify(q)}: wasm message empty`);
  }
});

test('eco estimate --json agrees within the digits it prints', () => {
  const qs = [['RTX 4090', '7', 'nf4'], ['T4', '2', 'nf4'], ['A800', '30', 'int8'], ['H200', '13', 'nf4'], ['RTX 5090', '0.3', 'nf4']];
  for (const [gpu, size, prec] of qs) {
    const text = execFileSync(BIN, ['estimate', '--gpu', gpu, '--model-params', size, '--precision', prec, '--curves', data.curves, '--json'],
      { env: data.env }).toString();
    // the CLI prints a fixed number of significant digits: the tolerance follows from the longest mantissa it shows
    const digits = Math.max(...[...text.matchAll(/-?\d+\.(\d+)(?:e[-+]?\d+)?/gi)].map((m) => m[0].replace(/[-.]|e.*$/gi, '').replace(/^0+/, '').length));
    const rel = Math.max(1e-9, 0.5 * 10 ** (1 - digits));
    const cli = JSON.parse(text);
    const got = eco.estimate({ gpu, params_b: Number(size), precision: prec });
    const d = diffJson(got, cli, rel);
    assert.deepEqual(d, [], `${gpu} ${size} ${prec} (rel ${rel}):\n${d.join('\n')}`);
  }
});

test('negative control: a curve changed by 1e-7 is detected', async () => {
  const other = await loadEco(readFileSync(join(data.tmp, 'eco.wasm')));
  const doc = JSON.parse(JSON.stringify(curvesDoc));
  const c = doc.curves.find((x) => x.arch === 'ada' && x.precision === 'nf4');
  c.params.A *= 1 + 1e-7;
  other.loadCurves(doc);
  const q = { gpu: 'RTX 4090', params_b: 2, precision: 'nf4' };
  const want = await api('/v1/estimate', q);
  assert.notDeepEqual(diffJson(other.estimate(q), want.body), []);
  assert.deepEqual(diffJson(eco.estimate(q), want.body), []);
});

test('loader rejects malformed curves', () => {
  const doc = JSON.parse(JSON.stringify(curvesDoc));
  doc.curves[0].arch = 'voodoo';
  assert.throws(() => eco.loadCurves(doc), /unknown arch/);
  const doc2 = JSON.parse(JSON.stringify(curvesDoc));
  doc2.fp16[0].points.reverse();
  assert.throws(() => eco.loadCurves(doc2), /sorted/);
  eco.loadCurves(curvesDoc); // restore for any later test
});

// The charts' band is the range the estimator answers at each size (GET /v1/estimate for the curve's arch), not
// the fit's own band: a chart never draws a surer band than the answer it overlays, and it widens where extrapolated.
test('chart band: the estimator range at every size', async () => {
  const curves = curvesDoc.curves.filter((c) => c.n_max_b > c.n_min_b).slice(0, 6);
  assert.ok(curves.length >= 3);
  for (const c of curves) {
    const x0 = c.n_min_b / 4, x1 = c.n_max_b * 4, n = 9;
    const s = eco.curveSeries(c.arch, c.precision, n, x0, x1);
    assert.equal(s.x.length, n);
    let widened = 0;
    for (let i = 0; i < n; i++) {
      const { status, body } = await api('/v1/estimate', { gpu: c.arch, params_b: s.x[i], precision: c.precision });
      assert.equal(status, 200);
      if (body.arch_used !== c.arch) continue; // a proxy's answer: the fit's band stays
      const [lo, hi] = body.range95;
      assert.ok(Math.abs(s.lo[i] - lo) <= 1e-9 * (1 + Math.abs(lo)), `${c.arch}/${c.precision} at ${s.x[i]}: lo ${s.lo[i]} vs ${lo}`);
      assert.ok(Math.abs(s.hi[i] - hi) <= 1e-9 * (1 + Math.abs(hi)), `${c.arch}/${c.precision} at ${s.x[i]}: hi ${s.hi[i]} vs ${hi}`);
      assert.ok(s.lo[i] <= s.y[i] + 1e-9 || body.label === 'measured', 'the band holds the curve away from a measurement');
      if (s.x[i] > c.n_max_b && s.hi[i] - s.lo[i] > 0) widened++;
    }
    assert.ok(widened >= 1, `${c.arch}/${c.precision}: an extrapolated size has a range`);
  }
});
