// Replications: an energy.json from `eco measure` is validated here with Ajv 2020 against the schema file the C
// validator uses (served as gen/energy.schema.json), then each quantized comparison is placed on the fitted
// curve of its architecture (eco.wasm) with a verdict: inside or outside the estimator's 95% band.
// Nothing is sent anywhere unless the user presses Submit, and only to this site's own API.
/* global ajv2020 */
import { getEco, fetchJson, el, fmtPct, fmtB, signClass, badge, curvePrecision } from './common.js';
import { curveChart, chartLegend, findCurve } from './chart.js';
import { normalizeAjvErrors } from './schema-errors.js';
import { energyConsistency } from './energy-check.js';

const $ = (id) => document.getElementById(id);
let eco, validate, checkTables = {}, lastDoc = null, lastText = null, submitPath = null;
// The file last chosen or dropped: its bytes as they are (a BOM, CRLF), sent when the box still shows it, since the
// text area normalizes line ends and the server knows a stored document by its bytes' SHA-256.
let loadedFile = null;
// The API takes at most this many bytes (ECO_API_MAX_REPLICATION_BYTES); a bigger file is refused before it is read,
// as copying tens of MB into the text area freezes the tab.
const MAX_DOC_BYTES = 1048576;

async function setup() {
  const [e, schema] = await Promise.all([getEco(), fetchJson('gen/energy.schema.json')]);
  eco = e;
  validate = new ajv2020.default({ allErrors: true, strict: false }).compile(schema);
  // the presets' sizes for the consistency check, by every name eco_preset_find takes: the preset's, its HF id and
  // the id's short name, in any case
  const presets = Object.fromEntries((eco.infoCache?.models || []).flatMap((m) =>
    [m.name, m.hf_id, (m.hf_id || '').split('/').pop()].filter(Boolean).map((k) => [k.toLowerCase(), m.params_b])));
  // and the C tables it reads: the architectures the curves know, the cards' names and bandwidths
  const archs = eco.infoCache?.archs ? eco.infoCache.archs.map((a) => a.arch) : null; // none known: the check is skipped
  checkTables = { presets, archs, gpuArch: (n) => eco.gpuArch(n), gpuOutside: (n) => eco.gpuOutside(n),
    tokensCeiling: (...a) => eco.tokensPerSecondCeiling(...a) };
  // Submitting needs an API route that accepts replications; look for one in the OpenAPI document.
  try {
    const api = await fetchJson('openapi.json');
    submitPath = Object.keys(api.paths || {}).find((p) => /replication/i.test(p) && api.paths[p].post) || null;
  } catch { submitPath = null; }
  $('submit-status').textContent = submitPath
    ? `Validate a document first. Submit sends it to POST ${submitPath} on this server.`
    : 'This server has no replication endpoint yet (no POST …/replications in its OpenAPI document), so nothing can be submitted from here. Validation and the comparison below happen only in your browser.';
}

function verdictFor(c, doc) {
  const w = doc.weights || {}, g = (doc.environment || {}).gpu || {};
  // the card itself where the site knows it (a card with a curve of its own is judged against that curve), else its
  // architecture
  let card = null;
  try {
    const named = g.name ? eco.gpuArch(g.name) : null;
    card = named && (!g.arch || named === g.arch) ? g.name : null;
  } catch { card = null; }
  const q = { gpu: card || g.arch || g.name || '', params_b: w.params_b, precision: c.precision };
  try {
    // the estimator's 95% range at this size is what the site predicts for a new measurement (it includes the
    // residual scatter, extrapolation and proxy terms), so "inside" means "as predicted"
    const est = eco.estimate(q);
    // ΔE is mostly the kernels' (data/h200): a run of EcoCompute's engine is not judged against a curve of
    // bitsandbytes' on its architecture, nor the reverse (an L4 run against the RTX 4090's bitsandbytes curve)
    const ecoRun = (doc.software || {}).engine_backend === 'cuda', ecoCurve = /^eco /.test(est.backend || '');
    if (ecoRun !== ecoCurve) return { est, otherStack: true };
    const [lo, hi] = est.range95;
    const inside = c.delta_pct >= lo && c.delta_pct <= hi;
    return { est, lo, hi, inside, by: inside ? 0 : c.delta_pct < lo ? lo - c.delta_pct : c.delta_pct - hi };
  } catch (e) {
    return { error: e.message };
  }
}

