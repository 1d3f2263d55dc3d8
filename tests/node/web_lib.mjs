// Shared by the web tests: a temporary store + curves.json from the reference data, a complete site built by
// scripts/build-web.sh into a temp dir (fresh eco.wasm from the current sources), and `eco serve` on a free port.
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const BIN = process.env.ECO_BIN;
export const SRC = process.env.ECO_SOURCE_DIR;
export const BUILD = process.env.ECO_BINARY_DIR;

// runs: also import data/h200's and data/h100's runs (as `make data` does), for pages that show EcoCompute's own measurements
export function makeData(prefix = 'eco-web-', { runs = false } = {}) {
  if (!BIN || !SRC || !BUILD) throw new Error('ECO_BIN, ECO_SOURCE_DIR and ECO_BINARY_DIR must be set');
  const tmp = mkdtempSync(join(tmpdir(), prefix));
  const db = join(tmp, 'eco.db');
  const curves = join(tmp, 'curves.json');
  const env = { ...process.env };
  execFileSync(BIN, ['import', '--db', db, join(SRC, 'data/reference')], { stdio: 'pipe', env });
  if (runs)
    for (const dir of ['data/h200', 'data/h100'])
      for (const f of readdirSync(join(SRC, dir)).filter((n) => n.endsWith('.energy.json')).sort())
        execFileSync(BIN, ['import', '--db', db, '--run', join(SRC, dir, f)], { stdio: 'pipe', env });
  execFileSync(BIN, ['fit', '--db', db, '--out', curves], { stdio: 'pipe', env });
  return { tmp, db, curves, env };
}

export function buildSite(data) {
  const site = join(data.tmp, 'site');
  execFileSync('bash', [join(SRC, 'scripts/build-web.sh'), '--build', BUILD, '--curves', data.curves, '--db', data.db, '--out', site],
    { stdio: 'pipe', env: data.env });
  return site;
}

export async function startServer(data, web) {
  const args = ['serve', '--curves', data.curves, '--db', data.db, '--host', '127.0.0.1', '--port', '0', '--threads', '2'];
  if (web) args.push('--web', web);
  const proc = spawn(BIN, args, { stdio: ['ignore', 'ignore', 'pipe'], env: data.env });
  let log = '';
  const port = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`eco serve did not start: ${log}`)), 20000);
    proc.stderr.on('data', (d) => {
      log += d;
      const m = /listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(log);
      if (m) { clearTimeout(timer); resolve(Number(m[1])); }
    });
    proc.on('exit', (code) => { clearTimeout(timer); reject(new Error(`eco serve exited ${code}: ${log}`)); });
  });
  return { base: `http://127.0.0.1:${port}`, port, proc, get log() { return log; } };
}

export async function stopServer(srv) {
  if (!srv || srv.proc.exitCode !== null) return;
  const done = new Promise((r) => srv.proc.once('exit', r));
  srv.proc.kill('SIGTERM');
  await done;
}

export function cleanup(data) { if (data) rmSync(data.tmp, { recursive: true, force: true }); }

// Every number within rel (relative; absolute below 1e-300 scale), every other value equal, same keys.
// Returns a list of differences as "path: a vs b" strings (empty when equal).
export function diffJson(a, b, rel = 1e-9, path = '$', out = []) {
  if (typeof a === 'number' && typeof b === 'number') {
    const scale = Math.max(Math.abs(a), Math.abs(b));
    if (Math.abs(a - b) > rel * scale) out.push(`${path}: ${a} vs ${b}`);
  } else if (Array.isArray(a) && Array.isArray(b)) {
    if (a.length !== b.length) out.push(`${path}: length ${a.length} vs ${b.length}`);
    else a.forEach((x, i) => diffJson(x, b[i], rel, `${path}[${i}]`, out));
  } else if (a && b && typeof a === 'object' && typeof b === 'object') {
    const ka = Object.keys(a).sort(), kb = Object.keys(b).sort();
    if (ka.join() !== kb.join()) out.push(`${path}: keys ${ka} vs ${kb}`);
    for (const k of ka) if (k in b) diffJson(a[k], b[k], rel, `${path}.${k}`, out);
  } else if (a !== b) {
    out.push(`${path}: ${JSON.stringify(a)} vs ${JSON.stringify(b)}`);
  }
  return out;
}
