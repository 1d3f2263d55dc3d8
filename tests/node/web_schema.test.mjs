// The Replications page's validator outside the browser: the same Ajv 2020 bundle the site vendors, the same
// schema file the C validator reads, and the page's error normalisation. Every example must give exactly the
// (pointer, keyword) pairs its .expect sidecar lists (the contract `eco validate` is tested against), and the
// valid examples must pass.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const SRC = process.env.ECO_SOURCE_DIR;
const require = createRequire(import.meta.url);
const Ajv2020 = require(join(SRC, 'node_modules/ajv-dist/dist/ajv2020.min.js')).default;
const { normalizeAjvErrors } = await import(pathToFileURL(join(SRC, 'web/js/schema-errors.js')).href);
const ex = join(SRC, 'data/schema/examples');
const schema = JSON.parse(readFileSync(join(SRC, 'data/schema/energy.schema.json'), 'utf8'));
const validate = new Ajv2020({ allErrors: true, strict: false }).compile(schema);

test('valid examples pass', () => {
  const files = readdirSync(ex).filter((f) => /^energy\.example\..*\.json$/.test(f));
  assert.ok(files.length >= 2);
  for (const f of files) assert.equal(validate(JSON.parse(readFileSync(join(ex, f), 'utf8'))), true, `${f}: ${JSON.stringify(validate.errors)}`);
});

test('invalid examples report exactly their sidecar pointers and keywords', () => {
  const files = readdirSync(ex).filter((f) => /^energy\.invalid\..*\.json$/.test(f));
  assert.ok(files.length >= 10);
  for (const f of files) {
    const want = readFileSync(join(ex, f.replace(/\.json$/, '.expect')), 'utf8').split('\n')
      .filter((l) => l.trim() && !l.startsWith('#')).map((l) => l.trim()).sort();
    assert.equal(validate(JSON.parse(readFileSync(join(ex, f), 'utf8'))), false, `${f} passed`);
    const got = normalizeAjvErrors(validate.errors).map((e) => `${e.pointer} ${e.keyword}`).sort();
    assert.deepEqual(got, want, f);
  }
});

test('normalisation: additionalProperties points at the property, if-wrappers fold away', () => {
  const errs = normalizeAjvErrors([
    { keyword: 'additionalProperties', instancePath: '/a', schemaPath: '#/additionalProperties', params: { additionalProperty: 'x/y' }, message: 'm' },
    { keyword: 'if', instancePath: '/b', schemaPath: '#/if', params: {}, message: 'm' },
    { keyword: 'required', instancePath: '/c', schemaPath: '#/required', params: { missingProperty: 'z' }, message: 'm' },
  ]);
  assert.deepEqual(errs.map((e) => `${e.pointer} ${e.keyword}`), ['/a/x~1y additionalProperties', '/c required']);
  assert.match(errs[1].message, /'z'/);
});

