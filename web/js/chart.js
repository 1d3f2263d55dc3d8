// ΔE% vs model size (log x) with uPlot: the fitted curve and the estimator's 95% range at each size (eco.wasm), the
// measured anchors (filled n >= 2, hollow n = 1: a single trial shows no spread) and optional overlay points
// (a user's estimate or a dropped replication, drawn as diamonds). uPlot has no scatter markers of that kind, so
// points are drawn in a draw hook on the same scales.
/* global uPlot */
import { el } from './common.js';

// A curve of curves.json: the arch's pooled one (card '' or absent), or a card's own.
export function findCurve(curves, arch, precision, card = '') {
  return curves.find((c) => c.arch === arch && c.precision === precision && (c.card || '') === (card || ''));
}

// "hopper/nf4", or "hopper/nf4 (NVIDIA H200 only)" for a card's own curve.
export function curveName(c) { return `${c.arch}/${c.precision}${c.card ? ` (${c.card} only)` : ''}`; }

const BLUE = '#0b5cad', BAND = 'rgba(11,92,173,0.16)', RED = '#b42318', INK = '#1b1f24';

// eco: the loaded Eco; curve: {arch, precision, card ('' or absent: the arch's pool)}; anchors: [{x, y, n, label}];
// overlay: [{x, y, lo, hi, label}]
export function curveChart(container, eco, { arch, precision, card = '', anchors = [], overlay = [], title = '' }) {
  container.replaceChildren();
  const cdoc = findCurve(eco.curvesDoc?.curves || [], arch, precision, card);
  const xs = [...anchors.map((a) => a.x), ...overlay.map((p) => p.x), ...(cdoc ? [cdoc.n_min_b, cdoc.n_max_b] : [])].filter((v) => v > 0);
  const x0 = Math.min(...xs) / 2, x1 = Math.max(...xs) * 2;
  const n = 120;
  const s = eco.curveSeries(arch, precision, n, x0, x1, card);
  if (!s) {
    container.append(el('p', { class: 'status' }, `No fitted curve for ${curveName({ arch, precision, card })}.`));
    return null;
  }
  const ys = [...s.lo, ...s.hi, ...anchors.map((a) => a.y), ...overlay.flatMap((p) => [p.y, p.lo, p.hi])].filter(Number.isFinite);
  let ymin = Math.min(0, ...ys), ymax = Math.max(0, ...ys);
  const pad = (ymax - ymin) * 0.06 || 5;
  ymin -= pad; ymax += pad;

  const drawPoints = (u) => {
    const ctx = u.ctx;
    ctx.save();
    const px = (v) => u.valToPos(v, 'x', true), py = (v) => u.valToPos(v, 'y', true);
    // outside the measured sizes the curve is extrapolated: the band (the answers' range) widens there
    if (cdoc) {
      ctx.fillStyle = 'rgba(27,31,36,0.06)';
      const top = u.bbox.top, h = u.bbox.height, l = u.bbox.left, rgt = u.bbox.left + u.bbox.width;
      const a = Math.max(l, px(cdoc.n_min_b)), b = Math.min(rgt, px(cdoc.n_max_b));
      if (a > l) ctx.fillRect(l, top, a - l, h);
      if (b < rgt) ctx.fillRect(b, top, rgt - b, h);
      ctx.fillStyle = '#59636e'; ctx.font = `${11 * devicePixelRatio}px system-ui, sans-serif`;
      if (a - l > 60 * devicePixelRatio) ctx.fillText('extrapolated', l + 4 * devicePixelRatio, top + 14 * devicePixelRatio);
      if (rgt - b > 60 * devicePixelRatio) ctx.fillText('extrapolated', b + 4 * devicePixelRatio, top + 14 * devicePixelRatio);
    }
    // zero line: above it quantizing costs energy, below it saves
    ctx.strokeStyle = INK; ctx.lineWidth = 1; ctx.setLineDash([4, 4]);
    ctx.beginPath(); ctx.moveTo(u.bbox.left, py(0)); ctx.lineTo(u.bbox.left + u.bbox.width, py(0)); ctx.stroke();
    ctx.setLineDash([]);
    const r = 5 * devicePixelRatio;
    for (const a of anchors) {
      ctx.beginPath();
      ctx.arc(px(a.x), py(a.y), r, 0, 2 * Math.PI);
      ctx.lineWidth = 2 * devicePixelRatio;
      ctx.strokeStyle = BLUE;
      if (a.n >= 2) { ctx.fillStyle = BLUE; ctx.fill(); } else { ctx.fillStyle = '#fff'; ctx.fill(); }
      ctx.stroke();
    }
    for (const p of overlay) {
      const cx = px(p.x), cy = py(p.y);
      if (Number.isFinite(p.lo) && Number.isFinite(p.hi)) {
        ctx.strokeStyle = RED; ctx.lineWidth = 1.5 * devicePixelRatio;
        ctx.beginPath(); ctx.moveTo(cx, py(p.lo)); ctx.lineTo(cx, py(p.hi)); ctx.stroke();
      }
      ctx.fillStyle = RED;
      ctx.beginPath();
      ctx.moveTo(cx, cy - r * 1.5); ctx.lineTo(cx + r * 1.5, cy); ctx.lineTo(cx, cy + r * 1.5); ctx.lineTo(cx - r * 1.5, cy);
      ctx.closePath(); ctx.fill();
    }
    ctx.restore();
  };

  const width = () => Math.max(280, container.clientWidth || 600);
  const opts = {
    width: width(),
    height: Math.round(Math.min(380, Math.max(260, width() * 0.6))),
    title,
    scales: { x: { distr: 3, range: [x0, x1] }, y: { range: [ymin, ymax] } },
    axes: [
      { label: 'model size (billion parameters, log scale)', values: (u, v) => v.map((t) => (t == null ? '' : `${+t.toPrecision(3)}`)) },
      { label: 'ΔE% vs fp16 (below 0 saves)', size: 56 },
    ],
    series: [
      {},
      { label: 'fitted curve', stroke: BLUE, width: 2, points: { show: false } },
      { label: '95% band low', stroke: 'transparent', points: { show: false } },
      { label: '95% band high', stroke: 'transparent', points: { show: false } },
    ],
    bands: [{ series: [3, 2], fill: BAND }],
    legend: { show: false },
    cursor: { drag: { x: false, y: false } },
    hooks: { draw: [drawPoints] },
  };
  const u = new uPlot(opts, [Array.from(s.x), Array.from(s.y), Array.from(s.lo), Array.from(s.hi)], container);
  const onResize = () => { if (container.isConnected) u.setSize({ width: width(), height: opts.height }); };
  window.addEventListener('resize', onResize);
  return u;
}

export function chartLegend(extra = []) {
  return el('ul', { class: 'legend', 'aria-label': 'chart legend' },
    el('li', {}, el('span', { class: 'sw band', 'aria-hidden': 'true' }), 'fitted curve; band: the 95% range the estimator answers at each size'),
    el('li', {}, el('span', { class: 'sw filled', 'aria-hidden': 'true' }), 'measured, n ≥ 2 trials'),
    el('li', {}, el('span', { class: 'sw hollow', 'aria-hidden': 'true' }), 'measured, single trial (n = 1)'),
    el('li', {}, el('span', { class: 'sw band', style: 'background:rgba(27,31,36,0.12)', 'aria-hidden': 'true' }), 'grey: outside the measured sizes (extrapolated)'),
    ...extra.map((t) => el('li', {}, el('span', { class: 'sw diamond', 'aria-hidden': 'true' }), t)));
}
