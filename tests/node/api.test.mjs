// The REST API over real sockets: routes, status codes, headers (CORS, content types, caching), preflight,
// limits (413 / 414), bad input, keep-alive, static files and traversal attempts, metrics, shutdown.
// Starts its own `eco serve` on a free port with a curves.json made by `eco import` + `eco fit`.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, writeFileSync, readFileSync, symlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import net from 'node:net';
import http from 'node:http';

const BIN = process.env.ECO_BIN;
const SRC = process.env.ECO_SOURCE_DIR;
let server; // { base, port, proc, tmp, log }

async function startServer() {
  const tmp = mkdtempSync(join(tmpdir(), 'eco-api-'));
  const db = join(tmp, 'eco.db');
  const curves = join(tmp, 'curves.json');
  execFileSync(BIN, ['import', '--db', db, join(SRC, 'data/reference')], { stdio: 'pipe' });
  execFileSync(BIN, ['fit', '--db', db, '--out', curves], { stdio: 'pipe' });
  const web = join(tmp, 'web');
  mkdirSync(join(web, 'sub'), { recursive: true });
  writeFileSync(join(web, 'index.html'), '<!doctype html><title>eco</title>');
  writeFileSync(join(web, 'app.js'), 'export const x = 1;\n');
  writeFileSync(join(web, 'eco.wasm'), Buffer.from([0, 0x61, 0x73, 0x6d, 1, 0, 0, 0]));
  writeFileSync(join(web, 'sub', 'index.html'), '<p>sub</p>');
  writeFileSync(join(web, '.env'), 'TOKEN=do-not-serve');
  writeFileSync(join(tmp, 'secret.txt'), 'TOP-SECRET-OUTSIDE-ROOT');
  symlinkSync(join(tmp, 'secret.txt'), join(web, 'escape.txt'));
  const proc = spawn(BIN, ['serve', '--curves', curves, '--db', db, '--web', web, '--host', '127.0.0.1',
    '--port', '0', '--threads', '2'], { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  const port = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`eco serve did not start: ${log}`)), 20000);
    proc.stderr.on('data', (d) => {
      log += d;
      const m = /listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(log);
      if (m) { clearTimeout(timer); resolve(Number(m[1])); }
    });
    proc.on('exit', (code) => reject(new Error(`eco serve exited ${code}: ${log}`)));
  });
  proc.stderr.on('data', (d) => { log += d; });
  return { base: `http://127.0.0.1:${port}`, port, proc, tmp, get log() { return log; } };
}

// One raw HTTP/1.1 exchange sequence on a single TCP connection: sends each request after the previous
// response is complete, parses status/headers/body by Content-Length. Resolves with the responses and
// whether the socket stayed the same (it always is: one socket) and was not closed early.
function rawExchange(port, requests, { timeoutMs = 5000 } = {}) {
  return new Promise((resolve, reject) => {
    const sock = net.connect(port, '127.0.0.1');
    const responses = [];
    let buf = Buffer.alloc(0);
    let closed = false;
    const timer = setTimeout(() => { sock.destroy(); resolve({ responses, closed: true, timedOut: true }); }, timeoutMs);
    const sendNext = () => {
      if (responses.length === requests.length) { clearTimeout(timer); sock.end(); resolve({ responses, closed }); return; }
      sock.write(requests[responses.length]);
    };
    const tryParse = () => {
      for (;;) {
        const headEnd = buf.indexOf('\r\n\r\n');
        if (headEnd < 0) return;
        const head = buf.subarray(0, headEnd).toString('latin1').split('\r\n');
        const status = Number(head[0].split(' ')[1]);
        const headers = {};
        for (const line of head.slice(1)) {
          const i = line.indexOf(':');
          headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
        }
        const isHead = /^HEAD /.test(requests[responses.length]);
        const len = isHead || status === 204 || status === 304 ? 0 : Number(headers['content-length'] ?? 0);
        if (buf.length < headEnd + 4 + len) return;
        const body = buf.subarray(headEnd + 4, headEnd + 4 + len).toString('utf8');
        buf = buf.subarray(headEnd + 4 + len);
        responses.push({ status, headers, body });
        sendNext();
      }
    };
    sock.on('connect', sendNext);
    sock.on('data', (d) => { buf = Buffer.concat([buf, d]); tryParse(); });
    sock.on('close', () => { closed = true; clearTimeout(timer); resolve({ responses, closed }); });
    sock.on('error', reject);
  });
}