// Forget the last document: nothing on screen or in hand that a later Submit could send.
function reset() {
  lastDoc = lastText = null;
  for (const id of ['validation', 'points', 'chart', 'legend']) $(id).replaceChildren();
  $('submit').disabled = true;
}

function invalid(message) {
  reset();
  $('validation').replaceChildren(el('p', { class: 'error-box', role: 'alert', id: 'verdict-invalid' }, message));
  $('submit-status').textContent = 'Fix the errors above first.';
}

// text: the document as given, sent byte for byte on Submit (the server recognises a document stored before by
// its bytes' SHA-256).
function show(doc, text) {
  reset();
  const ok = validate(doc);
  // schema first, then what the figures say of each other (eco validate's "consistency" checks)
  const errs = ok ? energyConsistency(doc, checkTables) : normalizeAjvErrors(validate.errors);
  if (errs.length) {
    const what = ok ? 'figures that contradict each other' : `against energy.json schema ${validate.schema?.properties?.schema_version?.const ?? ''}`;
    $('validation').replaceChildren(el('div', { class: 'error-box', role: 'alert', id: 'verdict-invalid' },
      el('p', { class: 'verdict' }, `Invalid: ${errs.length} error${errs.length === 1 ? '' : 's'}, ${what}`),
      el('ul', { class: 'errors', id: 'error-list' }, ...errs.map((e) => el('li', { 'data-pointer': e.pointer, 'data-keyword': e.keyword },
        el('code', {}, e.pointer), ` ${e.keyword}: ${e.message}`)))));
    $('submit-status').textContent = 'Fix the errors above first.';
    return;
  }
  lastDoc = doc;
  lastText = text;
  const g = doc.environment.gpu || {}, w = doc.weights;
  $('validation').replaceChildren(el('div', { class: 'panel', id: 'verdict-valid' },
    el('p', { class: 'verdict save' }, `Valid energy.json (schema ${doc.schema_version}).`),
    doc.example ? el('p', { class: 'scope' }, 'This document is marked "example": true: it is illustrative and would never be imported as data.') : null,
    el('dl', { class: 'kv' },
      el('dt', {}, 'GPU'), el('dd', {}, g.name ? `${g.name} (${g.arch || 'arch unknown'})` : 'no GPU (no energy meter)'),
      el('dt', {}, 'model'), el('dd', {}, `${w.model} · ${fmtB(w.params_b)} · ${w.source} weights`),
      el('dt', {}, 'protocol'), el('dd', {}, `${doc.protocol.version}, ${doc.protocol.tokens} tokens, ${doc.protocol.blocks ?? doc.protocol.iterations} blocks`),
      el('dt', {}, 'meter'), el('dd', {}, doc.meter.basis))));

  const rows = [], overlay = [];
  let first = null;
  for (const c of doc.comparisons || []) {
    if (!Number.isFinite(c.delta_pct)) {
      rows.push(el('tr', {}, el('td', {}, c.precision), el('td', { colspan: 4 }, `no ΔE (${c.basis})`)));
      continue;
    }
    const v = verdictFor(c, doc);
    let verdict;
    if (v.error) verdict = el('span', { class: 'flat' }, `no curve to compare with: ${v.error}`);
    else if (v.otherStack) {
      verdict = el('span', { class: 'flat', 'data-verdict': 'other-stack' },
        `not compared: the ${v.est.arch_used} curve is another software stack's (${v.est.backend || 'unrecorded'}), and ΔE is mostly the kernels'`);
    } else {
      verdict = el('span', { class: `verdict ${v.inside ? 'save' : 'cost'}`, 'data-verdict': v.inside ? 'inside' : 'outside' },
        v.inside ? 'inside the 95% range: consistent with the curve' : `outside the 95% range by ${v.by.toFixed(1)} points`);
      if (!first) first = { c, v };
      if (first.c.precision === c.precision) overlay.push({ x: w.params_b, y: c.delta_pct, lo: c.ci95_pct?.[0], hi: c.ci95_pct?.[1] });
    }
    rows.push(el('tr', { 'data-precision': c.precision },
      el('td', {}, c.precision),
      el('td', { class: `num ${signClass(c.delta_pct)}` }, fmtPct(c.delta_pct, 2), ' ', badge(c.basis), c.n_pairs ? ` n=${c.n_pairs} pairs` : ''),
      el('td', { class: 'num' }, c.ci95_pct ? `${fmtPct(c.ci95_pct[0])} to ${fmtPct(c.ci95_pct[1])}` : '—'),
      el('td', {}, v.error ? '—' : v.otherStack ? [`${fmtPct(v.est.delta_pct)} `, badge(v.est.label), ` (${v.est.arch_used} curve, another stack)`]
        : [`${fmtPct(v.est.delta_pct)} `, badge(v.est.label), ` range ${fmtPct(v.lo)} to ${fmtPct(v.hi)} (${v.est.arch_used} curve)`]),
      el('td', {}, verdict)));
  }
  $('points').replaceChildren(el('h2', {}, 'Against the fitted curves'),
    el('div', { class: 'table-wrap' }, el('table', { id: 'compare' },
      el('caption', { class: 'visually-hidden' }, 'each comparison of the document against the curve'),
      el('thead', {}, el('tr', {}, ...['precision', 'your ΔE', 'your 95% CI', 'curve at this size', 'verdict'].map((h) => el('th', { scope: 'col' }, h)))),
      el('tbody', {}, ...rows))));
  if (first) {
    // the curve the estimate used: a proxy's (e.g. nf4 for nf4-dq) where the precision has none of its own
    const arch = first.v.est.arch_used, prec = curvePrecision(first.v.est), card = first.v.est.curve.card || '';
    curveChart($('chart'), eco, {
      arch, precision: prec, card,
      anchors: (findCurve(eco.curvesDoc.curves, arch, prec, card)?.anchors || [])
        .map((a) => ({ x: a.params_b, y: a.delta_pct, n: a.n_trials })),
      overlay,
      title: prec === first.c.precision ? `${prec} on ${arch}` : `${first.c.precision} against the ${prec} curve on ${arch} (proxy)`,
    });
    $('legend').replaceChildren(chartLegend(['your measurement with its 95% CI']));
  }
  if (doc.example) {
    $('submit-status').textContent = 'An example document is never imported as data, so it cannot be submitted.';
    return;
  }
  $('submit').disabled = !submitPath;
  if (submitPath) $('submit-status').textContent = `Ready. Submit sends this document to POST ${submitPath} on this server.`;
}

