// Tested models: per architecture and precision, the fitted curve with its band and the measured anchors; bars
// per precision for one model; a sortable table of every measurement. State lives in the URL hash (permalink).
import { getEco, loadMeasurements, el, fmtPct, fmtNum, fmtB, signClass, badge, nBadge, readHash, writeHash, copyText, showError } from './common.js';
import { curveChart, chartLegend, findCurve, curveName } from './chart.js';

const $ = (id) => document.getElementById(id);
const COLS = [
  ['gpu', 'GPU'], ['model', 'Model'], ['params_b', 'Size (B)', true], ['precision', 'Precision'], ['delta_pct', 'ΔE%', true],
  ['n_trials', 'n', true], ['cv_pct', 'CV%', true], ['e_fp16_mj', 'fp16 mJ/token', true], ['e_quant_mj', 'quant mJ/token', true],
  ['protocol', 'Protocol'], ['backend', 'Software'], ['synthetic_weights', 'Weights'], ['session', 'Session'], ['flags', 'Flags'],
  ['source', 'Source'],
];
// data/h200's runs decode random values of the models' real shapes: said wherever a measurement is shown
const weightsOf = (r) => (r.synthetic_weights ? 'synthetic (real shapes)' : 'checkpoint');

const state = { arch: '', prec: '', card: '', model: '', sort: 'params_b', dir: 'asc', all: '' };
const STATE_DEFAULTS = { ...state }; // a permalink's missing key takes this, not the page's last value
// with no architecture asked: the RTX 5090 NF4 curve, where a 3B model still pays and 7B saves (one click from the flip)
const DEFAULT_VIEW = { arch: 'blackwell', prec: 'nf4', model: 'Qwen2.5-3B' };
let eco, rows = [], curves = [];

function fillSelect(sel, values, current, labelOf = (v) => v) {
  sel.replaceChildren(...values.map((v) => el('option', { value: v, selected: v === current }, labelOf(v))));
  if (!values.includes(current)) sel.value = values[0] ?? '';
  return sel.value;
}

function sync() {
  const archs = [...new Set(curves.map((c) => c.arch))];
  state.arch = fillSelect($('arch'), archs, state.arch, (a) => (eco.infoCache.archs.find((x) => x.arch === a) || {}).label || a);
  const precs = [...new Set(curves.filter((c) => c.arch === state.arch).map((c) => c.precision))];
  state.prec = fillSelect($('prec'), precs, state.prec);
  // the architecture's pooled curve, then each card's own where its data come from several cards
  const cards = curves.filter((c) => c.arch === state.arch && c.precision === state.prec).map((c) => c.card || '');
  state.card = fillSelect($('card'), cards, state.card, (k) => k || 'all cards of the architecture');
  $('card').disabled = cards.length < 2;
  const models = [...new Set(rows.filter((r) => r.arch === state.arch).map((r) => r.model))].sort();
  state.model = fillSelect($('model'), models, state.model);
  writeHash(state);
  drawCurve();
  drawBars();
  drawTable();
}

function drawCurve() {
  const c = findCurve(curves, state.arch, state.prec, state.card);
  if (!c) { $('chart').replaceChildren(); return; }
  const anchors = c.anchors.map((a) => ({ x: a.params_b, y: a.delta_pct, n: a.n_trials }));
  curveChart($('chart'), eco, { arch: c.arch, precision: c.precision, card: c.card, anchors });
  $('chart').setAttribute('aria-label', `ΔE% vs parameters for ${curveName(c)}: ${c.n_anchors} anchors, ${c.form} fit`);
  $('legend').replaceChildren(chartLegend());
  const info = [
    ['form', `${c.form} — ${c.form_note}`],
    ['crossover', Number.isFinite(c.crossover_b) ? `${fmtB(c.crossover_b)} (${c.crossover_dir < 0 ? 'saves above it' : 'costs above it'})` : 'none inside the measured range'],
    ['measured range', `${fmtB(c.n_min_b)} – ${fmtB(c.n_max_b)} (${c.n_distinct_sizes} sizes, ${c.n_anchors} anchors)`],
    ['residual SD', Number.isFinite(c.resid_sd_pct) ? `${fmtNum(c.resid_sd_pct)} points` : 'not defined (exact fit)'],
    ['leave-one-out', Number.isFinite(c.loo.median_abs_pct) ? `median |error| ${fmtNum(c.loo.median_abs_pct)}, mean ${fmtNum(c.loo.mae_pct)} points` : 'not possible'],
    ['protocol', c.pooled_protocols.length ? `pooled: ${c.pooled_protocols.join(', ')}` : c.protocol],
    ['backend', c.backend || '—'],
    ['cards', c.card ? `${c.card} only (its own curve)` : [...new Set(c.anchors.map((a) => a.gpu))].join(', ')],
    ['sessions', c.sessions.join(', ')],
    ['left out', `${c.excluded.length} rows of other protocols or stacks`],
  ];
  $('curve-info').replaceChildren(...info.flatMap(([k, v]) => [el('dt', {}, k), el('dd', {}, v)]));
}