const get = (path) => `GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`;
const post = (path, body) =>
  `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;

function assertCommonHeaders(res) {
  assert.equal(res.headers.get('access-control-allow-origin'), '*');
  assert.equal(res.headers.get('x-content-type-options'), 'nosniff');
}

async function assertProblem(res, status, field) {
  assert.equal(res.status, status);
  assertCommonHeaders(res);
  assert.equal(res.headers.get('content-type'), 'application/problem+json');
  assert.equal(res.headers.get('cache-control'), 'no-store');
  const p = await res.json();
  assert.equal(p.status, status);
  assert.equal(typeof p.type, 'string');
  assert.equal(typeof p.title, 'string');
  assert.ok(p.detail.length > 0, 'detail is not empty');
  if (field !== undefined) assert.equal(p.field, field, `field of ${JSON.stringify(p)}`);
  return p;
}

before(async () => { server = await startServer(); });
after(async () => {
  if (server?.proc.exitCode === null) {
    server.proc.kill('SIGTERM');
    await new Promise((r) => server.proc.once('exit', r));
  }
  if (server) rmSync(server.tmp, { recursive: true, force: true });
});

test('GET /healthz answers ok, with CORS and no caching', async () => {
  const res = await fetch(`${server.base}/healthz`);
  assert.equal(res.status, 200);
  assertCommonHeaders(res);
  assert.equal(res.headers.get('content-type'), 'application/json');
  assert.equal(res.headers.get('cache-control'), 'no-store');
  assert.deepEqual(await res.json(), { status: 'ok' });
});

test('GET /v1/estimate from the query string is cacheable JSON', async () => {
  const res = await fetch(`${server.base}/v1/estimate?gpu=A100&params_b=7&precision=nf4`);
  assert.equal(res.status, 200, await res.clone().text());
  assertCommonHeaders(res);
  assert.equal(res.headers.get('content-type'), 'application/json');
  assert.equal(res.headers.get('cache-control'), 'public, max-age=300');
  const body = await res.json();
  assert.equal(typeof body.delta_pct, 'number');
  assert.equal(body.input.params_b, 7);
  // the same request again gives the same bytes (deterministic, so caching is correct)
  const again = await (await fetch(`${server.base}/v1/estimate?gpu=A100&params_b=7&precision=nf4`)).json();
  assert.deepEqual(again, body);
});

test('an extrapolated ΔE held at the curve floor says so', async () => {
  const body = await (await fetch(`${server.base}/v1/estimate?gpu=RTX%204090&params_b=70&precision=nf4`)).json();
  assert.equal(body.label, 'extrapolated');
  assert.equal(body.delta_pct, -75);
  assert.ok(body.notes.some((n) => n.startsWith("ΔE at short context is held at the curve's floor of -75%")), body.notes.join('\n'));
  const inside = await (await fetch(`${server.base}/v1/estimate?gpu=RTX%204090&params_b=5&precision=nf4`)).json();
  assert.ok(inside.delta_pct > -75 && !inside.notes.some((n) => n.includes("curve's floor")));
});

test('POST /v1/estimate with a JSON body gives the same answer, not cacheable', async () => {
  const viaGet = await (await fetch(`${server.base}/v1/estimate?gpu=A100&params_b=7&precision=nf4`)).json();
  const res = await fetch(`${server.base}/v1/estimate`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ gpu: 'A100', params_b: 7, precision: 'nf4' }),
  });
  assert.equal(res.status, 200);
  assertCommonHeaders(res);
  assert.equal(res.headers.get('cache-control'), 'no-store');
  assert.deepEqual(await res.json(), viaGet);
});

test('GET and POST /v1/optimize answer 200', async () => {
  const g = await fetch(`${server.base}/v1/optimize?gpu=RTX%204090&params_b=7&max_vram_gb=24`);
  assert.equal(g.status, 200, await g.clone().text());
  assert.equal(g.headers.get('cache-control'), 'public, max-age=300');
  const p = await fetch(`${server.base}/v1/optimize`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ gpu: 'RTX 4090', params_b: 7, max_vram_gb: 24 }) });
  assert.equal(p.status, 200);
  assert.deepEqual(await p.json(), await g.json());
});

test('/v1/optimize with a pinned batch compares precisions at that batch only', async () => {
  const r = await (await fetch(`${server.base}/v1/optimize?gpu=A800&params_b=7&batch=3`)).json();
  assert.equal(r.input.batch, 3);
  for (const c of [r.recommended, ...r.alternatives, ...r.pareto_front]) assert.equal(c.batch, 3);
  assert.ok(r.candidates_count >= 2 && r.candidates_count <= 6, `one candidate per precision, got ${r.candidates_count}`);
  // the A800 int8 ~7B sweep measured batch 1, 2, 4, ... 64: batch 3 lies between its points
  const int8 = [r.recommended, ...r.alternatives].find((c) => c.precision === 'int8');
  if (int8) assert.equal(int8.basis.batch, 'interpolated');
  const swept = await (await fetch(`${server.base}/v1/optimize?gpu=A800&params_b=7`)).json();
  assert.equal(swept.input.batch, null);
  for (const bad of ['0', '2.5', '4096', 'x']) {
    const res = await fetch(`${server.base}/v1/optimize?gpu=A800&params_b=7&batch=${bad}`);
    assert.equal(res.status, 400, `batch=${bad}`);
    assert.equal((await res.json()).field, 'batch');
  }
});

test('catalogue routes answer 200 JSON', async () => {
  for (const path of ['/v1/architectures', '/v1/gpus', '/v1/models', '/v1/measurements', '/v1/measurements?arch=ampere']) {
    const res = await fetch(server.base + path);
    assert.equal(res.status, 200, `${path}: ${await res.clone().text()}`);
    assertCommonHeaders(res);
    assert.equal(res.headers.get('content-type'), 'application/json');
    assert.match(res.headers.get('cache-control'), /^public, max-age=\d+$/);
    const body = await res.json();
    assert.equal(typeof body, 'object');
  }
  const all = await (await fetch(`${server.base}/v1/measurements`)).json();
  const ampere = await (await fetch(`${server.base}/v1/measurements?arch=ampere`)).json();
  assert.ok(ampere.count > 0 && ampere.count < all.count, `filter narrows: ${ampere.count} of ${all.count}`);
  // rows carry their flags and software stack, and the answer the reference's attribution
  assert.match(all.attribution, /CC BY 4\.0/);
  assert.ok(all.measurements.every((r) => typeof r.flags === 'string' && typeof r.backend === 'string'));
  assert.ok(all.measurements.some((r) => r.flags.includes('fp16-back-derived')), 'a flagged reference row');
  // gpu and model as the estimator takes them: any name of a card, any case of a model
  const get = async (q) => (await fetch(`${server.base}/v1/measurements?${q}`)).json();
  const raw = await get('gpu=RTX%204090'), alias = await get('gpu=geforce%20rtx%204090');
  assert.ok(raw.count > 0 && alias.count >= raw.count, `${alias.count} vs ${raw.count}`);
  assert.ok(alias.measurements.every((r) => r.gpu.includes('4090')));
  assert.equal(alias.count, alias.measurements.length);
  const exact = await get('model=Qwen2-7B'), lower = await get('model=qwen2-7b');
  assert.ok(exact.count > 0 && lower.count === exact.count, `${lower.count} vs ${exact.count}`);
  // a model by any spelling of its preset: the rows stored as TinyLlama-1.1B-Chat-v1.0 are the preset's
  const stored = await get('model=TinyLlama-1.1B-Chat-v1.0'), byPreset = await get('model=TinyLlama-1.1B');
  const byHf = await get('model=TinyLlama%2FTinyLlama-1.1B-Chat-v1.0');
  assert.ok(stored.count > 0 && byPreset.count === stored.count && byHf.count === stored.count,
    `${stored.count} / ${byPreset.count} / ${byHf.count}`);
  await assertProblem(await fetch(`${server.base}/v1/measurements?gpu=no-such-card`), 400, 'gpu'); /* as /v1/estimate */
  assert.equal((await get('arch=HOPPER')).count, (await get('arch=hopper')).count);
});

test('bad input is a 400 problem naming the field', async () => {
  await assertProblem(await fetch(`${server.base}/v1/estimate?gpu=A100&params_b=seven`), 400, 'params_b');
  await assertProblem(await fetch(`${server.base}/v1/estimate?gpu=A100&params_b=0x10`), 400, 'params_b'); /* decimal only */
  await assertProblem(await fetch(`${server.base}/v1/estimate?gpu=A100&params_b=infinity`), 400, 'params_b');
  await assertProblem(await fetch(`${server.base}/v1/estimate?gpu=A100&params_b=7&colour=red`), 400, 'colour');
  await assertProblem(await fetch(`${server.base}/v1/estimate?gpu=A100&params_b=7&params_b=8`), 400, 'params_b');
  await assertProblem(await fetch(`${server.base}/v1/estimate?gpu=A100&params_b=%zz`), 400, 'params_b');
  await assertProblem(await fetch(`${server.base}/v1/estimate?params_b=7`), 400, 'gpu');
  await assertProblem(await fetch(`${server.base}/v1/gpus?verbose=1`), 400, 'verbose');
  const post = (body, ct = 'application/json') => fetch(`${server.base}/v1/estimate`, { method: 'POST', headers: { 'content-type': ct }, body });
  await assertProblem(await post('{"gpu":"A100",'), 400, 'body');
  await assertProblem(await post('[1,2]'), 400, 'body');
  await assertProblem(await post('"A100"'), 400, 'body');
  await assertProblem(await post('{"gpu":"A100","gpu":"T4"}'), 400, 'body');
  await assertProblem(await post('{"a":' + '['.repeat(100) + ']'.repeat(100) + '}'), 400, 'body');
  await assertProblem(await post(JSON.stringify({ gpu: 'A100', params_b: '7' })), 400, 'params_b');
  await assertProblem(await post(JSON.stringify({ gpu: 7, params_b: 7 })), 400, 'gpu');
  await assertProblem(await post(JSON.stringify({ gpu: 'A100', params_b: 7, batch: 1.5 })), 400, 'batch');
  await assertProblem(await post(JSON.stringify({ gpu: 'A100', params_b: 7, extra: true })), 400, 'extra');
  const q = await fetch(`${server.base}/v1/estimate?gpu=A100`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
  await assertProblem(q, 400, 'gpu');
  // a body is JSON: another media type is a 415 naming it (no Content-Type at all is read as JSON)
  const form = await assertProblem(await post("gpu=A100&params_b=7", "application/x-www-form-urlencoded"), 415, "body");
  assert.equal(form.detail, "request body must be JSON: Content-Type is 'application/x-www-form-urlencoded', send application/json");
  await assertProblem(await post(JSON.stringify({ gpu: 'A100', params_b: 7 }), 'text/plain;charset=UTF-8'), 415, 'body');
  await assertProblem(await post(JSON.stringify({ gpu: 'A100', params_b: 7 }), 'application/jsonx'), 415, 'body');
  for (const ct of ['application/json; charset=utf-8', 'Application/JSON', 'application/merge-patch+json'])
    assert.equal((await post(JSON.stringify({ gpu: 'A100', params_b: 7 }), ct)).status, 200, ct);
  assert.equal(form.title, 'Unsupported Media Type');
  await assertProblem(await post('{}', '/+json'), 415, 'body'); // a +json type needs a type and a name
  const bare = await rawExchange(server.port, [`POST /v1/estimate HTTP/1.1\r\nHost: x\r\nContent-Length: 27\r\n\r\n{"gpu":"A100","params_b":7}`,
    `POST /v1/estimate HTTP/1.1\r\nHost: x\r\nContent-Type: \r\nContent-Length: 27\r\n\r\n{"gpu":"A100","params_b":7}`,
    `POST /v1/estimate HTTP/1.1\r\nHost: x\r\nContent-Type: text/\u00e9\r\nContent-Length: 2\r\n\r\n{}`]);
  assert.deepEqual(bare.responses.map((r) => r.status), [200, 200, 415]); // no type and an empty one are read as JSON
  assert.match(JSON.parse(bare.responses[2].body).detail, /Content-Type is 'text\/\?\?'/); // bytes past ASCII shown as '?'
  assert.match(await (await fetch(`${server.base}/metrics`)).text(), /^eco_http_requests_total\{route="\/v1\/estimate",status="415"\} [1-9]/m);
  // bounds are printed as written (not 1.04858e+06); lengths are counted in characters, as maxLength does
  let p = await assertProblem(await fetch(`${server.base}/v1/estimate?gpu=A100&params_b=7&ctx=0`), 400, 'ctx');
  assert.match(p.detail, /between 1 and 1048576, got 0/);
  p = await assertProblem(await fetch(`${server.base}/v1/estimate?gpu=${encodeURIComponent('ü'.repeat(150))}&params_b=7`), 400, 'gpu');
  assert.doesNotMatch(p.detail, /longer than/);
  p = await assertProblem(await fetch(`${server.base}/v1/estimate?gpu=${encodeURIComponent('ü'.repeat(201))}&params_b=7`), 400, 'gpu');
  assert.match(p.detail, /longer than 200 characters/);
  // an estimate's precision names the quantized formats it can be (fp16, the baseline, gets its own reason)
  p = await assertProblem(await fetch(`${server.base}/v1/estimate?gpu=A100&params_b=7&precision=nf5`), 400, 'precision');
  assert.equal(p.detail, "unknown precision 'nf5' (a quantized format: int8, int8-mixed, nf4, nf4-dq or fp8)");
  p = await assertProblem(await fetch(`${server.base}/v1/estimate?gpu=A100&params_b=7&precision=fp16`), 400, 'precision');
  assert.match(p.detail, /fp16 is the baseline/);
});

test('a card name of 200 multi-byte characters keeps its note (cut at a character, not inside one)', async () => {
  const res = await fetch(`${server.base}/v1/optimize?gpu=${encodeURIComponent('hopper-' + 'ü'.repeat(150))}&params_b=7`);
  assert.equal(res.status, 200);
  const o = await res.json();
  assert.ok(o.notes[0].includes('is not in the hardware table'), o.notes.join(' | ')); // first: all below rests on it
});

test('a valid request without data behind it is a 422 problem', async () => {
  const p = await assertProblem(await fetch(`${server.base}/v1/estimate?gpu=T4&params_b=7&precision=int8`), 422, 'precision');
  assert.match(p.detail, /int8/);
});

test('unknown route is 404, wrong method is 405 with Allow', async () => {
  const p = await assertProblem(await fetch(`${server.base}/v1/nope`), 404);
  assert.match(p.detail, /\/v1\/nope/);
  await assertProblem(await fetch(`${server.base}/v2/estimate`), 404);
  let res = await fetch(`${server.base}/v1/estimate`, { method: 'DELETE' });
  await assertProblem(res, 405);
  assert.equal(res.headers.get('allow'), 'GET, HEAD, POST, OPTIONS');
  res = await fetch(`${server.base}/v1/gpus`, { method: 'POST', body: '{}' });
  await assertProblem(res, 405);
  assert.equal(res.headers.get('allow'), 'GET, HEAD, OPTIONS');
  res = await fetch(`${server.base}/healthz`, { method: 'PUT', body: 'x' });
  await assertProblem(res, 405);
});

test('trailing slash and encoded letters route like the plain path', async () => {
  assert.equal((await fetch(`${server.base}/healthz/`)).status, 200);
  assert.equal((await fetch(`${server.base}/v1/%67pus`)).status, 200);
});

test('a preflight on a path that does not normalize is 204 too; a query of empty segments names no parameter', async () => {
  const { responses } = await rawExchange(server.port, ['/v1/../x', '/a//b', '/./v1/gpus'].map(
    (p) => `OPTIONS ${p} HTTP/1.1\r\nHost: x\r\nOrigin: https://example.org\r\nAccess-Control-Request-Method: GET\r\n\r\n`));
  assert.deepEqual(responses.map((r) => r.status), [204, 204, 204]);
  for (const r of responses) assert.equal(r.headers['access-control-allow-origin'], '*');
  for (const p of ['/v1/gpus?&', '/v1/models?', '/v1/architectures?&&', '/v1/replications?&']) {
    const res = await fetch(server.base + p);
    assert.equal(res.status, 200, p);
  }
  let p = await assertProblem(await fetch(`${server.base}/v1/gpus?&x=1`), 400, 'x');
  assert.match(p.detail, /takes no parameters/);
  await assertProblem(await fetch(`${server.base}/v1/gpus?%zz`), 400);
  // a POST takes its parameters in the body: an empty query passes, a named one is refused
  const post = (q) => fetch(`${server.base}/v1/estimate${q}`, { method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'Qwen2.5-7B', gpu: 'RTX 4090', precision: 'nf4' }) });
  assert.equal((await post('?&')).status, 200);
  p = await assertProblem(await post('?gpu=A100'), 400, 'gpu');
  assert.match(p.detail, /JSON body/);
});

