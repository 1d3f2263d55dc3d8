// The estimator in the browser (and in node for the tests): eco.wasm is src/fit compiled for wasm32-wasi,
// so every number here comes from the same C code as `eco estimate` and GET /v1/estimate.
// curves.json is parsed here and handed to C field by field (see web/wasm/eco_wasm.c for the protocol).

// The module imports three WASI calls that wasi-libc's stdio references but the estimator never reaches;
// answering ENOSYS keeps the module honest if one ever is reached.
const ENOSYS = 52;
const wasiStub = {
  wasi_snapshot_preview1: {
    fd_write: () => ENOSYS,
    fd_seek: () => ENOSYS,
    fd_close: () => ENOSYS,
  },
};

const enc = new TextEncoder();
const dec = new TextDecoder();

export class EcoError extends Error {
  constructor(info) {
    super(info.error || 'eco.wasm error');
    this.field = info.field || '';
    this.code = info.code || '';
  }
}

export class Eco {
  constructor(instance) {
    this.x = instance.exports;
    this.strCap = this.x.eco_wasm_str_cap();
    this.f64Cap = this.x.eco_wasm_f64_cap();
    this.curvesDoc = null;
  }

  mem() { return this.x.memory.buffer; }

  // field: the request parameter it holds, named in the error as the API names it (a slot holds 200 characters)
  setStr(slot, s, field) {
    const bytes = enc.encode(s == null ? '' : String(s));
    if (bytes.length >= this.strCap) {
      throw new EcoError(field ? { error: `${field} is longer than 200 characters`, field, code: 'EINVAL' }
        : { error: `string too long (${bytes.length} bytes)`, code: 'ETOOBIG' });
    }
    const p = this.x.eco_wasm_str(slot);
    const view = new Uint8Array(this.mem(), p, this.strCap);
    view.set(bytes);
    view[bytes.length] = 0;
  }

  setF64(values) {
    if (values.length > this.f64Cap) throw new EcoError({ error: 'too many numbers', code: 'ETOOBIG' });
    const view = new Float64Array(this.mem(), this.x.eco_wasm_f64(), this.f64Cap);
    for (let i = 0; i < values.length; i++) view[i] = values[i] == null ? NaN : Number(values[i]);
  }

  getF64(n) { return Float64Array.from(new Float64Array(this.mem(), this.x.eco_wasm_f64(), n)); }

  text(len) { return dec.decode(new Uint8Array(this.mem(), this.x.eco_wasm_out(), len)); }

  // Result of an exported call: >= 0 is the output length, < 0 an error with the output holding its JSON.
  call(fn, ...args) {
    const r = this.x[fn](...args);
    if (r < 0) {
      const p = this.x.eco_wasm_out();
      const bytes = new Uint8Array(this.mem(), p, 4096);
      const end = bytes.indexOf(0);
      throw new EcoError(JSON.parse(dec.decode(bytes.subarray(0, end < 0 ? 4096 : end))));
    }
    return r;
  }

  callJson(fn, ...args) {
    const n = this.call(fn, ...args);
    return JSON.parse(this.text(n));
  }

  // doc: the parsed curves.json (format/version as written by `eco fit`).
  loadCurves(doc) {
    if (!doc || typeof doc !== 'object' || !Array.isArray(doc.curves) || !Array.isArray(doc.fp16))
      throw new EcoError({ error: 'curves.json: expected an object with curves[] and fp16[]', code: 'EFORMAT' });
    const prov = doc.provenance || {};
    this.setStr(0, prov.dataset || '');
    this.setF64([prov.records || 0]);
    this.call('eco_wasm_reset');
    const s = (v) => (typeof v === 'string' ? v : '');
    for (const c of doc.curves) {
      const p = c.params || {};
      // card: absent for the arch's pooled curve; else one card's own (after its pool)
      ['arch', 'precision', 'protocol', 'backend', 'form', 'weighting', 'form_note', 'card'].forEach((k, i) => this.setStr(i, s(c[k])));
      const loo = c.loo || {};
      this.setF64([c.anchor_compat ? 1 : 0, p.A, p.S, p.nstar, c.s_cap_pct, c.n_min_b, c.n_max_b, c.resid_sd_pct,
        c.crossover_b, c.crossover_dir, c.n_distinct_sizes, loo.median_abs_pct, loo.mae_pct, c.seed]);
      this.call('eco_wasm_curve_add');
      for (const a of c.anchors || []) {
        ['model', 'gpu', 'session', 'source', 'flags', 'design'].forEach((k, i) => this.setStr(i, s(a[k])));
        this.setF64([a.params_b, a.delta_pct, a.sd_pct, a.cv_pct, a.weight, a.n_trials, a.synthetic_weights === true ? 1 : 0]);
        this.call('eco_wasm_curve_anchor');
      }
      const boot = c.boot || [];
      const per = Math.floor(this.f64Cap / 3);
      for (let i = 0; i < boot.length; i += per) {
        const chunk = boot.slice(i, i + per);
        this.setF64(chunk.flat());
        this.call('eco_wasm_curve_boot', chunk.length);
      }
      const errs = loo.errors_pct || [];
      this.setF64(errs);
      this.call('eco_wasm_curve_loo', errs.length);
      for (const x of c.sessions || []) { this.setStr(0, x); this.call('eco_wasm_curve_item', 0); }
      for (const x of c.pooled_protocols || []) { this.setStr(0, x); this.call('eco_wasm_curve_item', 1); }
      const n = (v) => (typeof v === 'number' ? v : NaN);
      for (const x of c.excluded || []) {
        this.setStr(0, s(x.source)); this.setStr(1, s(x.reason)); this.setF64([n(x.params_b), n(x.delta_pct)]);
        this.call('eco_wasm_curve_item', 2);
      }
    }
    for (const b of doc.fp16) {
      this.setStr(0, s(b.arch));
      this.setStr(1, s(b.protocol));
      this.setStr(2, s(b.backend));
      this.setStr(3, s(b.card)); // absent: the arch's cards pooled; else that card's own baseline
      this.call('eco_wasm_fp16_add');
      for (const pt of b.points || []) {
        this.setStr(0, s(pt.gpus));
        this.setF64([pt.params_b, pt.e_mj, pt.e_min_mj, pt.e_max_mj, pt.n_rows]);
        this.call('eco_wasm_fp16_point');
      }
    }
    const n = this.x.eco_wasm_loaded();
    this.curvesDoc = doc;
    return n;
  }

