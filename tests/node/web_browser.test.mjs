// The site in Debian's chromium (headless, driven by playwright-core), served by `eco serve --web` from a site
// built by scripts/build-web.sh: every page loads without console errors or outside requests; the Your-model
// page's numbers equal GET /v1/estimate within 1e-9; the Replications page gives the right verdicts and error
// fields; the Tested-models permalink and table sorting work; keyboard reaches the controls; a 390 px viewport
// has no horizontal overflow. Screenshots go to test-artifacts/web/.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { createRequire } from 'node:module';
import { SRC, makeData, buildSite, startServer, stopServer, cleanup, diffJson } from './web_lib.mjs';

const require = createRequire(import.meta.url);
const { chromium } = require(join(SRC, 'node_modules/playwright-core'));
const CHROMIUM = process.env.ECO_CHROMIUM || '/usr/bin/chromium';
const SHOTS = join(SRC, 'test-artifacts', 'web');
const PAGES = ['index.html', 'estimate.html', 'replications.html', 'methodology.html', 'cite.html', 'corrections.html'];

let data, srv, browser;

before(async () => {
  data = makeData('eco-web-browser-', { runs: true });
  const site = buildSite(data);
  srv = await startServer(data, site);
  mkdirSync(SHOTS, { recursive: true });
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync'],
    // launch() runs chromium with a fresh temporary --user-data-dir of its own (it refuses one passed in args)
  });
});

after(async () => {
  if (browser) await browser.close();
  await stopServer(srv);
  cleanup(data);
});

// A page with console errors, page errors and any request leaving 127.0.0.1 recorded.
async function open(path, { width = 1280, height = 900 } = {}) {
  const ctx = await browser.newContext({ viewport: { width, height } });
  const page = await ctx.newPage();
  const problems = [];
  page.on('console', (m) => { if (m.type() === 'error') problems.push(`console: ${m.text()}`); });
  page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
  page.on('request', (r) => { if (!r.url().startsWith(srv.base) && !r.url().startsWith('data:')) problems.push(`outside request: ${r.url()}`); });
  await page.goto(`${srv.base}/${path}`);
  await page.waitForSelector('body[data-ready="1"]', { timeout: 20000 });
  return { page, ctx, problems };
}

test('every page loads without console errors or outside requests; screenshots', async () => {
  for (const p of PAGES) {
    const { page, ctx, problems } = await open(p);
    assert.deepEqual(problems, [], `${p}: ${problems.join('\n')}`);
    assert.ok((await page.title()).includes('EcoCompute'), `${p}: title`);
    assert.equal(await page.locator('nav.main a[aria-current="page"]').count(), 1, `${p}: current nav item`);
    await page.screenshot({ path: join(SHOTS, `${p.replace('.html', '')}-desktop.png`), fullPage: true });
    await ctx.close();
  }
});

test('GET / serves the Tested models page', async () => {
  const r = await fetch(`${srv.base}/`);
  assert.equal(r.status, 200);
  assert.match(await r.text(), /<h1>Tested models<\/h1>/);
});

async function apiEstimate(q) {
  const qs = new URLSearchParams(Object.entries(q).filter(([, v]) => v !== undefined && v !== ''));
  const r = await fetch(`${srv.base}/v1/estimate?${qs}`);
  assert.equal(r.status, 200, `API ${qs}`);
  return r.json();
}