test('HEAD gives the headers of GET without a body', async () => {
  const res = await fetch(`${server.base}/v1/gpus`, { method: 'HEAD' });
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('content-type'), 'application/json');
  assert.equal((await res.text()).length, 0);
});

test('CORS preflight is 204 with methods, headers and max-age', async () => {
  for (const path of ['/v1/estimate', '/v1/optimize', '/anything']) {
    const res = await fetch(server.base + path, {
      method: 'OPTIONS',
      headers: { origin: 'https://example.org', 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type' },
    });
    assert.equal(res.status, 204);
    assert.equal(res.headers.get('access-control-allow-origin'), '*');
    assert.match(res.headers.get('access-control-allow-methods'), /POST/);
    assert.match(res.headers.get('access-control-allow-methods'), /GET/);
    assert.match(res.headers.get('access-control-allow-headers'), /Content-Type/i);
    assert.equal(res.headers.get('access-control-max-age'), '86400');
    assert.equal((await res.text()).length, 0);
  }
});

test('bodies over 8 KiB are 413, by Content-Length and by chunked bytes', async () => {
  const big = JSON.stringify({ gpu: 'A100', pad: 'x'.repeat(9000) });
  await assertProblem(await fetch(`${server.base}/v1/estimate`, { method: 'POST', body: big }), 413, 'body');
  // a stream body has no Content-Length: fetch sends it chunked
  const stream = new ReadableStream({
    start(c) { for (let i = 0; i < 10; i++) c.enqueue(new TextEncoder().encode('x'.repeat(1000))); c.close(); },
  });
  const res = await fetch(`${server.base}/v1/estimate`, { method: 'POST', body: stream, duplex: 'half' });
  await assertProblem(res, 413, 'body');
  // exactly at the limit is parsed (and then rejected as JSON, not as size)
  const atLimit = '{"a":"' + 'x'.repeat(8192 - 8) + '"}';
  assert.equal(atLimit.length, 8192);
  await assertProblem(await fetch(`${server.base}/v1/estimate`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: atLimit }), 400, 'a');
});

