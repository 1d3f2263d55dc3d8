// Shared by the pages: loading eco.wasm + curves.json once, data with an API-or-static fallback, small DOM and
// formatting helpers, and page state in the URL hash (permalinks).
import { loadEco } from './eco-wasm.js';

let ecoPromise = null;

// eco.wasm with the curves the site ships (gen/curves.json, written by `eco fit`): every estimate on the
// site is computed locally by it, never fetched.
export function getEco() {
  if (!ecoPromise) {
    ecoPromise = (async () => {
      const [eco, curves] = await Promise.all([loadEco(new URL('../eco.wasm', import.meta.url).href), fetchJson('gen/curves.json')]);
      eco.loadCurves(curves);
      eco.infoCache = eco.info();
      return eco;
    })();
  }
  return ecoPromise;
}

export async function fetchJson(url, opts) {
  const r = await fetch(url, opts);
  if (!r.ok) throw new Error(`${url}: HTTP ${r.status}`);
  return r.json();
}

// The API answers when the site is served by `eco serve`; as plain static files the exported copy is used.
export async function loadMeasurements() {
  try {
    const d = await fetchJson('v1/measurements');
    if (Array.isArray(d.measurements)) return { rows: d.measurements, source: 'GET /v1/measurements (live store)' };
  } catch { /* static hosting: fall through */ }
  const d = await fetchJson('gen/measurements.json');
  return { rows: d.records || d.measurements || [], source: 'gen/measurements.json (exported with `eco export --format json`)' };
}

export function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') e.className = v;
    else if (k === 'text') e.textContent = v;
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children.flat()) if (c !== null && c !== undefined && c !== false) e.append(c instanceof Node ? c : String(c));
  return e;
}

export function fmtPct(v, digits = 1) {
  if (v === null || v === undefined || !Number.isFinite(v)) return '—';
  return `${v > 0 ? '+' : v < 0 ? '−' : ''}${Math.abs(v).toFixed(digits)}%`;
}
export function fmtNum(v, digits = 3) {
  if (v === null || v === undefined || !Number.isFinite(v)) return '—';
  return Number(v.toPrecision(digits)).toLocaleString('en-US', { maximumFractionDigits: 6 });
}
export function fmtB(v) { return Number.isFinite(v) ? `${fmtNum(v, 3)}B` : '—'; }
export function signClass(v) { return !Number.isFinite(v) ? '' : v < -1 ? 'save' : v > 1 ? 'cost' : 'flat'; }

// Every number carries where it came from: the label badge, with its meaning as a tooltip.
const LABEL_HELP = {
  measured: 'measured at this size on this architecture',
  interpolated: 'from the fitted curve, inside the measured size range',
  extrapolated: 'from the fitted curve, outside the measured size range (wider range)',
  estimated: "from a proxy curve (another architecture on the same software stack, or nf4 for nf4-dq), or this architecture's data rescaled for a long context's KV cache, or energy of another card or batch, with extra uncertainty",
  modelled: 'from a physical model (roofline, byte accounting), not measured',
};
export function badge(label) {
  return el('span', { class: `badge ${label}`, title: LABEL_HELP[label] || '' }, label);
}
export function nBadge(n) {
  return el('span', { class: 'badge outline', title: n < 2 ? 'single trial: no between-trial spread known' : 'independent trials' }, `n=${n}`);
}

// The curve an estimate was read from: a proxy's (nf4 for nf4-dq, say) where its own precision has none there.
export const curvePrecision = (est) => est.proxy?.precision || est.input.precision;

