// Methodology, generated: protocol constants from gen/protocol.json (libeco's own defaults), the estimator's
// tables from eco.wasm, the fitted curves from curves.json, and docs/METHODOLOGY.md when the build copied it.
import { getEco, fetchJson, el, fmtNum, fmtB, markdown, showError } from './common.js';
import { curveName } from './chart.js';

const $ = (id) => document.getElementById(id);
const table = (caption, head, rows) => el('div', { class: 'table-wrap' }, el('table', {},
  el('caption', {}, caption),
  el('thead', {}, el('tr', {}, ...head.map((h) => el('th', { scope: 'col' }, h)))),
  el('tbody', {}, ...rows.map((r) => el('tr', {}, ...r.map((c) => el('td', {}, c ?? '—')))))));

async function main() {
  let eco, proto;
  try { [eco, proto] = await Promise.all([getEco(), fetchJson('gen/protocol.json')]); } catch (e) { showError($('protocol'), e); return; }
  const d = proto.defaults;
  $('protocol').replaceChildren(
    el('p', {}, `Protocol `, el('strong', { id: 'protocol-version' }, proto.protocol_version), ` (eco ${proto.eco_version}). Every quantized precision is measured against a ${d.baseline} baseline in the same session, configurations interleaved in a seeded random order within each block.`),
    table('defaults of eco measure (eco_measure_options_default)', ['setting', 'default', 'meaning'], [
      ['tokens', d.tokens, 'generated tokens per generation (greedy, EOS ignored)'],
      ['blocks', d.blocks, 'measured blocks; each has one window per configuration'],
      ['warmups', d.warmups, 'warm-up generations per configuration, not measured'],
      ['min_window_s', `${d.min_window_s} s`, 'shortest energy window: back-to-back generations until it is reached'],
      ['min_generations', d.min_generations, 'at least this many generations per window'],
      ['idle_s', `${d.idle_s} s`, 'idle baseline before and after the run'],
      ['sampler_period_ms', `${d.sampler_period_ms} ms`, 'instant-power samples (a cross-check of the energy counter)'],
      ['seed', d.seed, 'block order'],
      ['max configurations', proto.max_configs, 'precisions in one session, fp16 first'],
    ]));
  const info = eco.infoCache;
  const LABELS = {
    measured: 'an anchor exists at this size (or of this model) on the curve that answers: the card\'s own curve where the card has one (another card\'s measurement at this size is only noted), else the architecture\'s; the value is the anchors\' trial-weighted mean',
    interpolated: 'the curve that answers (the card\'s own, else the architecture\'s) has the size inside its measured range',
    extrapolated: 'the curve that answers (the card\'s own, else the architecture\'s) has the size outside its measured range: the range widens with the log-distance',
    estimated: 'the architecture has no curve for this precision: a proxy curve (another architecture measured with the same software stack, or on EcoCompute\'s engine the nf4/nf4-dq sibling) is used with extra uncertainty; or a long context\'s KV cache rescaled the architecture\'s own ΔE (the answer\'s "context" says by how much); absolute energy is also estimated for a card or batch that was not measured',
    modelled: 'optimizer fields computed from a physical model (roofline latency, byte accounting for VRAM)',
  };
  $('labels').replaceChildren(el('ul', {}, ...info.labels.map((l) => el('li', {}, el('span', { class: `badge ${l}` }, l), ' ', LABELS[l] || ''))),
    el('p', {}, 'The recommendation is "quantize" only when the whole 95% range is below zero, "stay on fp16" when it is all above zero, otherwise "depends".'));
  const curves = eco.curvesDoc.curves;
  $('curves').replaceChildren(
    el('p', {}, `curves.json: ${eco.curvesDoc.provenance.dataset}, ${eco.curvesDoc.provenance.records} records, ${eco.curvesDoc.provenance.generator}. Model: ${eco.curvesDoc.provenance.model}.`),
    table('one curve per (architecture, precision), one protocol each; where an architecture\'s data come from several cards, each card with three sizes also has its own, which answers for that card', ['curve', 'form', 'anchors', 'range', 'crossover', 'resid SD', 'LOO median |err|', 'protocol'],
      curves.map((c) => [curveName(c), c.form, `${c.n_anchors} (${c.anchors.filter((a) => a.n_trials < 2).length} single-trial)`,
        `${fmtB(c.n_min_b)}–${fmtB(c.n_max_b)}`, Number.isFinite(c.crossover_b) ? fmtB(c.crossover_b) : 'none',
        Number.isFinite(c.resid_sd_pct) ? fmtNum(c.resid_sd_pct) : '—', Number.isFinite(c.loo.median_abs_pct) ? fmtNum(c.loo.median_abs_pct) : '—', c.protocol])));
  $('tables').replaceChildren(
    table('proxy architectures (used when an architecture has no curve)', ['architecture', 'proxy', 'strength', 'why'],
      info.archs.map((a) => [a.label, a.proxy, a.proxy_weak ? 'weak' : 'close', a.proxy_reason])),
    table('ΔE floor per precision (the weight-byte bound) and bits per weight', ['precision', 'bits/weight', 'lowest ΔE'],
      info.precisions.map((p) => [p.name, fmtNum(p.bits_per_weight, 4), Number.isFinite(p.s_cap_pct) ? `−${p.s_cap_pct}%` : 'baseline'])),
    table('energy per token at batch b relative to batch 1 (measured A800 Mistral-7B pure-INT8 sweep)', ['batch', 'factor'],
      info.batch_factors.map((b) => [b.batch, fmtNum(b.factor, 4)])),
    table('GPU table (optimizer roofline inputs)', ['card', 'arch', 'VRAM GB', 'bandwidth GB/s', 'fp16 TFLOPS', 'source'],
      info.gpus.map((g) => [g.name, g.arch, g.vram_gb, g.mem_bw_gbps, g.fp16_tflops, g.source])),
    el('p', { class: 'hint' }, `Bootstrap: ${info.fit_boot} parameter sets per curve, default seed ${info.fit_default_seed}.`));
  try {
    const r = await fetch('gen/methodology.md');
    if (r.ok) $('doc').innerHTML = markdown(await r.text());
    else $('doc').replaceChildren(el('p', { class: 'status' }, 'docs/METHODOLOGY.md was not part of this build.'));
  } catch { $('doc').replaceChildren(el('p', { class: 'status' }, 'docs/METHODOLOGY.md was not part of this build.')); }
  document.body.dataset.ready = '1';
}

main();
