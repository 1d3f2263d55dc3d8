// Your model: the form's values go to eco.wasm's estimator and optimizer (the C code behind /v1/estimate and
// /v1/optimize); the answer is shown with its label, n, range and notes. Inputs are mirrored in the URL hash.
import { getEco, el, fmtPct, fmtNum, fmtB, signClass, badge, nBadge, readHash, writeHash, copyText, showError, curvePrecision } from './common.js';
import { curveChart, chartLegend, findCurve } from './chart.js';

const $ = (id) => document.getElementById(id);
const FIELDS = ['model', 'params', 'gpu', 'precision', 'batch', 'ctx', 'objective'];
let eco;

const REC = {
  quantize: ['Quantize', 'the whole 95% range is below zero: quantizing saves energy', 'save'],
  do_not_quantize: ['Stay on fp16', 'the whole 95% range is above zero: quantizing costs energy', 'cost'],
  depends: ['Depends', 'the 95% range includes zero: the data cannot tell', 'flat'],
};

function query() {
  const q = { gpu: $('gpu').value, precision: $('precision').value, batch: $('batch').value, ctx: $('ctx').value };
  if ($('model').value) q.model = $('model').value;
  if (!$('model').value || $('params').value !== $('params').dataset.preset) q.params_b = $('params').value;
  return q;
}

function energyRow(name, v) {
  return [el('dt', {}, name), el('dd', {}, `${fmtNum(v.value, 4)} mJ/token (95%: ${fmtNum(v.range95[0], 4)} – ${fmtNum(v.range95[1], 4)}) `, badge(v.label),
    el('div', { class: 'hint' }, v.basis))];
}

function clearChart() {
  $('chart').replaceChildren();
  $('legend').replaceChildren();
}