export function readHash() {
  return Object.fromEntries(new URLSearchParams(location.hash.replace(/^#/, '')));
}
export function writeHash(state) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(state)) if (v !== undefined && v !== null && v !== '') q.set(k, v);
  const h = `#${q}`;
  if (h !== location.hash) history.replaceState(null, '', h);
}

export async function copyText(text, statusEl) {
  try {
    await navigator.clipboard.writeText(text);
    if (statusEl) statusEl.textContent = 'Copied.';
  } catch {
    if (statusEl) statusEl.textContent = `Copy this: ${text}`;
  }
}

export function showError(container, err) {
  container.replaceChildren(el('p', { class: 'error-box', role: 'alert' }, String(err && err.message ? err.message : err)));
}

// Minimal Markdown for the generated docs (headings, paragraphs, lists, code, tables, emphasis, links); text is
// escaped first, so a document cannot inject markup.
export function markdown(src) {
  const esc = (s) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
  // code spans and backslash escapes (\| in a table cell, N\*) are set aside first, so emphasis and links skip them;
  // one left-to-right pass, so an escaped backtick opens no code span and a backslash inside a span stays literal
  const inline = (s) => {
    const kept = [];
    const keep = (html) => { kept.push(html); return `\u0000${kept.length - 1}\u0000`; };
    s = s.replace(/\\([\\`*_{}[\]()#+\-.!|<>])|`([^`]+)`/g, (_, c, code) =>
      keep(code === undefined ? esc(c) : `<code>${esc(code.replace(/\\\|/g, '|'))}</code>`));
    return esc(s)
      .replace(/\*\*([^*]+)\*\*/g, '<strong>$1</strong>')
      .replace(/(^|[^*])\*([^*]+)\*/g, '$1<em>$2</em>')
      .replace(/\[([^\]]+)\]\((https?:\/\/[^)\s]+|[\w./#-]+)\)/g, '<a href="$2">$1</a>')
      .replace(/\u0000(\d+)\u0000/g, (_, k) => kept[Number(k)]);
  };
  const lines = src.split('\n');
  let html = '', i = 0;
  while (i < lines.length) {
    const l = lines[i];
    if (/^```/.test(l)) {
      let j = i + 1, body = [];
      while (j < lines.length && !/^```/.test(lines[j])) body.push(lines[j++]);
      html += `<pre><code>${esc(body.join('\n'))}</code></pre>`;
      i = j + 1;
    } else if (/^#{1,6} /.test(l)) {
      const lvl = Math.min(6, l.match(/^#+/)[0].length + 1);
      html += `<h${lvl}>${inline(l.replace(/^#+ /, ''))}</h${lvl}>`;
      i++;
    } else if (/^\s*([-*]|\d+\.) /.test(l)) {
      const ordered = /^\s*\d+\. /.test(l), marker = ordered ? /^\s*\d+\. / : /^\s*[-*] /;
      html += ordered ? `<ol start="${parseInt(l, 10)}">` : '<ul>';
      while (i < lines.length && marker.test(lines[i])) {
        let item = lines[i].replace(marker, '');
        i++;
        while (i < lines.length && /^\s{2,}\S/.test(lines[i]) && !/^\s*([-*]|\d+\.) /.test(lines[i])) item += ' ' + lines[i++].trim();
        html += `<li>${inline(item)}</li>`;
      }
      html += ordered ? '</ol>' : '</ul>';
    } else if (/^\|/.test(l)) {
      const rows = [];
      while (i < lines.length && /^\|/.test(lines[i])) rows.push(lines[i++]);
      const cells = (r) => r.replace(/^\||\|$/g, '').split(/(?<!\\)\|/).map((c) => c.trim()); // \| stays in its cell
      const body = rows.filter((r) => !/^\|[\s:|-]+\|$/.test(r));
      html += '<div class="table-wrap"><table>' + body.map((r, k) => `<tr>${cells(r).map((c) => k === 0 ? `<th scope="col">${inline(c)}</th>` : `<td>${inline(c)}</td>`).join('')}</tr>`).join('') + '</table></div>';
    } else if (l.trim() === '') {
      i++;
    } else {
      const para = [];
      while (i < lines.length && lines[i].trim() !== '' && !/^(#{1,6} |```|\||\s*([-*]|\d+\.) )/.test(lines[i])) para.push(lines[i++]);
      html += `<p>${inline(para.join(' '))}</p>`;
    }
  }
  return html;
}