  // Same parameters as GET /v1/estimate: gpu, precision, params_b, model, batch, ctx.
  estimate(q) {
    this.setStr(0, q.gpu || '', 'gpu');
    this.setStr(1, q.precision || '', 'precision');
    this.setStr(2, q.model || '', 'model');
    this.setF64([numOrNaN(q.params_b), numOrNaN(q.batch), numOrNaN(q.ctx)]);
    return this.callJson('eco_wasm_estimate');
  }

  // Same parameters as GET /v1/optimize: gpu, params_b, model, ctx, max_vram_gb, max_latency_ms, objective, batch.
  optimize(q) {
    this.setStr(0, q.gpu || '', 'gpu');
    this.setStr(1, q.model || '', 'model');
    this.setStr(2, q.objective || '', 'objective');
    this.setF64([numOrNaN(q.params_b), numOrNaN(q.ctx), numOrNaN(q.max_vram_gb), numOrNaN(q.max_latency_ms), numOrNaN(q.batch)]);
    return this.callJson('eco_wasm_optimize');
  }

  // card: '' or absent for the architecture's pooled curve, else a card's own (its recorded GPU name)
  curveIndex(arch, precision, card = '') {
    this.setStr(0, arch);
    this.setStr(1, precision);
    this.setStr(2, card || '');
    return this.x.eco_wasm_curve_index();
  }

  // Fitted curve and its 95% band at n log-spaced sizes in [x0, x1] (billions of parameters): the band is the one
  // the estimator answers with on that card (card '' or absent: the architecture's pool).
  curveSeries(arch, precision, n, x0, x1, card = '') {
    const idx = this.curveIndex(arch, precision, card);
    if (idx < 0) return null;
    this.call('eco_wasm_curve_series', idx, n, x0, x1);
    const v = this.getF64(4 * n);
    return { x: v.slice(0, n), y: v.slice(n, 2 * n), lo: v.slice(2 * n, 3 * n), hi: v.slice(3 * n, 4 * n) };
  }

  info() { return this.callJson('eco_wasm_info'); }

  // The architecture a card name maps to, as the server maps it ("NVIDIA H200" -> "hopper"), or null.
  gpuArch(name) {
    this.setStr(0, String(name ?? '').slice(0, 256));
    return this.callJson('eco_wasm_gpu_arch').arch;
  }

  // What a card of no class is ("an AMD GPU", "a Volta GPU"), as the server names it, or null.
  gpuOutside(name) {
    this.setStr(0, String(name ?? '').slice(0, 256));
    return this.callJson('eco_wasm_gpu_arch').outside;
  }

  // The most tokens a second any engine can decode this preset at this precision on this card (the C check's
  // bound), with what it rests on: { ceiling, card, model, gb_per_token }, or { ceiling: null } where none holds.
  tokensPerSecondCeiling(card, preset, precision, batch) {
    [card, preset, precision].forEach((v, i) => this.setStr(i, String(v ?? '').slice(0, 256)));
    return this.callJson('eco_wasm_tokens_per_s_ceiling', batch);
  }
}

function numOrNaN(v) {
  if (v === undefined || v === null || v === '') return NaN;
  return Number(v);
}

// source: an ArrayBuffer/Uint8Array (node), or a URL string (browser, streamed compile when served as application/wasm).
export async function loadEco(source) {
  let instance;
  if (typeof source === 'string' || source instanceof URL) {
    const resp = await fetch(source);
    if (!resp.ok) throw new Error(`${source}: HTTP ${resp.status}`);
    if (WebAssembly.instantiateStreaming && (resp.headers.get('content-type') || '').startsWith('application/wasm')) {
      ({ instance } = await WebAssembly.instantiateStreaming(resp, wasiStub));
    } else {
      ({ instance } = await WebAssembly.instantiate(await resp.arrayBuffer(), wasiStub));
    }
  } else {
    ({ instance } = await WebAssembly.instantiate(source, wasiStub));
  }
  return new Eco(instance);
}