test('a huge chunked body is cut off without harming the server', async () => {
  const chunk = 'y'.repeat(64 * 1024);
  const status = await new Promise((resolve) => {
    const req = http.request(`${server.base}/v1/estimate`, { method: 'POST' }, (res) => { res.resume(); resolve(res.statusCode); });
    req.on('error', () => resolve('closed'));
    let sent = 0;
    const pump = () => {
      while (sent < 4 * 1024 * 1024) { sent += chunk.length; if (!req.write(chunk)) { req.once('drain', pump); return; } }
      req.end();
    };
    pump();
  });
  assert.ok(status === 413 || status === 'closed', `got ${status}`);
  assert.equal((await fetch(`${server.base}/healthz`)).status, 200);
});

test('request targets over 4 KiB are 414', async () => {
  const res = await fetch(`${server.base}/v1/estimate?gpu=${'a'.repeat(5000)}`);
  await assertProblem(res, 414);
});

test('one TCP connection serves several requests (keep-alive)', async () => {
  const { responses, closed } = await rawExchange(server.port, [
    get('/healthz'),
    get('/v1/estimate?gpu=A100&params_b=7&precision=nf4'),
    post('/v1/estimate', JSON.stringify({ gpu: 'A100', params_b: 7, precision: 'nf4' })),
    get('/v1/nope'),
    get('/openapi.json'),
    'OPTIONS /v1/estimate HTTP/1.1\r\nHost: x\r\n\r\n',
    'HEAD /v1/gpus HTTP/1.1\r\nHost: x\r\n\r\n',
    get('/index.html'),
  ]);
  assert.deepEqual(responses.map((r) => r.status), [200, 200, 200, 404, 200, 204, 200, 200]);
  assert.ok(responses.every((r) => r.headers.connection !== 'close'), 'no response closes the connection');
  assert.equal(closed, false, 'the server did not close the connection');
  assert.deepEqual(JSON.parse(responses[1].body), JSON.parse(responses[2].body));
});

