// What a schema-valid energy.json's figures say of each other: the same rules, pointers and wording as the C
// check (src/measure/energy_check.c, `eco validate`'s keyword "consistency"); tests/node/web_schema.test.mjs
// holds the two to the same findings on the same documents.
import { cfmt } from './cfmt.js';

const MJ_PER_TOKEN_MAX = 1e6; // 1 kJ a generated token: a unit or export error, not a decode
const DELTA_SLACK_PCT = 0.05; // a writer that rounds each figure to a few decimals
const INTERVAL_SLACK = 1e-6; // an interval contains its own point estimate, up to rounding (relative)
const MJ_PER_TOKEN_MIN = 1e-2; // 10 uJ a token: a unit error
const SAMPLES_SLACK = 0.005; // the per-window samples average to the gross figure (0.5% and 0.01 mJ)
const POWER_FACTOR = 1.5; // mean power against energy x speed
const SPREAD_SLACK = 0.01; // SD and CV against the samples' own (n - 1): 1% and 0.01 of the unit
const PARAMS_SLACK = 0.01; // a preset's parameter count against weights.params_b
const MEMORY_SLACK = 1.1; // fp16 weights (2 bytes a parameter) within the card's memory, room for a GB/GiB mix-up
const POWER_LIMIT_SLACK = 1.15; // a window's mean power over the card's power limit (the limit caps the average)
const SPEED_SLACK = 0.005; // tokens_per_s within its windows' speeds (the mean of tokens over decode_s), for rounding
const IDLE_TERM_SLACK = 0.25; // gross - net against the idle (before or after the run) x 1000 / tokens_per_s, either way
const NET_ROUNDING = 0.005; // and 0.5% of gross for rounding

const num = (v) => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);

// A precision's windows (none for a precision that is not a string), as the C check's window_of.
const windowsOf = (doc, precision) =>
  (Array.isArray(doc.windows) ? doc.windows : []).filter((w) => w && typeof precision === 'string' && w.precision === precision);

// The share of a precision's window time spent decoding (decode_s over seconds), 1 where no windows are kept.
function decodeTimeShare(doc, precision) {
  let decode = 0, total = 0;
  for (const w of windowsOf(doc, precision)) {
    const d = num(w.decode_s), t = num(w.seconds);
    if (d !== undefined && t !== undefined && d > 0 && t > 0) { decode += d; total += t; }
  }
  return total > 0 && decode < total ? decode / total : 1;
}

// A precision's windows' decode_mj_per_token_gross, those that give one.
function windowDecodeFigures(doc, precision) {
  return windowsOf(doc, precision).map((w) => num(w.decode_mj_per_token_gross)).filter((v) => v !== undefined);
}
const MATCH_MAX = 256; // the most samples matched one to one with their windows (a longer run: its average only)
const ordinal = (k) => (k === 1 ? 'st' : k === 2 ? 'nd' : k === 3 ? 'rd' : 'th');

// The range of a precision's window speeds (tokens over decode seconds), or undefined where none are kept.
function windowSpeedRange(doc, precision) {
  let lo, hi;
  for (const w of windowsOf(doc, precision)) {
    const t = num(w.tokens), d = num(w.decode_s);
    if (t === undefined || d === undefined || !(d > 0)) continue;
    const v = t / d;
    if (lo === undefined || v < lo) lo = v;
    if (hi === undefined || v > hi) hi = v;
  }
  return lo === undefined ? undefined : [lo, hi];
}