function drawBars() {
  const mine = rows.filter((r) => r.arch === state.arch && r.model === state.model);
  const box = $('bars');
  if (!mine.length) { box.replaceChildren(el('p', { class: 'status' }, 'No measurement of this model on this architecture.')); return; }
  const span = Math.max(50, ...mine.map((r) => Math.abs(r.delta_pct)));
  const out = [el('p', { class: 'status' }, `${state.model} on ${state.arch}: ΔE% per precision (each row one measured comparison against its same-session fp16).`)];
  for (const r of mine.sort((a, b) => a.precision.localeCompare(b.precision) || a.session.localeCompare(b.session))) {
    const w = (Math.abs(r.delta_pct) / span) * 50;
    const left = r.delta_pct < 0 ? 50 - w : 50;
    const single = r.n_trials < 2;
    const cls = `bar ${r.delta_pct < 0 ? 'save' : 'cost'}${single ? ' single' : ''}`;
    out.push(el('div', { class: 'bar-row' },
      el('span', {}, r.precision),
      el('div', { class: 'bar-track', role: 'img', 'aria-label': `${r.precision}: ${fmtPct(r.delta_pct)}, n=${r.n_trials}` },
        el('span', { class: 'bar-zero', style: 'left:50%' }),
        el('span', { class: cls, style: `left:${left}%;width:${Math.max(w, 0.5)}%;color:${r.delta_pct < 0 ? 'var(--save)' : 'var(--cost)'}` })),
      el('span', { class: 'bar-text' }, el('strong', { class: signClass(r.delta_pct) }, fmtPct(r.delta_pct)), ' ', badge('measured'), ' ', nBadge(r.n_trials),
        Number.isFinite(r.cv_pct) ? ` CV ${fmtNum(r.cv_pct, 2)}%` : '', ` · ${r.gpu} · ${r.session} · ${r.source}`,
        r.synthetic_weights ? ' · synthetic weights of the real shapes' : '')));
  }
  box.replaceChildren(...out);
}

function drawTable() {
  const table = $('table');
  const head = el('tr', {}, ...COLS.map(([k, t, num]) => {
    const sorted = state.sort === k ? (state.dir === 'asc' ? 'ascending' : 'descending') : null;
    return el('th', { scope: 'col', class: num ? 'num' : '', 'aria-sort': sorted || 'none' },
      el('button', { type: 'button', class: 'sort', onclick: () => { state.dir = state.sort === k && state.dir === 'asc' ? 'desc' : 'asc'; state.sort = k; writeHash(state); drawTable(); } }, t));
  }));
  table.tHead.replaceChildren(head);
  const list = rows.filter((r) => state.all || r.arch === state.arch);
  const k = state.sort, sgn = state.dir === 'asc' ? 1 : -1;
  list.sort((a, b) => {
    const x = a[k], y = b[k];
    if (typeof x === 'number' || typeof y === 'number') return sgn * ((Number.isFinite(x) ? x : Infinity) - (Number.isFinite(y) ? y : Infinity));
    return sgn * String(x ?? '').localeCompare(String(y ?? ''));
  });
  table.tBodies[0].replaceChildren(...list.map((r) => el('tr', {},
    ...COLS.map(([c, , num]) => {
      let v = r[c];
      if (c === 'delta_pct') v = fmtPct(v);
      else if (c === 'n_trials') v = r.n_trials < 2 ? `${v} (single)` : v;
      else if (c === 'synthetic_weights') v = weightsOf(r);
      else if (num) v = fmtNum(v, 4);
      return el('td', { class: `${num ? 'num ' : ''}${c === 'delta_pct' ? signClass(r.delta_pct) : ''}` }, v === '' || v == null ? '—' : v);
    }))));
}

async function main() {
  Object.assign(state, readHash());
  if (!state.arch) Object.assign(state, DEFAULT_VIEW);
  try {
    eco = await getEco();
    curves = eco.curvesDoc.curves;
    const m = await loadMeasurements();
    rows = m.rows.filter((r) => Number.isFinite(r.delta_pct));
    $('table-source').textContent = `${rows.length} measured comparisons, from ${m.source}. ΔE% = (quantized − fp16) / fp16 in the same session.`;
  } catch (e) {
    showError($('main'), e);
    return;
  }
  $('all-archs').checked = !!state.all;
  for (const id of ['arch', 'prec', 'card', 'model']) $(id).addEventListener('change', (ev) => { state[id] = ev.target.value; if (id === 'arch') state.model = ''; sync(); });
  $('all-archs').addEventListener('change', (ev) => { state.all = ev.target.checked ? '1' : ''; writeHash(state); drawTable(); });
  $('permalink').addEventListener('click', () => copyText(location.href, $('copy-status')));
  window.addEventListener('hashchange', () => {
    Object.assign(state, STATE_DEFAULTS, readHash());
    if (!state.arch) Object.assign(state, DEFAULT_VIEW);
    $('all-archs').checked = !!state.all;
    sync();
  });
  sync();
  document.body.dataset.ready = '1';
}

main();