test('the connection survives a 400 and a 413 by chunked bytes', async () => {
  const chunked = (s) => `${s.length.toString(16)}\r\n${s}\r\n`;
  const { responses } = await rawExchange(server.port, [
    post('/v1/estimate', '[1,2]'),
    `POST /v1/estimate HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n${chunked('z'.repeat(5000))}${chunked('z'.repeat(5000))}0\r\n\r\n`,
    get('/healthz'),
  ]);
  assert.deepEqual(responses.map((r) => r.status), [400, 413, 200]);
});

test('Content-Length headers that differ are refused (a body framed two ways); equal ones are one length', async () => {
  const body = '{"gpu":"A100","params_b":7}';
  const req = (a, b) => `POST /v1/estimate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${a}\r\nContent-Length: ${b}\r\nConnection: close\r\n\r\n${body}`;
  const differ = await rawExchange(server.port, [req(2, body.length)]);
  assert.equal(differ.responses[0].status, 400);
  assert.match(differ.responses[0].body, /Content-Length headers that differ/);
  const same = await rawExchange(server.port, [req(body.length, body.length)]);
  assert.equal(same.responses[0].status, 200);
});

test('static files: index, content types, ETag revalidation', async () => {
  let res = await fetch(`${server.base}/`);
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('content-type'), 'text/html; charset=utf-8');
  assertCommonHeaders(res);
  assert.equal(await res.text(), '<!doctype html><title>eco</title>');
  const etag = res.headers.get('etag');
  assert.match(etag, /^"[0-9a-f]+-[0-9a-f]+"$/);
  res = await fetch(`${server.base}/index.html`, { headers: { 'if-none-match': etag } });
  assert.equal(res.status, 304);
  assert.equal((await res.text()).length, 0);
  // a 304's Content-Length, if any, is the 200's (RFC 9110 8.6); a list, a weak tag and "*" match too
  const { responses: cond } = await rawExchange(server.port, [
    `GET /index.html HTTP/1.1\r\nHost: x\r\nIf-None-Match: ${etag}\r\n\r\n`,
    `GET /index.html HTTP/1.1\r\nHost: x\r\nIf-None-Match: "nope", W/${etag}\r\n\r\n`,
    'GET /index.html HTTP/1.1\r\nHost: x\r\nIf-None-Match: *\r\n\r\n',
    'GET /index.html HTTP/1.1\r\nHost: x\r\nIf-None-Match: "nope"\r\n\r\n',
  ]);
  assert.deepEqual(cond.map((r) => r.status), [304, 304, 304, 200]);
  assert.equal(cond[0].headers['content-length'], String('<!doctype html><title>eco</title>'.length));
  assert.equal(cond[0].headers.etag, etag);
  res = await fetch(`${server.base}/app.js`);
  assert.equal(res.headers.get('content-type'), 'text/javascript; charset=utf-8');
  res = await fetch(`${server.base}/eco.wasm`);
  assert.equal(res.headers.get('content-type'), 'application/wasm');
  assert.equal(Buffer.from(await res.arrayBuffer()).length, 8);
  for (const p of ['/sub', '/sub/']) {
    res = await fetch(server.base + p);
    assert.equal(res.status, 200, p);
    assert.equal(await res.text(), '<p>sub</p>');
  }
  await assertProblem(await fetch(`${server.base}/missing.html`), 404);
});