test('Your model: the page computes the same numbers as GET /v1/estimate', async () => {
  const { page, ctx, problems } = await open('estimate.html');
  const cases = [
    { gpu: 'RTX 4090', params: '7', precision: 'nf4', batch: '1', label: 'measured' },
    { gpu: 'RTX 4090', params: '2.2', precision: 'nf4', batch: '1', label: 'interpolated' },
    // four sequences of 2048 positions: their KV caches rescale the short-context ΔE, estimated
    { gpu: 'RTX 4090', params: '2.2', precision: 'nf4', batch: '4', label: 'estimated' },
    { gpu: 'A800', params: '70', precision: 'int8', batch: '1', label: 'extrapolated' },
    { gpu: 'H200', params: '13', precision: 'nf4', batch: '1', label: 'interpolated' },
    { gpu: 'RTX 5090', params: '13', precision: 'int8-mixed', batch: '8', label: 'estimated' },
  ];
  for (const c of cases) {
    await page.selectOption('#model', '');
    await page.fill('#params', c.params);
    await page.selectOption('#gpu', c.gpu);
    await page.selectOption('#precision', c.precision);
    await page.fill('#batch', c.batch);
    await page.click('#go');
    await page.waitForFunction((p) => { try { return JSON.parse(document.getElementById('est-json').textContent).input.params_b === p; } catch { return false; } }, Number(c.params));
    const got = JSON.parse(await page.textContent('#est-json'));
    const want = await apiEstimate({ gpu: c.gpu, params_b: c.params, precision: c.precision, batch: c.batch, ctx: '2048' });
    assert.deepEqual(diffJson(got, want, 1e-9), [], JSON.stringify(c));
    assert.equal(got.label, c.label, JSON.stringify(c));
    // what the page shows is that answer
    const shown = await page.textContent('#delta');
    assert.equal(shown.replace('−', '-'), `${want.delta_pct > 0 ? '+' : ''}${want.delta_pct.toFixed(1)}%`);
    assert.ok((await page.textContent('#result')).includes(want.label));
    assert.ok(await page.locator('#opt-rec').count() === 1 || (await page.textContent('#opt')).includes('closest'), 'optimizer output');
  }
  // a model preset via the permalink
  await page.goto(`${srv.base}/estimate.html#model=Qwen2.5-3B&gpu=T4&precision=nf4&batch=1&ctx=2048&objective=energy`);
  await page.waitForFunction(() => { try { return JSON.parse(document.getElementById('est-json').textContent).input.gpu === 'T4'; } catch { return false; } });
  const got = JSON.parse(await page.textContent('#est-json'));
  const want = await apiEstimate({ gpu: 'T4', model: 'Qwen2.5-3B', precision: 'nf4', batch: '1', ctx: '2048' });
  assert.deepEqual(diffJson(got, want, 1e-9), []);
  // the optimizer's energy-latency front, one row per configuration the API lists
  const opt = await (await fetch(`${srv.base}/v1/optimize?gpu=T4&model=Qwen2.5-3B&ctx=2048&objective=energy`)).json();
  assert.ok(opt.pareto_front.length > 1, 'a front with more than one configuration for this query');
  assert.equal(await page.locator('#opt-pareto tbody tr').count(), opt.pareto_front.length);
  assert.equal(await page.locator('#opt-pareto tbody tr').first().locator('td').nth(1).textContent(), opt.pareto_front[0].precision);
  // every ΔE in the optimizer's tables carries its label, as the API gives it
  const deltaCells = page.locator('#opt-pareto tbody td:nth-child(5)');
  for (let i = 0; i < opt.pareto_front.length; i++) {
    const c = opt.pareto_front[i];
    const cell = (await deltaCells.nth(i).textContent()).trim();
    if (c.precision === 'fp16') assert.equal(cell, 'baseline');
    else assert.ok(cell.endsWith(c.basis.delta), `Pareto row ${i}: '${cell}' lacks '${c.basis.delta}'`);
  }
  await page.screenshot({ path: join(SHOTS, 'estimate-preset.png'), fullPage: true });
  // a link naming a card the select does not list: an nvidia-smi name resolves, a made-up one is an error naming it
  await page.goto(`${srv.base}/estimate.html#model=Qwen2.5-7B&gpu=NVIDIA%20H100%2080GB%20HBM3&precision=nf4&batch=1&ctx=2048`);
  await page.waitForFunction(() => { try { return JSON.parse(document.getElementById('est-json').textContent).input.gpu.startsWith('NVIDIA'); } catch { return false; } });
  const smi = JSON.parse(await page.textContent('#est-json'));
  assert.deepEqual(diffJson(smi, await apiEstimate({ gpu: 'NVIDIA H100 80GB HBM3', model: 'Qwen2.5-7B', precision: 'nf4', batch: '1', ctx: '2048' }), 1e-9), []);
  await page.goto(`${srv.base}/estimate.html#model=Qwen2.5-7B&gpu=Voodoo%205&precision=nf4`);
  await page.waitForSelector('#result .error-box');
  assert.match(await page.textContent('#result .error-box'), /^gpu: unknown GPU 'Voodoo 5'/);
  assert.deepEqual(problems, []);
  await ctx.close();
});