function parseAndShow(text) {
  let doc;
  try {
    doc = JSON.parse(text);
  } catch (e) {
    invalid(`Not JSON: ${e.message}`);
    return;
  }
  show(doc, text);
}

async function main() {
  try { await setup(); } catch (e) { $('validation').replaceChildren(el('p', { class: 'error-box', role: 'alert' }, String(e.message || e))); return; }
  $('validate').addEventListener('click', () => parseAndShow($('doc').value));
  $('clear').addEventListener('click', () => { $('doc').value = ''; reset(); });
  $('load-example').addEventListener('click', async () => { $('doc').value = JSON.stringify(await fetchJson('gen/energy.example.valid.json'), null, 1); parseAndShow($('doc').value); });
  const readFile = async (f) => {
    if (!f) return;
    if (f.size > MAX_DOC_BYTES) {
      $('doc').value = '';
      invalid(`${f.name} is ${(f.size / 1048576).toFixed(1)} MiB: an energy.json is accepted up to 1 MiB (eco validate checks bigger files on the command line).`);
      return;
    }
    const bytes = await f.arrayBuffer();
    $('doc').value = new TextDecoder().decode(bytes);
    loadedFile = { shown: $('doc').value, bytes };
    parseAndShow($('doc').value);
  };
  $('file').addEventListener('change', (ev) => readFile(ev.target.files[0]));
  const drop = $('drop');
  drop.addEventListener('dragover', (ev) => { ev.preventDefault(); drop.classList.add('over'); });
  drop.addEventListener('dragleave', () => drop.classList.remove('over'));
  drop.addEventListener('drop', (ev) => { ev.preventDefault(); drop.classList.remove('over'); readFile(ev.dataTransfer.files[0]); });
  $('submit').addEventListener('click', async () => {
    if (!lastDoc || lastText === null || !submitPath) return;
    $('submit-status').textContent = 'Sending…';
    try {
      const r = await fetch(submitPath.replace(/^\//, ''), { method: 'POST', headers: { 'content-type': 'application/json' }, body: loadedFile && loadedFile.shown === lastText ? loadedFile.bytes : lastText });
      $('submit-status').textContent = r.ok ? 'Submitted. Thank you.' : `The server refused it: HTTP ${r.status} ${await r.text()}`;
    } catch (e) { $('submit-status').textContent = `Not sent: ${e.message}`; }
  });
  document.body.dataset.ready = '1';
}

main();
