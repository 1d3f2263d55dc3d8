// Contract test: every operation documented in /openapi.json is called for real (successes and errors), and
// each response's status must be documented for that operation, its Content-Type must be the documented
// media type, and its body must validate (Ajv, JSON Schema 2020-12) against the documented schema.
// Also checks that no documented operation goes unexercised, so the spec and the cases cannot drift apart.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Ajv2020 from 'ajv/dist/2020.js';

const BIN = process.env.ECO_BIN;
const SRC = process.env.ECO_SOURCE_DIR;
let server;
let doc;
let ajv;

async function startServer() {
  const tmp = mkdtempSync(join(tmpdir(), 'eco-api-contract-'));
  const db = join(tmp, 'eco.db');
  const curves = join(tmp, 'curves.json');
  execFileSync(BIN, ['import', '--db', db, join(SRC, 'data/reference')], { stdio: 'pipe' });
  execFileSync(BIN, ['fit', '--db', db, '--out', curves], { stdio: 'pipe' });
  const proc = spawn(BIN, ['serve', '--curves', curves, '--db', db, '--port', '0', '--threads', '2'], { stdio: ['ignore', 'ignore', 'pipe'] });
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
  return { base: `http://127.0.0.1:${port}`, proc, tmp };
}

// A successful and a failing call (or more) for every documented operation.
const json = (o) => ({ method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(o) });
const raw = (rel) => ({ method: 'POST', headers: { 'content-type': 'application/json' }, body: readFileSync(join(SRC, rel), 'utf8') });
// a schema-valid run whose ΔE contradicts its own results (+50% over -20%): refused like an invalid one
const contradicting = (() => {
  const d = JSON.parse(readFileSync(join(SRC, 'data/h200/h200_qwen2.5-0.5b.energy.json'), 'utf8'));
  d.comparisons[0].delta_pct = 50;
  return { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(d) };
})();
// a stored run again, changed around its results (its run id, its layout): the same measurement
function sameMeasurement(change, indent) {
  const d = JSON.parse(readFileSync(join(SRC, 'data/h200/h200_qwen2.5-1.5b.energy.json'), 'utf8'));
  change(d);
  return { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(d, null, indent) };
}
// a concrete path's documented template (/v1/replications/7 -> /v1/replications/{id})
const template = (path) => path.replace(/^\/v1\/replications\/\d+$/, '/v1/replications/{id}');
const CASES = [
  // replications: a measured run is stored (201), the same bytes again are not duplicated (200), an example,
  // an invalid document or one whose figures contradict each other is refused with its errors (422); in order
  ['post', '/v1/replications', '', raw('data/h200/h200_qwen2.5-1.5b.energy.json'), 201],
  ['post', '/v1/replications', '', raw('data/h200/h200_qwen2.5-1.5b.energy.json'), 200],
  // the same measurement without its run id, or under another and reformatted: not a second replication
  ['post', '/v1/replications', '', sameMeasurement((d) => { delete d.run_id; }), 400],
  ['post', '/v1/replications', '', sameMeasurement((d) => { d.run_id = 'another-id'; }, 2), 400],
  ['post', '/v1/replications', '', raw('data/schema/examples/energy.example.valid.json'), 422],
  ['post', '/v1/replications', '', raw('data/schema/examples/energy.invalid.bad-precision.json'), 422],
  ['post', '/v1/replications', '', contradicting, 422],
  ['post', '/v1/replications', '', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"schema_version":' }, 400],
  ['post', '/v1/replications', '', { method: 'POST', headers: { 'content-type': 'text/plain' }, body: '{}' }, 415],
  ['get', '/v1/replications', '', {}, 200],
  ['get', '/v1/replications', '?page=2', {}, 400],
  ['get', '/v1/replications', '?limit=1&offset=0', {}, 200],
  ['get', '/v1/replications', '?limit=0', {}, 400],
  ['get', '/v1/replications/1', '', {}, 200], // the document stored above, as submitted
  ['get', '/v1/replications/999', '', {}, 404],
  ['get', '/v1/estimate', '?gpu=A100&params_b=7&precision=nf4', {}, 200],
  ['get', '/v1/estimate', '?gpu=RTX%204090&model=Mistral-7B-v0.3&precision=int8-mixed&batch=8', {}, 200],
  ['get', '/v1/estimate', '?gpu=A800&model=Qwen2.5-7B&precision=int8&ctx=32768', {}, 200], // a non-null context
  ['get', '/v1/estimate', '?gpu=RTX%204090&model=no-such-model', {}, 400],
  ['get', '/v1/estimate', '?gpu=T4&params_b=7&precision=int8', {}, 422],
  ['post', '/v1/estimate', '', json({ gpu: 'T4', params_b: 7, precision: 'fp8' }), 422],
  ['get', '/v1/estimate', '?gpu=A100&params_b=abc', {}, 400],
  ['get', '/v1/estimate', '?gpu=A100&params_b=7&unknown=1', {}, 400],
  ['get', '/v1/estimate', '?gpu=NoSuchGPU&params_b=7', {}, 400],
  ['get', '/v1/estimate', `?gpu=${'x'.repeat(5000)}`, {}, 414],
  ['post', '/v1/estimate', '', json({ gpu: 'A100', params_b: 13, precision: 'nf4' }), 200],
  ['post', '/v1/estimate', '', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"gpu":' }, 400],
  ['post', '/v1/estimate', '', { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'gpu=A100' }, 415],
  ['post', '/v1/estimate', '', json({ gpu: 'A100', params_b: '13' }), 400],
  ['post', '/v1/estimate', '', { method: 'POST', body: 'x'.repeat(9000) }, 413],
  ['get', '/v1/optimize', '?gpu=RTX%204090&params_b=7&max_vram_gb=24', {}, 200],
  ['get', '/v1/optimize', '?gpu=T4&params_b=70&max_vram_gb=1', {}, 200],
  ['get', '/v1/optimize', '?params_b=7', {}, 400],
  ['post', '/v1/optimize', '', json({ gpu: 'A100', params_b: 13 }), 200],
  ['post', '/v1/optimize', '', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '[]' }, 400],
  ['get', '/v1/architectures', '', {}, 200],
  ['get', '/v1/architectures', '?x=1', {}, 400],
  ['get', '/v1/gpus', '', {}, 200],
  ['get', '/v1/models', '', {}, 200],
  ['get', '/v1/measurements', '', {}, 200],
  ['get', '/v1/measurements', '?arch=ampere&precision=nf4', {}, 200],
  ['get', '/v1/measurements', '?arch=pascal', {}, 400],
  ['get', '/v1/measurements', '?colour=red', {}, 400],
  ['get', '/openapi.json', '', {}, 200],
  ['get', '/healthz', '', {}, 200],
  ['get', '/metrics', '', {}, 200],
  ['delete', '/v1/estimate', '', { method: 'DELETE' }, 405],
  ['put', '/v1/gpus', '', { method: 'PUT', body: '{}' }, 405],
];

function resolveRef(obj) {
  while (obj && obj.$ref) {
    assert.ok(obj.$ref.startsWith('#/'), `local ref ${obj.$ref}`);
    obj = obj.$ref.slice(2).split('/').reduce((o, k) => o[k.replace(/~1/g, '/').replace(/~0/g, '~')], doc);
  }
  return obj;
}

before(async () => {
  server = await startServer();
  doc = await (await fetch(`${server.base}/openapi.json`)).json();
  ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
  ajv.addSchema(doc, 'openapi.json');
});
after(async () => {
  server.proc.kill('SIGTERM');
  await new Promise((r) => server.proc.once('exit', r));
  rmSync(server.tmp, { recursive: true, force: true });
});

test('every documented operation has a success case and an error case here', () => {
  const ops = [];
  for (const [path, item] of Object.entries(doc.paths)) for (const m of Object.keys(item)) ops.push(`${m} ${path}`);
  for (const op of ops) {
    const cases = CASES.filter(([m, p]) => `${m} ${template(p)}` === op);
    assert.ok(cases.some((c) => c[4] === 200 || c[4] === 201), `${op} has a success case`);
  }
  const errorOps = new Set(CASES.filter((c) => c[4] && c[4] >= 400).map(([m, p]) => `${m} ${p}`));
  for (const op of ops.filter((o) => /\/v1\/(estimate|optimize|measurements)/.test(o)))
    assert.ok(errorOps.has(op), `${op} has an error case`);
});

for (const [method, path, query, init, expected] of CASES) {
  test(`${method.toUpperCase()} ${path}${query.slice(0, 60)} -> ${expected ?? 'documented'}`, async () => {
    const res = await fetch(server.base + path + query, init);
    const text = await res.text();
    if (expected) assert.equal(res.status, expected, text.slice(0, 300));
    const op = doc.paths[template(path)]?.[method];
    // 405: the method is not an operation of the path; its problem shape is the shared MethodNotAllowed response
    const responses = op ? op.responses : { 405: doc.components.responses.MethodNotAllowed };
    const documented = resolveRef(responses[String(res.status)]);
    assert.ok(documented, `status ${res.status} of ${method} ${path} is documented (${text.slice(0, 200)})`);
    const ctype = res.headers.get('content-type').split(';')[0];
    assert.ok(documented.content?.[ctype], `content type ${ctype} is documented for ${res.status}`);
    const schema = documented.content[ctype].schema;
    if (ctype.endsWith('json')) {
      const body = JSON.parse(text);
      const ref = schema.$ref ? { $ref: `openapi.json${schema.$ref}` } : schema;
      const validate = ajv.compile(ref);
      assert.ok(validate(body), `${method} ${path}${query.slice(0, 60)} (${res.status}): ${ajv.errorsText(validate.errors)}\n${text.slice(0, 500)}`);
      if (res.status >= 400 && ctype === 'application/problem+json') assert.equal(body.status, res.status);
      if (path === '/v1/replications' && method === 'post' && res.status < 300) assert.equal(body.accepted, true);
      if (path === '/v1/replications' && res.status === 422) assert.ok(body.errors.length > 0 && body.errors[0].instance_path !== undefined);
      if (path === '/v1/replications' && method === 'get' && res.status === 200) assert.equal(body.total, 1);
      if (path === '/v1/replications/1' && res.status === 200)
        assert.equal(text, readFileSync(join(SRC, 'data/h200/h200_qwen2.5-1.5b.energy.json'), 'utf8'));
    } else {
      assert.equal(schema.type, 'string');
    }
    // documented headers are present
    for (const name of Object.keys(documented.headers ?? {}))
      assert.ok(res.headers.get(name) !== null, `header ${name} on ${res.status}`);
  });
}

test('the OpenAPI document itself validates as a 3.1 description of JSON Schema components', () => {
  for (const [name, schema] of Object.entries(doc.components.schemas)) {
    assert.doesNotThrow(() => ajv.compile({ $ref: `openapi.json#/components/schemas/${name}` }), name);
    assert.equal(schema.$id, undefined, `${name} carries no $id that would re-base references`);
  }
});