test('Replications: valid and invalid energy.json get the right verdicts and error fields', async () => {
  const { page, ctx, problems } = await open('replications.html');
  const ex = join(SRC, 'data/schema/examples');
  // valid: the H200 example (hopper -> estimated from the ampere curve)
  await page.fill('#doc', readFileSync(join(ex, 'energy.example.valid.json'), 'utf8'));
  await page.click('#validate');
  await page.waitForSelector('#verdict-valid');
  const rows = await page.$$eval('#compare tbody tr[data-precision]', (trs) => trs.map((tr) => ({
    precision: tr.dataset.precision, verdict: tr.querySelector('[data-verdict]')?.dataset.verdict ?? null })));
  assert.ok(rows.length >= 3, JSON.stringify(rows));
  // verdicts recomputed from the API: inside iff the replication's ΔE lies in GET /v1/estimate's range95 for the card
  // itself (a known card: the H200, whose own curve answers for it)
  const doc = JSON.parse(readFileSync(join(ex, 'energy.example.valid.json'), 'utf8'));
  assert.equal(doc.environment.gpu.name, 'NVIDIA H200');
  for (const r of rows) {
    const c = doc.comparisons.find((x) => x.precision === r.precision);
    const res = await fetch(`${srv.base}/v1/estimate?gpu=${encodeURIComponent(doc.environment.gpu.name)}&params_b=${doc.weights.params_b}&precision=${r.precision}`);
    if (res.status !== 200) { assert.equal(r.verdict, null, `${r.precision}: no curve, no verdict`); continue; }
    const est = await res.json();
    const inside = c.delta_pct >= est.range95[0] && c.delta_pct <= est.range95[1];
    // a curve of another software stack (bitsandbytes for an EcoCompute-engine run) is not compared with
    const other = (doc.software.engine_backend === 'cuda') !== est.backend.startsWith('eco ');
    assert.equal(r.verdict, other ? 'other-stack' : inside ? 'inside' : 'outside', `${r.precision}: ${c.delta_pct} vs ${est.range95}`);
  }
  assert.ok(rows.some((r) => r.verdict === 'outside'), 'the synthetic example is far from the curves');
  assert.ok(await page.locator('#chart canvas').count() >= 1, 'overlay chart drawn');
  // an EcoCompute-engine run on an A100 (ampere: bitsandbytes curves) is compared with none of them
  const a100 = JSON.parse(readFileSync(join(SRC, 'data/h200/h200_qwen2.5-0.5b.energy.json'), 'utf8'));
  Object.assign(a100.environment.gpu, { name: 'NVIDIA A100-SXM4-80GB', arch: 'ampere', power_limit_w: 400 });
  await page.fill('#doc', JSON.stringify(a100));
  await page.click('#validate');
  await page.waitForSelector('#verdict-valid');
  const other = await page.$$eval('#compare tbody tr[data-precision] [data-verdict]', (els) => els.map((e) => e.dataset.verdict));
  assert.ok(other.length > 0 && other.every((v) => v === 'other-stack'), JSON.stringify(other));
  // the same document with the nf4 comparison moved onto the prediction: inside
  const est = await apiEstimate({ gpu: doc.environment.gpu.name, params_b: doc.weights.params_b, precision: 'nf4' });
  assert.equal(est.curve.card, 'NVIDIA H200', 'the card\'s own curve');
  const moved = JSON.parse(JSON.stringify(doc));
  const nf4 = moved.comparisons.find((x) => x.precision === 'nf4');
  nf4.delta_pct = Number(est.delta_pct.toFixed(2));
  nf4.ci95_pct = [nf4.delta_pct - 0.5, nf4.delta_pct + 0.5];
  // its results and verdict follow, or the consistency check refuses the document
  const fp16 = moved.results.find((x) => x.precision === 'fp16'), nf4r = moved.results.find((x) => x.precision === 'nf4');
  const shift = fp16[nf4.metric] * (1 + nf4.delta_pct / 100) - nf4r[nf4.metric];
  if (Number.isFinite(nf4r.mean_power_w)) nf4r.mean_power_w *= (nf4r[nf4.metric] + shift) / nf4r[nf4.metric]; // same speed
  nf4r[nf4.metric] += shift;
  if (Array.isArray(nf4r.ci95_mj)) nf4r.ci95_mj = nf4r.ci95_mj.map((v) => v + shift);
  if (Array.isArray(nf4r.samples_mj_per_token)) nf4r.samples_mj_per_token = nf4r.samples_mj_per_token.map((v) => v + shift);
  for (const w of moved.windows || []) { // the samples are the windows' figures, each its energy less the prefill's
    if (w.precision !== 'nf4') continue;
    w.decode_mj_per_token_gross += shift;
    w.energy_j += (shift * w.tokens) / 1000;
  }
  if (Number.isFinite(nf4r.e2e_mj_per_token_gross)) nf4r.e2e_mj_per_token_gross += shift; // it holds the decode too
  if (Number.isFinite(nf4r.cv_pct) && Number.isFinite(nf4r.sd_mj)) nf4r.cv_pct = (100 * nf4r.sd_mj) / nf4r[nf4.metric]; // same SD, new mean
  if (nf4.verdict) nf4.verdict = nf4.ci95_pct[1] < 0 ? 'saves' : nf4.ci95_pct[0] > 0 ? 'costs' : 'inconclusive';
  await page.fill('#doc', JSON.stringify(moved));
  await page.click('#validate');
  await page.waitForSelector('#verdict-valid');
  assert.equal(await page.getAttribute('#compare tr[data-precision="nf4"] [data-verdict]', 'data-verdict'), 'inside');
  // nothing was sent while validating; an example document is never imported, so it cannot be submitted
  assert.equal((await (await fetch(`${srv.base}/v1/replications`)).json()).count, 0, 'nothing uploaded before Submit');
  assert.equal(await page.isDisabled('#submit'), true, 'an example document cannot be submitted');
  assert.match(await page.textContent('#submit-status'), /example document/);
  await page.screenshot({ path: join(SHOTS, 'replications-valid.png'), fullPage: true });

  // a measured document: Submit sends its bytes as they are (the server knows a document stored before by them)
  const measuredText = readFileSync(join(SRC, 'data/h200/h200_qwen2.5-3b.session13.energy.json'), 'utf8');
  await page.fill('#doc', measuredText);
  await page.click('#validate');
  await page.waitForSelector('#verdict-valid');
  assert.equal(await page.isDisabled('#submit'), false, 'the API has a replication endpoint: submit is enabled');
  await page.click('#submit');
  await page.waitForFunction(() => /Submitted/.test(document.querySelector('#submit-status').textContent));
  const stored = await (await fetch(`${srv.base}/v1/replications`)).json();
  assert.equal(stored.count, 1);
  assert.equal(JSON.stringify(stored).includes(createHash('sha256').update(measuredText).digest('hex')), true,
    'stored under the file\'s own SHA-256');
  // a chosen file with CRLF line ends: the file's own bytes go (the text area shows them with LF)
  const crlf = Buffer.from(readFileSync(join(SRC, 'data/h200/h200_qwen2.5-1.5b.energy.json'), 'utf8').replace(/\n/g, '\r\n'));
  await page.setInputFiles('#file', { name: 'crlf.energy.json', mimeType: 'application/json', buffer: crlf });
  await page.waitForSelector('#verdict-valid');
  await page.click('#submit');
  await page.waitForFunction(() => /Submitted/.test(document.querySelector('#submit-status').textContent) && !/Sending/.test(document.querySelector('#submit-status').textContent));
  const stored2 = await (await fetch(`${srv.base}/v1/replications`)).json();
  assert.equal(stored2.count, 2);
  assert.ok(JSON.stringify(stored2).includes(createHash('sha256').update(crlf).digest('hex')), 'stored under the CRLF file\'s SHA-256');
  // then not JSON: the previous document is forgotten, nothing can be submitted, the comparison is gone
  await page.fill('#doc', '{"this is": not json');
  await page.click('#validate');
  await page.waitForSelector('#verdict-invalid');
  assert.equal(await page.isDisabled('#submit'), true, 'a parse error disables Submit');
  assert.equal(await page.locator('#compare').count(), 0, 'the old comparison is cleared');
  assert.equal(await page.locator('#chart canvas').count(), 0, 'the old chart is cleared');

  // invalid: exactly the sidecar's pointers
  for (const name of ['two-errors', 'unknown-field', 'missing-fp16']) {
    await page.fill('#doc', readFileSync(join(ex, `energy.invalid.${name}.json`), 'utf8'));
    await page.click('#validate');
    await page.waitForSelector('#verdict-invalid');
    const got = (await page.$$eval('#error-list li', (lis) => lis.map((li) => `${li.dataset.pointer} ${li.dataset.keyword}`))).sort();
    const want = readFileSync(join(ex, `energy.invalid.${name}.expect`), 'utf8').split('\n').filter((l) => l.trim() && !l.startsWith('#')).sort();
    assert.deepEqual(got, want, name);
    assert.equal(await page.locator('#verdict-valid').count(), 0);
    if (name === 'two-errors') await page.screenshot({ path: join(SHOTS, 'replications-invalid.png'), fullPage: true });
  }
  // schema-valid but its ΔE contradicts its results: the consistency check, at the C validator's pointer
  const contra = JSON.parse(readFileSync(join(SRC, 'data/h200/h200_qwen2.5-0.5b.energy.json'), 'utf8'));
  contra.comparisons[0].delta_pct = 50;
  contra.comparisons[0].ci95_pct = [49, 51];
  contra.comparisons[0].verdict = 'costs';
  await page.fill('#doc', JSON.stringify(contra));
  await page.click('#validate');
  await page.waitForSelector('#verdict-invalid');
  assert.deepEqual(await page.$$eval('#error-list li', (lis) => lis.map((li) => `${li.dataset.pointer} ${li.dataset.keyword}`)),
    ['/comparisons/0/delta_pct consistency']);
  assert.match(await page.textContent('#verdict-invalid'), /contradict each other/);
  // not JSON at all
  await page.fill('#doc', '{"schema_version": ');
  await page.click('#validate');
  await page.waitForSelector('#verdict-invalid');
  assert.match(await page.textContent('#verdict-invalid'), /Not JSON/);
  assert.deepEqual(problems, []);
  await ctx.close();
});