function render(r) {
  const [rtitle, rwhy, rcls] = REC[r.recommendation] || [r.recommendation, '', ''];
  const anchorsN1 = r.anchors.filter((a) => a.n_trials < 2).length;
  const kv = [
    ['label', [badge(r.label), r.proxy ? ` using ${r.proxy.arch}/${r.proxy.precision}: ${r.proxy.reason}` : '']],
    ['95% range', `${fmtPct(r.range95[0])} to ${fmtPct(r.range95[1])}`],
    ['n', [nBadge(r.n), ` trials behind it, ${r.n_anchors} measured comparison(s)${anchorsN1 ? `, ${anchorsN1} single-trial` : ''}`]],
    ['CV', Number.isFinite(r.cv_pct) ? `${fmtNum(r.cv_pct, 3)}%` : 'not known'],
    ['crossover', Number.isFinite(r.crossover_b) ? fmtB(r.crossover_b) : 'none in the measured range'],
    ['curve', `${r.arch_used}/${curvePrecision(r)}${r.proxy ? ' (proxy)' : ''}${r.curve.card ? `, the ${r.curve.card}'s own` : ''}: ${r.curve.form}, measured ${fmtB(r.curve.range_b[0])}–${fmtB(r.curve.range_b[1])}`],
    ['protocol', r.protocol], ['sessions', r.sessions.join(', ') || '—'],
  ];
  const energy = r.energy ? [...energyRow('fp16', r.energy.fp16_mj_per_token), ...energyRow(r.input.precision, r.energy.quant_mj_per_token)]
    : [el('dt', {}, 'mJ/token'), el('dd', {}, 'not given: no fp16 baseline was measured on this architecture')];
  $('result').replaceChildren(el('div', { class: 'panel' },
    el('p', {}, `${r.input.model || fmtB(r.input.params_b)} on ${r.input.gpu} (${r.input.arch}), ${r.input.precision}, batch ${r.input.batch}:`),
    el('p', { class: 'big' }, el('span', { class: signClass(r.delta_pct), id: 'delta' }, fmtPct(r.delta_pct)), ' ', el('span', { class: 'hint' }, 'ΔE vs fp16')),
    el('p', { class: `verdict ${rcls}`, id: 'recommendation' }, `${rtitle}: `, el('span', { class: 'hint' }, rwhy)),
    el('dl', { class: 'kv' }, ...kv.flatMap(([k, v]) => [el('dt', {}, k), el('dd', {}, ...[v].flat())]), ...energy),
    el('ul', { class: 'notes' }, ...r.notes.map((n) => el('li', {}, n)))));
  $('est-json').textContent = JSON.stringify(r, null, 2);

  clearChart();
  const c = findCurve(eco.curvesDoc.curves, r.arch_used, curvePrecision(r), r.curve.card);
  if (c) {
    curveChart($('chart'), eco, {
      arch: c.arch, precision: c.precision, card: c.card,
      anchors: c.anchors.map((a) => ({ x: a.params_b, y: a.delta_pct, n: a.n_trials })),
      overlay: [{ x: r.input.params_b, y: r.delta_pct, lo: r.range95[0], hi: r.range95[1] }],
    });
    $('legend').replaceChildren(chartLegend([`your model (${r.label}, with its 95% range)`]));
  }
}

function renderOpt(o) {
  const row = (c, tag) => el('tr', {},
    el('td', {}, tag), el('td', {}, c.precision), el('td', { class: 'num' }, c.batch),
    el('td', { class: 'num' }, Number.isFinite(c.energy_mj_per_token) ? `${fmtNum(c.energy_mj_per_token, 4)}` : `${fmtNum(c.energy_rel_fp16, 3)}× fp16`, ' ', badge(c.basis.energy)),
    c.precision === 'fp16' ? el('td', { class: 'num' }, 'baseline')
      : el('td', { class: `num ${signClass(c.delta_pct)}`, title: `95% range ${fmtPct(c.delta_range95[0])} to ${fmtPct(c.delta_range95[1])}` },
        fmtPct(c.delta_pct), ' ', badge(c.basis.delta)),
    el('td', { class: 'num' }, fmtNum(c.vram_gb, 3), ' ', badge('modelled')),
    el('td', { class: 'num' }, fmtNum(c.latency_ms, 3), ' ', badge('modelled')));
  const best = o.recommended || o.closest_infeasible;
  const parts = [];
  if (!o.recommended) parts.push(el('p', { class: 'error-box' }, 'Nothing meets the budgets; the closest configuration is shown.'));
  else parts.push(el('p', { id: 'opt-rec' }, 'Recommended on ', el('strong', {}, o.gpu.name), ` (${o.gpu.matched === 'card' ? 'card' : `${o.gpu.arch} card standing in`}), objective ${o.input.objective}: `,
    el('strong', {}, `${best.precision} at batch ${best.batch}`),
    // the form's Batch is the estimate's; the optimizer chooses the batch too (the API's batch pins it)
    `. The optimizer weighs batch 1–64 (the Batch field above sets the estimate only; GET /v1/optimize?batch=… pins it).`));
  parts.push(el('div', { class: 'table-wrap' }, el('table', {},
    el('caption', { class: 'visually-hidden' }, 'recommended and alternative configurations'),
    el('thead', {}, el('tr', {}, ...['', 'precision', 'batch', o.energy_absolute ? 'mJ/token' : 'energy', 'ΔE (batch 1)', 'VRAM GB', 'ms/step'].map((h) => el('th', { scope: 'col' }, h)))),
    el('tbody', {}, row(best, o.recommended ? '★' : 'closest'), ...o.alternatives.map((c) => row(c, 'alt'))))));
  if (o.pareto_front.length > 1) {
    const head = ['', 'precision', 'batch', o.energy_absolute ? 'mJ/token' : 'energy', 'ΔE (batch 1)', 'VRAM GB', 'ms/step'];
    parts.push(el('details', { id: 'opt-pareto' },
      el('summary', {}, `Energy vs latency: ${o.pareto_front.length} configurations that no other beats on both (central estimates)`),
      el('div', { class: 'table-wrap' }, el('table', {},
        el('caption', { class: 'visually-hidden' }, 'Pareto front of energy and latency, by latency'),
        el('thead', {}, el('tr', {}, ...head.map((h) => el('th', { scope: 'col' }, h)))),
        el('tbody', {}, ...o.pareto_front.map((c) => row(c, c.precision === best.precision && c.batch === best.batch ? '★' : '')))))));
  }
  if (o.rejected.length) parts.push(el('ul', { class: 'notes' }, ...o.rejected.map((x) => el('li', {}, `${x.precision}: ${x.reason}`))));
  parts.push(el('ul', { class: 'notes' }, ...o.notes.map((n) => el('li', {}, n))));
  $('opt').replaceChildren(...parts);
}

// A link may name a card, model or precision the select does not list ("NVIDIA H100 80GB HBM3", a typo):
// setting .value would then blank it. Keep the name as an option, so the estimator resolves it or says why not.
function setField(id, value) {
  const f = $(id);
  if (f.tagName !== 'SELECT') { f.value = value; return; }
  for (const o of [...f.querySelectorAll('option[data-from-link]')]) if (o.value !== value) o.remove();
  if (![...f.options].some((o) => o.value === value)) f.append(el('option', { value, 'data-from-link': '1' }, `${value} (from the link)`));
  f.value = value;
}

function run() {
  const state = Object.fromEntries(FIELDS.map((f) => [f, $(f).value]));
  writeHash(state);
  const q = query();
  try {
    render(eco.estimate(q));
  } catch (e) {
    $('result').replaceChildren(el('p', { class: 'error-box', role: 'alert' }, `${e.field ? `${e.field}: ` : ''}${e.message}`));
    $('est-json').textContent = '';
    clearChart();
  }
  try {
    renderOpt(eco.optimize({ gpu: q.gpu, model: q.model, params_b: q.params_b, ctx: q.ctx, objective: $('objective').value }));
  } catch (e) {
    $('opt').replaceChildren(el('p', { class: 'error-box' }, `${e.field ? `${e.field}: ` : ''}${e.message}`));
  }
}

async function main() {
  try { eco = await getEco(); } catch (e) { showError($('result'), e); return; }
  const info = eco.infoCache;
  $('model').append(...info.models.map((m) => el('option', { value: m.name }, `${m.name} (${fmtB(m.params_b)})`)));
  $('gpu').replaceChildren(
    el('optgroup', { label: 'cards' }, ...info.gpus.map((g) => el('option', { value: g.name }, `${g.name} · ${g.arch} · ${g.vram_gb} GB`))),
    el('optgroup', { label: 'architecture only' }, ...info.archs.map((a) => el('option', { value: a.arch }, a.label))));
  $('precision').replaceChildren(...info.precisions.filter((p) => p.name !== 'fp16').map((p) => el('option', { value: p.name }, p.name)));
  $('gpu').value = 'RTX 4090';
  $('precision').value = 'nf4';
  // a permalink sets every field: one it leaves out takes its default, not the value the page last had
  const defaults = Object.fromEntries(FIELDS.map((f) => [f, $(f).value]));
  const syncPreset = () => {
    const m = info.models.find((x) => x.name === $('model').value);
    if (m) { $('params').value = +m.params_b.toPrecision(6); $('params').dataset.preset = $('params').value; } else delete $('params').dataset.preset;
  };
  // the link's fields, on opening and when one is pasted into the open page
  const applyHash = () => {
    const h = readHash();
    for (const f of FIELDS) setField(f, h[f] ?? defaults[f]);
    if (h.model && !h.params) syncPreset();
    else if (h.model) { const m = info.models.find((x) => x.name === h.model); if (m) $('params').dataset.preset = String(+m.params_b.toPrecision(6)); }
    else delete $('params').dataset.preset;
  };
  applyHash();
  $('model').addEventListener('change', () => { syncPreset(); run(); });
  $('params').addEventListener('input', () => { if ($('params').value !== $('params').dataset.preset) $('model').value = ''; });
  $('form').addEventListener('submit', (ev) => { ev.preventDefault(); run(); });
  for (const f of ['gpu', 'precision', 'objective']) $(f).addEventListener('change', run);
  $('permalink').addEventListener('click', () => copyText(location.href, $('copy-status')));
  // a pasted or edited permalink on the open page (replaceState in run() does not fire this)
  window.addEventListener('hashchange', () => { applyHash(); run(); });
  run();
  document.body.dataset.ready = '1';
}

main();