test('static files: traversal and escapes are 404 and never leak', async () => {
  const attempts = [
    '/../secret.txt', '/sub/../../secret.txt', '/%2e%2e/secret.txt', '/%2E%2E/secret.txt', '/.%2e/secret.txt',
    '/sub%2f..%2f..%2fsecret.txt', '/sub%2F..%2F..%2Fsecret.txt', '/..%5csecret.txt', '/%5c..%5csecret.txt',
    '/escape.txt', '/.env', '/sub/%00index.html', '//etc/passwd', '/..%2fsecret.txt', '/%252e%252e/secret.txt',
  ];
  const { responses } = await rawExchange(server.port, attempts.map(get));
  assert.equal(responses.length, attempts.length);
  responses.forEach((r, i) => {
    assert.equal(r.status, 404, attempts[i]);
    assert.equal(r.headers['content-type'], 'application/problem+json', attempts[i]);
    assert.equal(r.headers['access-control-allow-origin'], '*', attempts[i]);
    assert.ok(!r.body.includes('TOP-SECRET') && !r.body.includes('TOKEN=') && !r.body.includes('root:'), attempts[i]);
  });
});

test('/metrics counts requests by route and status, with a latency histogram and uptime', async () => {
  const before_ = await (await fetch(`${server.base}/metrics`)).text();
  const count = (text, route, status) => {
    const m = new RegExp(`^eco_http_requests_total\\{route="${route}",status="${status}"\\} (\\d+)$`, 'm').exec(text);
    return m ? Number(m[1]) : 0;
  };
  for (let i = 0; i < 3; i++) await (await fetch(`${server.base}/v1/gpus`)).text();
  await (await fetch(`${server.base}/v1/gpus?bad=1`)).text();
  const doc = readFileSync(join(SRC, 'data/h200/h200_qwen2.5-7b.session11.energy.json'));
  const stored = await fetch(`${server.base}/v1/replications`, { method: 'POST', body: doc, headers: { 'content-type': 'application/json' } });
  assert.equal(stored.status, 201, await stored.text());
  const res = await fetch(`${server.base}/metrics`);
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('content-type'), 'text/plain; version=0.0.4; charset=utf-8');
  assert.equal(res.headers.get('cache-control'), 'no-store');
  const text = await res.text();
  assert.equal(count(text, '/v1/gpus', 200) - count(before_, '/v1/gpus', 200), 3);
  assert.equal(count(text, '/v1/gpus', 400) - count(before_, '/v1/gpus', 400), 1);
  assert.equal(count(text, '/v1/replications', 201) - count(before_, '/v1/replications', 201), 1);
  assert.equal(count(text, '/v1/replications', 'other'), 0);
  assert.match(text, /^# TYPE eco_http_request_duration_seconds histogram$/m);
  const inf = Number(/^eco_http_request_duration_seconds_bucket\{route="\/v1\/gpus",le="\+Inf"\} (\d+)$/m.exec(text)[1]);
  const cnt = Number(/^eco_http_request_duration_seconds_count\{route="\/v1\/gpus"\} (\d+)$/m.exec(text)[1]);
  assert.equal(inf, cnt);
  assert.ok(cnt >= 4);
  assert.ok(Number(/^eco_uptime_seconds ([\d.]+)$/m.exec(text)[1]) > 0);
});