// The page's consistency check and `eco validate`'s find the same defects at the same pointers, in the same words: a committed H200
// run is clean, and each single defect (and two at once) is reported identically by both.
test('consistency: the page and eco validate agree on every defect', async () => {
  const { energyConsistency } = await import(pathToFileURL(join(SRC, 'web/js/energy-check.js')).href);
  const { loadEco } = await import(pathToFileURL(join(SRC, 'web/js/eco-wasm.js')).href);
  const { execFileSync } = await import('node:child_process');
  const { mkdtempSync, writeFileSync, rmSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const base = JSON.parse(readFileSync(join(SRC, 'data/h200/h200_qwen2.5-0.5b.energy.json'), 'utf8'));
  const int8 = base.results.findIndex((r) => r.precision === base.comparisons[0].precision);
  const mutate = (f) => { const d = structuredClone(base); f(d); return d; };
  const cases = {
    clean: mutate(() => {}),
    delta: mutate((d) => { d.comparisons[0].delta_pct = 50; }),
    dup: mutate((d) => { d.results.push(structuredClone(d.results[int8])); }),
    ci: mutate((d) => { d.comparisons[1].ci95_pct = [5, -5]; delete d.comparisons[1].verdict; }),
    verdict: mutate((d) => { d.comparisons[2].verdict = 'costs'; }),
    pairs: mutate((d) => { d.comparisons[0].n_pairs = 99; }),
    missing: mutate((d) => { d.results.splice(int8, 1); }),
    huge: mutate((d) => { d.results[0].e2e_mj_per_token_gross = 3e7; }),
    two: mutate((d) => { d.comparisons[0].delta_pct = 1; d.comparisons[3].n_pairs = 4; }),
    // a cost claimed as a saving: +10% with an interval below zero, or with no interval at all
    claimed: mutate((d) => {
      const c = d.comparisons[0], r = d.results[int8], f = d.results.find((x) => x.precision === 'fp16');
      r.mj_per_token_gross = f.mj_per_token_gross * 1.1; r.ci95_mj = [r.mj_per_token_gross - 1, r.mj_per_token_gross + 1];
      c.delta_pct = 10; c.ci95_pct = [-12, -1]; c.verdict = 'saves';
    }),
    one_pair: mutate((d) => { d.comparisons[0].n_pairs = 1; }), // still 'saves': one pair shows no interval
    mean_outside: mutate((d) => { d.results[0].ci95_mj = [1, 2]; }),
    net_over_gross: mutate((d) => { d.results[0].mj_per_token_net = d.results[0].mj_per_token_gross * 2; }),
    // net is gross less the idle over a token's decode time: the idle left out, or taken twice; the idle after the
    // run (here 30 W above the one before) is as good a baseline as the one before
    net_no_idle: mutate((d) => { d.results[1].mj_per_token_net = d.results[1].mj_per_token_gross; }),
    net_idle_twice: mutate((d) => { const r = d.results[0]; r.mj_per_token_net = r.mj_per_token_gross - 2 * d.idle.before_w * 1000 / r.tokens_per_s; }),
    ok_net_idle_after: mutate((d) => {
      d.idle.after_w = d.idle.before_w + 30;
      const r = d.results[0]; r.mj_per_token_net = r.mj_per_token_gross - d.idle.after_w * 1000 / r.tokens_per_s;
    }),
    samples_elsewhere: mutate((d) => { d.results[0].samples_mj_per_token = d.results[0].samples_mj_per_token.map((x) => x * 2.5); }),
    n_vs_samples: mutate((d) => { d.results[1].n = 2; d.comparisons[0].n_pairs = 2; }),
    megawatt: mutate((d) => { d.results[0].mean_power_w = 1e6; }),
    // the window's power may exceed decode energy x speed by the prefill's energy (a long prompt, a contended
    // host), up to all of the window's energy over the decode time; and fall below it by the prefill's time
    ok_prefill_energy: mutate((d) => { const r = d.results[0]; r.e2e_mj_per_token_gross = r.mj_per_token_gross * 2; r.mean_power_w = r.mj_per_token_gross * 1e-3 * r.tokens_per_s * 1.8; }),
    power_over_e2e: mutate((d) => { const r = d.results[0]; r.mean_power_w = r.e2e_mj_per_token_gross * 1e-3 * r.tokens_per_s * 1.6; }),
    ok_prefill_time: mutate((d) => {
      const r = d.results[0];
      const ws = d.windows.filter((x) => x.precision === r.precision);
      for (const w of ws) w.decode_s = w.seconds * 0.4;
      r.tokens_per_s = ws.reduce((a, w) => a + w.tokens / w.decode_s, 0) / ws.length; // its windows' speeds say so
      r.mj_per_token_net = r.mj_per_token_gross - d.idle.before_w * 1000 / r.tokens_per_s; // idle over the shorter decode
      r.mean_power_w = r.mj_per_token_gross * 1e-3 * r.tokens_per_s * 0.5;
    }),
    power_under_share: mutate((d) => { const r = d.results[0]; r.mean_power_w = r.mj_per_token_gross * 1e-3 * r.tokens_per_s * 0.5; }),
    cv: mutate((d) => { d.results[1].cv_pct = 50; }),
    sd: mutate((d) => { d.results[1].sd_mj = 100; }),
    e2e_below: mutate((d) => { d.results[1].e2e_mj_per_token_gross = 1; }),
    blocks_over: mutate((d) => { d.protocol.iterations = 2; }),
    preset_size: mutate((d) => { d.weights.params_b = 500; }),
    preset_by_hf_id: mutate((d) => { d.weights.preset = d.weights.model.toUpperCase(); d.weights.params_b = 3; }),
    // the card: an arch the curves do not have, another card's arch, neither an arch nor a known name; a new card
    // with its arch is fine; a mean power over the power limit, an idle draw over a loaded one
    arch_unknown: mutate((d) => { d.environment.gpu.arch = 'zzz'; }),
    arch_mismatch: mutate((d) => { d.environment.gpu.arch = 'ampere'; }),
    arch_none: mutate((d) => { d.environment.gpu.name = 'NVIDIA FooBar 9000'; d.environment.gpu.arch = null; }),
    ok_new_card: mutate((d) => { d.environment.gpu.name = 'NVIDIA FooBar 9000'; }),
    over_limit: mutate((d) => { d.environment.gpu.power_limit_w = 100; }),
    idle_high: mutate((d) => { d.idle.before_w = 5000; }),
    // speed: tokens_per_s the mean of its windows' speeds; and under what the card streams (an H200 run filed as an
    // L4's: 0.5B in fp16 reads 0.99 GB a token, so at most ~420 tokens/s on 300 GB/s), its windows said alike
    speed_not_windows: mutate((d) => { d.results[1].tokens_per_s *= 1.3; }),
    too_fast_for_card: mutate((d) => { d.environment.gpu.name = 'NVIDIA L4'; d.environment.gpu.arch = 'ada'; }),
    ok_fast_unknown_card: mutate((d) => { d.environment.gpu.name = 'NVIDIA FooBar 9000'; }),
    // a card of no class: another vendor's, or an NVIDIA generation before Turing, whatever arch it states
    amd_card: mutate((d) => { d.environment.gpu.name = 'AMD Instinct MI300X'; }),
    volta_card: mutate((d) => { d.environment.gpu.name = 'Tesla V100-SXM2-32GB'; d.environment.gpu.arch = 'turing'; }),
    // an HF checkpoint run names no preset: its model id stands for one; a size in millions is caught twice
    ok_checkpoint: mutate((d) => { delete d.weights.preset; delete d.weights.synthetic_seed; d.weights.source = 'checkpoint'; d.weights.checkpoint_sha256 = 'a'.repeat(64); }),
    params_millions: mutate((d) => { delete d.weights.preset; delete d.weights.synthetic_seed; d.weights.source = 'checkpoint'; d.weights.checkpoint_sha256 = 'a'.repeat(64); d.weights.params_b *= 1000; }),
    // trials without samples; a meter called measured whose self-test failed or that dropped more than it took
    no_samples: mutate((d) => { delete d.results[0].samples_mj_per_token; }),
    // the samples are the windows' figures, and a window's figure its energy less the prefill's, a token
    samples_not_windows: mutate((d) => { const x = d.results[0].samples_mj_per_token; x[0] += 1; x[1] -= 1; }),
    window_decode: mutate((d) => { d.windows.find((w) => w.precision === d.results[0].precision).decode_mj_per_token_gross *= 1.1; }),
    window_energy: mutate((d) => { d.windows[2].energy_j *= 1.05; }),
    window_missing: mutate((d) => { const k = d.windows.findIndex((w) => w.precision === d.results[0].precision); d.windows.splice(k, 1); }),
    selftest_failed: mutate((d) => { d.meter.self_test.idle_check_passed = false; }),
    dropped: mutate((d) => { d.meter.dropped_samples = d.meter.sampler_samples + 1; }),
  };
  // the page reads the presets' sizes from eco.wasm; here from `eco model info`, which prints the exact count
  const info = execFileSync(process.env.ECO_BIN, ['model', 'info', base.weights.preset]).toString();
  const size = Number(/^params\s+(\d+)/m.exec(info)[1]) / 1e9;
  const presets = { [base.weights.preset.toLowerCase()]: size, [base.weights.model.toLowerCase()]: size }; // as the page builds it
  const dir = mkdtempSync(join(tmpdir(), 'eco-consistency-'));
  // the page maps card names with eco.wasm (the server's rule): built fresh from the current sources
  execFileSync('bash', [join(SRC, 'scripts/build-wasm.sh'), join(dir, 'eco.wasm')], { stdio: 'pipe' });
  const eco = await loadEco(readFileSync(join(dir, 'eco.wasm')));
  try {
    for (const [name, doc] of Object.entries(cases)) {
      const file = join(dir, `${name}.json`);
      writeFileSync(file, JSON.stringify(doc));
      let out;
      try { out = execFileSync(process.env.ECO_BIN, ['validate', '--json', file]).toString(); } catch (e) { out = e.stdout.toString(); }
      const c = JSON.parse(out)[0].errors.map((e) => `${e.instance_path} ${e.keyword}: ${e.message}`).sort();
      const js = energyConsistency(doc, { presets, archs: eco.info().archs.map((a) => a.arch), gpuArch: (n) => eco.gpuArch(n),
        gpuOutside: (n) => eco.gpuOutside(n),
        tokensCeiling: (...a) => eco.tokensPerSecondCeiling(...a) }).map((e) => `${e.pointer} ${e.keyword}: ${e.message}`).sort();
      assert.deepEqual(js, c, name);
      assert.equal(js.length === 0, name === 'clean' || name.startsWith('ok_'), `${name}: ${js}`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