test('Tested models: permalink restores the state; table sorts; n=1 marked', async () => {
  const { page, ctx, problems } = await open('index.html#arch=ada&prec=int8-mixed&model=Qwen2-0.5B&sort=delta_pct&dir=desc');
  assert.equal(await page.inputValue('#arch'), 'ada');
  assert.equal(await page.inputValue('#prec'), 'int8-mixed');
  assert.equal(await page.inputValue('#model'), 'Qwen2-0.5B');
  assert.ok(await page.locator('#chart canvas').count() >= 1);
  assert.ok(await page.locator('#bars .bar.single').count() >= 1, 'a single-trial bar is hatched');
  const col = await page.$$eval('#table tbody tr', (trs) => trs.map((tr) => tr.children[4].textContent));
  const vals = col.map((t) => Number(t.replace('−', '-').replace('%', '')));
  assert.ok(vals.length > 3);
  for (let i = 1; i < vals.length; i++) assert.ok(vals[i - 1] >= vals[i], `descending: ${vals}`);
  await page.click('#table th:nth-child(5) button');
  assert.equal(await page.getAttribute('#table th:nth-child(5)', 'aria-sort'), 'ascending');
  const asc = (await page.$$eval('#table tbody tr', (trs) => trs.map((tr) => tr.children[4].textContent))).map((t) => Number(t.replace('−', '-').replace('%', '')));
  for (let i = 1; i < asc.length; i++) assert.ok(asc[i - 1] <= asc[i], `ascending: ${asc}`);
  assert.match(page.url(), /dir=asc/);
  // a permalink pasted into the open page gives what it gives fresh: keys it leaves out take their defaults
  await page.check('#all-archs');
  const fresh = await open('index.html#arch=ada&prec=nf4&model=Qwen2.5-3B&sort=params_b&dir=asc');
  const want = await fresh.page.$$eval('#table tbody tr', (trs) => trs.length);
  await fresh.ctx.close();
  await page.evaluate(() => { location.hash = '#arch=ada&prec=nf4&model=Qwen2.5-3B&sort=params_b&dir=asc'; });
  await page.waitForFunction(() => !document.getElementById('all-archs').checked);
  assert.equal(await page.$$eval('#table tbody tr', (trs) => trs.length), want);
  // the H200 runs decode synthetic weights of the real shapes, and their bars and rows say so; the reference rows not
  await page.evaluate(() => { location.hash = '#arch=hopper&prec=nf4&model=Llama-3.1-8B'; });
  await page.waitForFunction(() => document.getElementById('arch').value === 'hopper');
  assert.match(await page.textContent('#bars'), /synthetic weights of the real shapes/);
  const weights = await page.$$eval('#table thead th', (ths) => ths.map((th) => th.textContent).indexOf('Weights'));
  assert.ok(weights >= 0);
  const cells = await page.$$eval('#table tbody tr', (trs, i) => trs.map((tr) => tr.children[i].textContent), weights);
  assert.ok(cells.length > 0 && cells.every((t) => t === 'synthetic (real shapes)'), cells.join());
  await page.check('#all-archs');
  const all = await page.$$eval('#table tbody tr', (trs, i) => trs.map((tr) => tr.children[i].textContent), weights);
  assert.ok(all.includes('checkpoint') && all.includes('synthetic (real shapes)'));
  // hopper's data come from two cards: the pool, and each card's own curve, which a permalink keeps
  assert.equal(await page.isDisabled('#card'), false);
  const cards = await page.$$eval('#card option', (os) => os.map((o) => o.value));
  assert.deepEqual(cards, ['', 'NVIDIA H100 80GB HBM3', 'NVIDIA H200']);
  assert.match(await page.getAttribute('#chart', 'aria-label'), /hopper\/nf4: \d+ anchors/);
  await page.selectOption('#card', 'NVIDIA H100 80GB HBM3');
  await page.waitForFunction(() => /H100 80GB HBM3 only/.test(document.getElementById('chart').getAttribute('aria-label')));
  assert.match(page.url(), /card=NVIDIA/);
  assert.match(await page.textContent('#curve-info'), /NVIDIA H100 80GB HBM3 only \(its own curve\)/);
  await page.evaluate(() => { location.hash = '#arch=ada&prec=nf4'; }); // one card: no choice
  await page.waitForFunction(() => document.getElementById('arch').value === 'ada');
  assert.equal(await page.isDisabled('#card'), true);
  assert.deepEqual(problems, []);
  await ctx.close();
});