test('a store locked by another writer answers 503 with Retry-After, names no local path, and loses nothing', async () => {
  const db = join(server.tmp, 'eco.db');
  // another process holds the write lock past the store's 5 s busy timeout
  const locker = spawn('sqlite3', [db], { stdio: ['pipe', 'ignore', 'ignore'] });
  const unlocked = new Promise((r) => locker.on('exit', r));
  locker.stdin.end('BEGIN IMMEDIATE;\n.shell sleep 8\nCOMMIT;\n');
  await new Promise((r) => setTimeout(r, 500));
  const doc = JSON.parse(readFileSync(join(SRC, 'data/h200/h200_qwen2.5-3b.energy.json'), 'utf8'));
  const body = JSON.stringify(doc); // new bytes: not already stored
  const busy = await fetch(`${server.base}/v1/replications`, { method: 'POST', body, headers: { 'content-type': 'application/json' } });
  const p = await busy.json();
  assert.equal(busy.status, 503, JSON.stringify(p));
  assert.equal(busy.headers.get('retry-after'), '5');
  assert.equal(p.type, 'urn:ecocompute:problem:busy');
  assert.ok(!p.detail.includes(server.tmp), `the detail names a local path: ${p.detail}`);
  assert.match(server.log, /database is locked/); // the server's log has the cause
  await unlocked;
  const again = await fetch(`${server.base}/v1/replications`, { method: 'POST', body, headers: { 'content-type': 'application/json' } });
  assert.equal(again.status, 201, await again.text());
});