// The C tables these checks need come from eco.wasm, never retyped; each check runs where its table is given:
// presets: { lower-case name: params_b } (the model list by name, HF id and short id, as eco_preset_find matches
// them) for the weights.preset size check; archs: the architectures the curves know (eco.wasm's info);
// gpuArch: name -> architecture or null (the server's mapping) for the card's name against its arch;
// tokensCeiling: (card, preset, precision, batch) -> eco.wasm's tokensPerSecondCeiling, for the speed no engine passes.
export function energyConsistency(doc, { presets = {}, archs = null, gpuArch = null, gpuOutside = null, tokensCeiling = null } = {}) {
  const out = [];
  const add = (pointer, message) => out.push({ pointer, keyword: 'consistency', message });
  if (!doc || typeof doc !== 'object' || Array.isArray(doc)) { add('', 'not a JSON object'); return out; }
  const results = Array.isArray(doc.results) ? doc.results : [];
  // the samples are the windows' figures (one window a block), where the document keeps windows that give them
  const samplesAreWindows = (precision, samples, i) => {
    const win = windowDecodeFigures(doc, precision);
    if (win.length === 0) return true;
    const at = `/results/${i}/samples_mj_per_token`;
    if (win.length !== samples.length) {
      add(at, cfmt('%zu samples, but %zu windows of %s give a decode figure (one sample a window)', samples.length, win.length, precision));
      return false;
    }
    const byValue = (a, b) => a - b;
    const w = [...win].sort(byValue), s = [...samples].sort(byValue);
    for (let k = 0; k < s.length; k++)
      if (!(Math.abs(s[k] - w[k]) <= SAMPLES_SLACK * Math.abs(w[k]) + 0.01)) {
        add(at, cfmt("the samples are not the windows' decode_mj_per_token_gross: %g mJ against %g (the %zu%s smallest of each)",
          s[k], w[k], k + 1, ordinal(k + 1)));
        return false;
      }
    return true;
  };
  const resultIndex = (p) => results.findIndex((r) => r && r.precision === p);
  results.forEach((r, i) => {
    if (!r) return;
    const first = resultIndex(r.precision);
    if (typeof r.precision === 'string' && first !== i)
      add(`/results/${i}/precision`, cfmt('%s is measured twice (also /results/%zu): one result per precision', r.precision, first));
    for (const k of ['mj_per_token_gross', 'e2e_mj_per_token_gross']) {
      const v = num(r[k]);
      if (v !== undefined && !(v <= MJ_PER_TOKEN_MAX && v >= MJ_PER_TOKEN_MIN))
        add(`/results/${i}/${k}`, cfmt('%g mJ a token is not a decode measurement (outside %g..%g: a unit or export error)', v, MJ_PER_TOKEN_MIN, MJ_PER_TOKEN_MAX));
    }
    const gross = num(r.mj_per_token_gross), net = num(r.mj_per_token_net);
    const idle = doc.idle && typeof doc.idle === 'object' ? doc.idle : {};
    const tps = num(r.tokens_per_s), idleBefore = num(idle.before_w), idleAfter = num(idle.after_w);
    if (gross !== undefined && net !== undefined && net > gross * (1 + INTERVAL_SLACK))
      add(`/results/${i}/mj_per_token_net`, cfmt('net %g mJ is more than gross %g mJ (net is gross less the idle draw)', net, gross));
    else if (gross !== undefined && gross <= MJ_PER_TOKEN_MAX && gross >= MJ_PER_TOKEN_MIN && net !== undefined && tps !== undefined && tps > 0 &&
             idleBefore !== undefined && idleBefore >= 0) {
      const hasAfter = idleAfter !== undefined && idleAfter >= 0;
      const least = hasAfter ? Math.min(idleBefore, idleAfter) : idleBefore, most = hasAfter ? Math.max(idleBefore, idleAfter) : idleBefore;
      const want = gross - idleBefore * 1000 / tps, term = gross - net, rounding = NET_ROUNDING * gross;
      if (!(term >= least * 1000 / tps * (1 - IDLE_TERM_SLACK) - rounding && term <= most * 1000 / tps * (1 + IDLE_TERM_SLACK) + rounding))
        add(`/results/${i}/mj_per_token_net`, cfmt('net %g mJ, but gross %g mJ less the idle %g W over a token at %g tokens/s is %g mJ', net, gross, idleBefore, tps, want));
    }
    const samples = Array.isArray(r.samples_mj_per_token) ? r.samples_mj_per_token : [];
    if (!samples.length && gross !== undefined && gross <= MJ_PER_TOKEN_MAX && gross >= MJ_PER_TOKEN_MIN && num(r.n) !== undefined && r.n > 1)
      // trials weigh the fit: a count no sample backs cannot be checked
      add(`/results/${i}/samples_mj_per_token`, cfmt('n %g without its samples: give samples_mj_per_token, one a trial', r.n));
    else if (samples.length && samples.every((x) => num(x) !== undefined)) {
      const mean = samples.reduce((a, b) => a + b, 0) / samples.length;
      if (num(r.n) !== undefined && samples.length !== r.n) add(`/results/${i}/n`, cfmt('n %g with %zu samples', r.n, samples.length));
      else if (gross !== undefined && !(Math.abs(mean - gross) <= SAMPLES_SLACK * gross + 0.01))
        add(`/results/${i}/samples_mj_per_token`, cfmt('the samples average %g mJ, the result says %g', mean, gross));
      else if (samples.length <= MATCH_MAX && !samplesAreWindows(r.precision, samples, i)) {
        // said by samplesAreWindows
      } else if (samples.length >= 2) {
        const sd = Math.sqrt(samples.reduce((a, x) => a + (x - mean) ** 2, 0) / (samples.length - 1));
        const cv = mean > 0 ? (100 * sd) / mean : undefined;
        if (num(r.sd_mj) !== undefined && !(Math.abs(r.sd_mj - sd) <= SPREAD_SLACK * sd + 0.01))
          add(`/results/${i}/sd_mj`, cfmt("SD %g mJ, the samples' SD is %g", r.sd_mj, sd));
        if (cv !== undefined && num(r.cv_pct) !== undefined && !(Math.abs(r.cv_pct - cv) <= SPREAD_SLACK * cv + 0.01))
          add(`/results/${i}/cv_pct`, cfmt("CV %g%%, the samples' CV is %g%%", r.cv_pct, cv));
      }
    }
    const e2e = num(r.e2e_mj_per_token_gross);
    if (gross !== undefined && gross <= MJ_PER_TOKEN_MAX && gross >= MJ_PER_TOKEN_MIN && e2e !== undefined && e2e < gross * (1 - INTERVAL_SLACK))
      add(`/results/${i}/e2e_mj_per_token_gross`, cfmt('end to end %g mJ is less than decode %g mJ (end to end adds the prefill)', e2e, gross));
    const blocksDone = num(doc.protocol && doc.protocol.blocks);
    if (num(r.n) !== undefined && blocksDone !== undefined && r.n > blocksDone)
      add(`/results/${i}/n`, cfmt('n %g from %g blocks (one sample a block)', r.n, blocksDone));
    const power = num(r.mean_power_w);
    if (gross !== undefined && power !== undefined && tps !== undefined && tps > 0) {
      // the window's power lies between the decode's alone (diluted by the prefill's time) and all of the window's
      // energy (prefill included where given) over the decode time
      const lo = (gross * 1e-3 * tps * decodeTimeShare(doc, r.precision)) / POWER_FACTOR;
      const hi = (e2e !== undefined && e2e > gross ? e2e : gross) * 1e-3 * tps * POWER_FACTOR;
      if (!(power <= hi && power >= lo))
        add(`/results/${i}/mean_power_w`, cfmt('%g W against %g mJ a token at %g tokens/s (%g..%g W)', power, gross, tps, lo, hi));
    }
    // 0 (a partial run's: no window paired with an fp16 one) is the schema's to refuse, not a second finding here
    const speeds = tps !== undefined && tps > 0 ? windowSpeedRange(doc, r.precision) : undefined;
    if (speeds && !(tps >= speeds[0] * (1 - SPEED_SLACK) && tps <= speeds[1] * (1 + SPEED_SLACK)))
      add(`/results/${i}/tokens_per_s`, cfmt('%g tokens/s, but its windows decoded %g..%g tokens/s (tokens over decode_s)', tps, speeds[0], speeds[1]));
    const ci = r.ci95_mj;
    if (Array.isArray(ci) && ci.length === 2 && num(ci[0]) !== undefined && num(ci[1]) !== undefined) {
      const mean = num(r.mj_per_token_gross);
      if (ci[0] > ci[1]) add(`/results/${i}/ci95_mj`, cfmt('the interval [%g, %g] runs backwards', ci[0], ci[1]));
      else if (mean !== undefined && !(mean >= ci[0] - INTERVAL_SLACK * Math.abs(ci[0]) && mean <= ci[1] + INTERVAL_SLACK * Math.abs(ci[1])))
        add(`/results/${i}/ci95_mj`, cfmt('the interval [%g, %g] does not contain the mean %g mJ', ci[0], ci[1], mean));
    }
  });
  const blocks = num(doc.protocol && doc.protocol.blocks);
  const comps = Array.isArray(doc.comparisons) ? doc.comparisons : [];
  comps.forEach((c, i) => {
    if (!c) return;
    const p = c.precision;
    const j = comps.findIndex((x) => x && typeof p === 'string' && x.precision === p);
    if (typeof p === 'string' && j < i) add(`/comparisons/${i}/precision`, cfmt('%s is compared twice (also /comparisons/%zu)', p, j));
    const rq = typeof p === 'string' ? results[resultIndex(p)] : undefined;
    const rb = typeof c.baseline === 'string' ? results[resultIndex(c.baseline)] : undefined;
    if (typeof p === 'string' && !rq) add(`/comparisons/${i}/precision`, cfmt('no result for %s: a comparison needs both results', p));
    if (typeof c.baseline === 'string' && !rb) add(`/comparisons/${i}/baseline`, cfmt('no result for the baseline %s', c.baseline));
    const d = num(c.delta_pct);
    if (d !== undefined && rq && rb && typeof c.metric === 'string') {
      const eq = num(rq[c.metric]), eb = num(rb[c.metric]);
      if (eq !== undefined && eb !== undefined && eb !== 0) {
        const want = ((eq - eb) / eb) * 100; // docs/SCHEMA.md: (E - E_fp16) / E_fp16 x 100
        if (!(Math.abs(d - want) <= DELTA_SLACK_PCT + 1e-6 * Math.abs(want)))
          add(`/comparisons/${i}/delta_pct`, cfmt("%+.6g%% does not follow from the results' %s (%g against %g mJ: %+.6g%%)", d, c.metric, eq, eb, want));
      }
    }
    const ci = c.ci95_pct;
    const hasCi = Array.isArray(ci) && ci.length === 2 && num(ci[0]) !== undefined && num(ci[1]) !== undefined;
    if (hasCi && ci[0] > ci[1]) add(`/comparisons/${i}/ci95_pct`, cfmt('the interval [%g, %g] runs backwards', ci[0], ci[1]));
    else if (hasCi && d !== undefined && !(d >= ci[0] - DELTA_SLACK_PCT && d <= ci[1] + DELTA_SLACK_PCT))
      add(`/comparisons/${i}/ci95_pct`, cfmt('the interval [%+.6g, %+.6g]%% does not contain delta_pct %+.6g%%', ci[0], ci[1], d));
    const pairs = num(c.n_pairs);
    if (pairs !== undefined) {
      const nq = num(rq && rq.n), nb = num(rb && rb.n);
      if (blocks !== undefined && pairs > blocks) add(`/comparisons/${i}/n_pairs`, cfmt('%g pairs from %g blocks: a block gives one pair', pairs, blocks));
      else if (nq !== undefined && nb !== undefined && pairs > Math.min(nq, nb)) add(`/comparisons/${i}/n_pairs`, cfmt('%g pairs from %g and %g windows', pairs, nq, nb));
    }
    // the verdict is the interval's sign; without an interval over two or more pairs, only "inconclusive"
    if (typeof c.verdict === 'string' && c.verdict !== 'unavailable') {
      const two = pairs === undefined || pairs >= 2;
      const want = !(hasCi && ci[0] <= ci[1] && two) ? 'inconclusive' : ci[1] < 0 ? 'saves' : ci[0] > 0 ? 'costs' : 'inconclusive';
      if (c.verdict !== want && (!hasCi || ci[0] <= ci[1]))
        add(`/comparisons/${i}/verdict`, hasCi && two
          ? cfmt('"%s" with a 95%% interval of [%+.2f, %+.2f]%%: that is "%s"', c.verdict, ci[0], ci[1], want)
          : cfmt('"%s" without a 95%% interval over two or more pairs: that is "inconclusive"', c.verdict));
    }
  });
  // the card: its architecture known and the name's own (where gpuArch is given), its power limit caps the
  // windows' mean, and the idle draw is below a loaded one
  const g = doc.environment && doc.environment.gpu;
  if (g && typeof g === 'object' && !Array.isArray(g)) {
    const arch = typeof g.arch === 'string' ? g.arch : undefined, name = typeof g.name === 'string' ? g.name : undefined;
    const named = gpuArch && name !== undefined ? gpuArch(name) : undefined; // null: a name the curves do not know
    const outside = gpuOutside && name !== undefined && !named ? gpuOutside(name) : null; // another vendor's, or pre-Turing
    if (outside) add('/environment/gpu/name', `'${name}' is ${outside}: no class the curves have (${(archs || []).join(', ')}) holds it`);
    else if (arch !== undefined && archs && !archs.includes(arch))
      add('/environment/gpu/arch', `unknown architecture '${arch}' (${archs.join(', ')})`);
    else if (arch !== undefined && named && named !== arch) add('/environment/gpu/arch', `'${name}' is a ${named} card, not ${arch}`);
    else if (arch === undefined && named === null)
      add('/environment/gpu/arch', `no architecture, and '${name}' is not a card the curves know: give one of ${(archs || []).join(', ')}`);
    const limit = num(g.power_limit_w), idle = num(doc.idle && doc.idle.before_w);
    let idleSaid = false;
    results.forEach((r, i) => {
      const power = num(r && r.mean_power_w);
      if (power === undefined) return;
      if (limit !== undefined && limit > 0 && power > limit * POWER_LIMIT_SLACK)
        add(`/results/${i}/mean_power_w`, cfmt("%g W is over the card's %g W power limit", power, limit));
      if (idle !== undefined && !idleSaid && idle > power * POWER_FACTOR) {
        add('/idle/before_w', cfmt("idle %g W is over %g times the %s run's mean %g W", idle, POWER_FACTOR, typeof r.precision === 'string' ? r.precision : '?', power));
        idleSaid = true;
      }
    });
  }
  // the run as a whole: blocks done against asked for, a preset's size against the size recorded
  const proto = doc.protocol || {}, w = doc.weights || {};
  if (num(proto.blocks) !== undefined && num(proto.iterations) !== undefined && proto.blocks > proto.iterations)
    add('/protocol/blocks', cfmt('%g blocks done of the %g asked for', proto.blocks, proto.iterations));
  // the preset named, else the model's own id where it is a preset's (an HF checkpoint run names no preset)
  const presetName = typeof w.preset === 'string' ? w.preset
    : typeof w.model === 'string' && presets[w.model.toLowerCase()] !== undefined ? w.model : undefined;
  const want = presetName !== undefined ? presets[presetName.toLowerCase()] : undefined;
  if (want !== undefined && num(w.params_b) !== undefined && !(Math.abs(w.params_b - want) <= PARAMS_SLACK * want))
    add('/weights/params_b', cfmt('%g billion, but preset %s has %.6g billion', w.params_b, presetName, want));
  // fp16 weights were measured on this card: they fit its memory (a size in millions had passed for billions)
  const mem = num(g && g.memory_total_gb), params = num(w.params_b);
  if (params !== undefined && mem !== undefined && mem > 0 && resultIndex('fp16') >= 0 && params * 2 > mem * MEMORY_SLACK)
    add('/weights/params_b', cfmt('%g billion parameters in fp16 are %.4g GB, and the card has %g GB: the fp16 result could not have run on it ' +
      '(a size in millions?)', params, params * 2, mem));
  // a meter called "measured" passed its self-test: its checks did not fail, and it dropped no more than it took
  const meter = doc.meter || {}, st = meter.self_test || {};
  if (meter.basis === 'measured') {
    for (const k of ['idle_check_passed', 'cadence_check_passed'])
      if (st[k] === false) add(`/meter/self_test/${k}`, `the self-test's ${k} failed, and the meter's basis says "measured" (a failed self-test is "failed")`);
    if (num(meter.sampler_samples) !== undefined && num(meter.dropped_samples) !== undefined && meter.dropped_samples > meter.sampler_samples)
      add('/meter/dropped_samples', cfmt('%g samples dropped of %g taken', meter.dropped_samples, meter.sampler_samples));
  }
  // no engine decodes faster than the card streams the weights (a speed in tokens a minute, or summed over a batch
  // the protocol does not record)
  const card = g && g.name;
  const batch = num(proto.batch) ?? 1;
  if (tokensCeiling && typeof card === 'string' && presetName !== undefined)
    results.forEach((r, i) => {
      const tps = num(r && r.tokens_per_s);
      if (tps === undefined || typeof r.precision !== 'string') return;
      const b = tokensCeiling(card, presetName, r.precision, batch >= 1 && batch <= 1e6 ? Math.trunc(batch) : 0);
      if (b && b.ceiling !== null && tps > b.ceiling)
        add(`/results/${i}/tokens_per_s`, cfmt('%g tokens/s is over what the %s can stream: %s in %s reads %.3g GB a token, at most %.0f tokens/s at batch %g',
          tps, b.card, b.model, r.precision, b.gb_per_token, b.ceiling, batch));
    });
  // each window's decode figure is its energy less the prefill's, a token
  (Array.isArray(doc.windows) ? doc.windows : []).forEach((w, i) => {
    if (!w) return;
    const energy = num(w.energy_j), tokens = num(w.tokens), decode = num(w.decode_mj_per_token_gross);
    if (energy === undefined || tokens === undefined || !(tokens > 0) || decode === undefined) return;
    const want = ((energy - (num(w.prefill_energy_j) ?? 0)) * 1000) / tokens;
    if (!(Math.abs(decode - want) <= SAMPLES_SLACK * Math.abs(want) + 0.01))
      add(`/windows/${i}/decode_mj_per_token_gross`,
        cfmt("%g mJ a token, but the window's energy gives %g ((energy_j - prefill_energy_j) x 1000 / tokens)", decode, want));
  });
  return out;
}