test('Your model: a pasted permalink resets what it leaves out; a proxy answer draws the proxy curve', async () => {
  const { page, ctx, problems } = await open('estimate.html#model=Qwen2.5-7B&gpu=H200');
  await page.waitForFunction(() => document.getElementById('est-json').textContent.includes('Qwen2.5-7B'));
  await page.evaluate(() => { location.hash = '#params=3&gpu=T4&precision=nf4&batch=1&ctx=2048&objective=energy'; });
  await page.waitForFunction(() => { try { return JSON.parse(document.getElementById('est-json').textContent).input.gpu === 'T4'; } catch { return false; } });
  const custom = JSON.parse(await page.textContent('#est-json'));
  assert.equal(custom.input.model, null, 'no model in the link: a custom size');
  assert.equal(custom.input.params_b, 3);
  assert.equal(await page.inputValue('#model'), '');
  // a proxy answer (on the reference data hopper borrows ampere's curve; with the H200 data, nf4-dq borrows hopper's
  // nf4): the chart is the curve the answer was read from, and the row names it
  await page.evaluate(() => { location.hash = '#params=7&gpu=H200&precision=nf4-dq&batch=1&ctx=2048'; });
  await page.waitForFunction(() => { try { return JSON.parse(document.getElementById('est-json').textContent).input.precision === 'nf4-dq'; } catch { return false; } });
  const r = JSON.parse(await page.textContent('#est-json'));
  assert.ok(r.proxy, 'a proxy answer');
  assert.ok((await page.textContent('#result')).includes(`${r.arch_used}/${r.proxy.precision} (proxy)`));
  if (r.curve.card) assert.ok((await page.textContent('#result')).includes(`, the ${r.curve.card}'s own`), 'a card\'s own curve is named');
  assert.ok(await page.locator('#chart canvas').count() >= 1, 'the proxy curve is drawn');
  // an error clears the chart and its legend
  await page.evaluate(() => { location.hash = '#params=7&gpu=T4&precision=fp8'; });
  await page.waitForSelector('#result .error-box');
  assert.equal(await page.locator('#chart canvas').count(), 0);
  assert.equal((await page.textContent('#legend')).trim(), '');
  assert.deepEqual(problems, []);
  await ctx.close();
});