test('/openapi.json is OpenAPI 3.1 with this build\'s version', async () => {
  const res = await fetch(`${server.base}/openapi.json`);
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('content-type'), 'application/json');
  const doc = await res.json();
  assert.equal(doc.openapi, '3.1.0');
  const version = execFileSync(BIN, ['--version']).toString();
  assert.ok(version.includes(doc.info.version), `${version} vs ${doc.info.version}`);
  for (const p of ['/v1/estimate', '/v1/optimize', '/v1/architectures', '/v1/gpus', '/v1/models', '/v1/measurements', '/healthz', '/metrics', '/openapi.json'])
    assert.ok(doc.paths[p]?.get, `GET ${p} documented`);
  assert.ok(doc.paths['/v1/estimate'].post.requestBody);
  assert.ok(doc.paths['/v1/estimate'].get.parameters.some((p) => p.name === 'params_b'));
});

test('concurrent clients each get the answer to their own query (response reuse is keyed correctly)', async () => {
  // 400 requests over 50 distinct targets, twice each per worker thread at least: hits and misses interleave
  const sizes = Array.from({ length: 400 }, (_, i) => 1 + (i % 50));
  const got = await Promise.all(sizes.map(async (n) => {
    const r = await fetch(`${server.base}/v1/estimate?gpu=A100&params_b=${n}&precision=nf4`);
    return { status: r.status, body: await r.json() };
  }));
  got.forEach(({ status, body }, i) => {
    assert.equal(status, 200);
    assert.equal(body.input.params_b, sizes[i]);
  });
  // a reused answer is byte-identical to a fresh one, and HEAD of a cached target has no body
  const fresh = await (await fetch(`${server.base}/v1/estimate?gpu=A100&params_b=7&precision=nf4&batch=1`)).text();
  const reused = await (await fetch(`${server.base}/v1/estimate?gpu=A100&params_b=7&precision=nf4&batch=1`)).text();
  assert.equal(reused, fresh);
  const head = await fetch(`${server.base}/v1/estimate?gpu=A100&params_b=7&precision=nf4&batch=1`, { method: 'HEAD' });
  assert.equal(head.status, 200);
  assert.equal((await head.text()).length, 0);
  assert.equal(head.headers.get('content-length'), String(Buffer.byteLength(fresh)));
});

test('SIGTERM stops the server cleanly (runs last)', async () => {
  assert.match(server.log, /^eco serve: listening on http:\/\/127\.0\.0\.1:\d+ \(2 threads/m);
  server.proc.kill('SIGTERM');
  const code = await new Promise((r) => server.proc.once('exit', (c) => r(c)));
  assert.equal(code, 0, server.log);
  assert.match(server.log, /SIGTERM, stopping/);
});