test('keyboard: Tab reaches the form controls in order', async () => {
  for (const [p, ids] of [['estimate.html', ['model', 'params', 'gpu', 'precision', 'batch', 'ctx', 'go']], ['index.html', ['arch', 'prec', 'model', 'permalink']],
    ['replications.html', ['file', 'doc', 'validate']]]) {
    const { page, ctx } = await open(p);
    const seen = [];
    for (let i = 0; i < 40 && seen.length < 60; i++) {
      await page.keyboard.press('Tab');
      seen.push(await page.evaluate(() => document.activeElement?.id || document.activeElement?.tagName));
    }
    let pos = -1;
    for (const id of ids) {
      const at = seen.indexOf(id, pos + 1);
      assert.ok(at > pos, `${p}: ${id} not reached after position ${pos} (${seen.join(' ')})`);
      pos = at;
    }
    await ctx.close();
  }
  // the estimate form submits from the keyboard
  const { page, ctx } = await open('estimate.html');
  await page.focus('#params');
  await page.fill('#params', '5');
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => { try { return JSON.parse(document.getElementById('est-json').textContent).input.params_b === 5; } catch { return false; } });
  await ctx.close();
});

test('390 px wide: no horizontal overflow on any page; phone screenshots', async () => {
  for (const p of PAGES) {
    const { page, ctx, problems } = await open(p, { width: 390, height: 844 });
    if (p === 'replications.html') {
      await page.click('#load-example');
      await page.waitForSelector('#verdict-valid');
    }
    const { sw, cw } = await page.evaluate(() => ({ sw: document.documentElement.scrollWidth, cw: document.documentElement.clientWidth }));
    assert.ok(sw <= cw, `${p}: scrollWidth ${sw} > ${cw}`);
    assert.deepEqual(problems, [], p);
    await page.screenshot({ path: join(SHOTS, `${p.replace('.html', '')}-390.png`), fullPage: true });
    await ctx.close();
  }
});
