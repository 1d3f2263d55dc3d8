// `eco mcp` end to end: the official SDK client (Client + StdioClientTransport) lists and calls every tool, and raw
// stdio exchanges check framing, the handshake for both protocol revisions and the JSON-RPC error paths.
// Curves come from the CLI itself (eco import + eco fit of data/reference) in a temp dir.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { McpError, ErrorCode } from '@modelcontextprotocol/sdk/types.js';
import Ajv from 'ajv';
import Ajv2020 from 'ajv/dist/2020.js';

const ECO = process.env.ECO_BIN;
const SRC = process.env.ECO_SOURCE_DIR;
assert.ok(ECO && SRC, 'ECO_BIN and ECO_SOURCE_DIR must be set (run through ctest)');

let dir, curvesPath, curves, client;

before(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'eco-mcp-'));
  const db = path.join(dir, 'eco.db');
  curvesPath = path.join(dir, 'curves.json');
  execFileSync(ECO, ['import', '--db', db, path.join(SRC, 'data/reference')], { stdio: ['ignore', 'ignore', 'pipe'] });
  execFileSync(ECO, ['fit', '--db', db, '--out', curvesPath], { stdio: ['ignore', 'ignore', 'pipe'] });
  curves = JSON.parse(readFileSync(curvesPath, 'utf8'));

  client = new Client({ name: 'eco-mcp-test', version: '1.0.0' });
  const transport = new StdioClientTransport({
    command: ECO, args: ['mcp', '--curves', curvesPath], env: { ...process.env }, stderr: 'ignore',
  });
  await client.connect(transport);
});

after(async () => {
  await client?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const TOOLS = ['recommend_config', 'estimate_energy', 'list_gpus', 'list_models'];
const text = (r) => r.content.filter((c) => c.type === 'text').map((c) => c.text).join('\n');
const summary = (r) => r.content[0].text;

// Runs one raw stdio session: writes the lines, closes stdin, waits for exit.
function rawSession(lines, args = ['mcp', '--curves', curvesPath]) {
  return new Promise((resolve, reject) => {
    const child = spawn(ECO, args, { env: process.env, stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '', err = '';
    child.stdout.setEncoding('utf8').on('data', (d) => { out += d; });
    child.stderr.setEncoding('utf8').on('data', (d) => { err += d; });
    child.on('error', reject);
    const timer = setTimeout(() => { child.kill('SIGKILL'); reject(new Error(`timeout; stderr: ${err}`)); }, 60000);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      const outLines = out.split('\n');
      assert.equal(outLines.pop(), '', 'stdout must end with a newline');
      resolve({ code, signal, stdout: out, stderr: err, messages: outLines.map((l) => JSON.parse(l)) });
    });
    child.stdin.on('error', () => {}); // the server may exit before reading (bad command line)
    child.stdin.end(lines.map((l) => (typeof l === 'string' ? l : JSON.stringify(l)) + '\n').join(''));
  });
}

const init = (version, id = 0) => ({
  jsonrpc: '2.0', id, method: 'initialize',
  params: { protocolVersion: version, capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
});
const initialized = { jsonrpc: '2.0', method: 'notifications/initialized' };
const call = (id, name, args) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });

// Every message on stdout is JSON-RPC 2.0: a response with exactly one of result/error, echoing an id.
function assertProtocolOnly(messages) {
  for (const m of messages) {
    assert.equal(m.jsonrpc, '2.0');
    assert.ok('id' in m, 'responses carry an id');
    assert.ok(('result' in m) !== ('error' in m), 'exactly one of result and error');
    if (m.error) assert.equal(typeof m.error.code, 'number');
  }
}

// ---- SDK client ----

test('handshake through the SDK client: server info, tools capability', () => {
  const info = client.getServerVersion();
  assert.equal(info.name, 'ecocompute');
  assert.match(info.version, /^\d+\.\d+\.\d+/);
  assert.deepEqual(client.getServerCapabilities().tools, { listChanged: false });
  assert.match(client.getInstructions(), /never present an estimate as a measurement/);
});

test('listTools: four tools with object schemas inside the draft-07/2020-12 common subset', async () => {
  const { tools } = await client.listTools();
  assert.deepEqual(tools.map((t) => t.name).sort(), [...TOOLS].sort());
  const forbidden = ['prefixItems', '$defs', '$ref', 'unevaluatedProperties', 'unevaluatedItems', 'dependentSchemas',
    'dependentRequired', '$dynamicRef', '$anchor'];
  const walk = (s, where) => {
    if (Array.isArray(s)) return s.forEach((x, i) => walk(x, `${where}/${i}`));
    if (!s || typeof s !== 'object') return;
    for (const [k, v] of Object.entries(s)) {
      // Under "properties" the keys are property names, not keywords.
      if (!where.endsWith('/properties')) assert.ok(!forbidden.includes(k), `${where}: ${k} is not draft-07 compatible`);
      walk(v, `${where}/${k}`);
    }
  };
  for (const t of tools) {
    assert.equal(t.inputSchema.type, 'object', `${t.name} inputSchema`);
    assert.equal(t.outputSchema.type, 'object', `${t.name} outputSchema`);
    assert.ok(t.title && t.description.length > 40, `${t.name} title/description`);
    assert.equal(t.annotations.readOnlyHint, true);
    assert.equal(t.annotations.destructiveHint, false);
    assert.equal(t.annotations.openWorldHint, false);
    walk(t.inputSchema, `${t.name}.inputSchema`);
    walk(t.outputSchema, `${t.name}.outputSchema`);
    // Both dialects must compile them (the SDK itself uses draft-07 Ajv).
    assert.equal(t.inputSchema.$schema, undefined, 'no $schema: valid in both dialects');
    for (const A of [Ajv, Ajv2020]) {
      const ajv = new A({ strict: false, validateSchema: true });
      ajv.compile(t.inputSchema);
      ajv.compile(t.outputSchema);
    }
  }
  const rc = tools.find((t) => t.name === 'recommend_config');
  for (const p of ['gpu', 'model', 'params_b', 'objective', 'max_vram_gb', 'max_latency_ms'])
    assert.ok(rc.inputSchema.properties[p], `recommend_config input ${p}`);
  assert.deepEqual(rc.inputSchema.properties.objective.enum, ['energy', 'latency', 'balanced']);
  assert.deepEqual(rc.inputSchema.required, ['gpu']);
  const est = tools.find((t) => t.name === 'estimate_energy');
  for (const p of ['gpu', 'precision', 'params_b', 'model', 'batch'])
    assert.ok(est.inputSchema.properties[p], `estimate_energy input ${p}`);
  for (const name of ['list_gpus', 'list_models']) {
    const t = tools.find((x) => x.name === name);
    assert.deepEqual(t.inputSchema.properties, {});
    assert.equal(t.inputSchema.additionalProperties, false);
  }
});

test('list_gpus and list_models return the tables', async () => {
  const g = await client.callTool({ name: 'list_gpus', arguments: {} });
  assert.equal(g.isError, false);
  const gpus = g.structuredContent.gpus;
  assert.ok(gpus.length >= 5);
  for (const x of gpus) {
    assert.ok(['turing', 'ampere', 'ada', 'hopper', 'blackwell'].includes(x.arch), x.arch);
    assert.ok(x.vram_gb > 0 && x.mem_bw_gbps > 0 && x.fp16_tflops > 0);
  }
  assert.ok(gpus.some((x) => x.name === 'RTX 4090' && x.arch === 'ada' && x.vram_gb === 24));
  assert.match(summary(g), new RegExp(`^${gpus.length} GPUs`));
  assert.ok(summary(g).includes('RTX 4090 (ada, 24 GB)'));
  assert.deepEqual(JSON.parse(g.content[1].text), g.structuredContent);

  const m = await client.callTool({ name: 'list_models', arguments: {} });
  assert.equal(m.isError, false);
  const qwen = m.structuredContent.models.find((x) => x.name === 'Qwen2.5-7B');
  assert.ok(qwen);
  assert.ok(qwen.params_b > 7 && qwen.params_b < 8, `Qwen2.5-7B has ${qwen.params_b}B`);
  assert.ok(qwen.weight_bytes_nf4 < qwen.weight_bytes_fp16 / 2);
  assert.match(summary(m), new RegExp(`^${m.structuredContent.models.length} model presets`));
});

test('estimate_energy at every single-anchor measured size returns label measured and the anchor value', async () => {
  let checked = 0;
  for (const c of curves.curves) {
    const bySize = new Map();
    for (const a of c.anchors) bySize.set(a.params_b, [...(bySize.get(a.params_b) ?? []), a]);
    for (const [size, anchors] of bySize) {
      if (anchors.length !== 1) continue;
      const r = await client.callTool({
        name: 'estimate_energy', arguments: { gpu: c.arch, precision: c.precision, params_b: size },
      });
      assert.equal(r.isError, false, text(r));
      const s = r.structuredContent;
      assert.equal(s.label, 'measured', `${c.arch} ${c.precision} ${size}B`);
      assert.ok(Math.abs(s.delta_pct - anchors[0].delta_pct) < 1e-6, `${s.delta_pct} vs ${anchors[0].delta_pct}`);
      assert.equal(s.n, anchors[0].n_trials);
      assert.equal(s.input.arch, c.arch);
      assert.equal(s.input.precision, c.precision);
      assert.ok(s.range95[0] <= s.delta_pct && s.delta_pct <= s.range95[1]);
      // The summary states label, n and range.
      const t = summary(r);
      assert.ok(t.includes(`Label: measured, n=${s.n}`), t);
      assert.ok(t.includes(`${s.delta_pct >= 0 ? '+' : ''}${s.delta_pct.toFixed(1)}%`), t);
      assert.ok(t.includes('95% range'), t);
      checked++;
    }
  }
  assert.ok(checked >= 10, `only ${checked} anchors checked`);
});

test('estimate_energy\'s summary of a measured answer says what was measured, on which card, and at what size', async () => {
  // the preset's exact size (14.77B) against the 14.0B the A800 rows were measured at
  const r = await client.callTool({ name: 'estimate_energy', arguments: { gpu: 'A800', precision: 'nf4', model: 'Qwen2.5-14B' } });
  assert.equal(r.structuredContent.label, 'measured');
  const a = r.structuredContent.anchors[0];
  assert.ok(summary(r).includes(`measured: ${a.model} at 14B on ${a.gpu} (`), summary(r));
  assert.match(summary(r), /they stand for the 14\.77B asked \(the same model within 15% of its size\), not a measurement at it/);
  assert.ok(!summary(r).includes('measured at this size'));
});

test('estimate_energy between and beyond measured sizes is labelled as an estimate, never as measured', async () => {
  const c = curves.curves.find((x) => x.arch === 'blackwell' && x.precision === 'nf4');
  assert.ok(c, 'blackwell nf4 curve');
  const sizes = c.anchors.map((a) => a.params_b);
  const mid = (Math.min(...sizes) + Math.max(...sizes)) / 2 + 0.123;
  const r = await client.callTool({ name: 'estimate_energy', arguments: { gpu: 'RTX 5090', precision: 'nf4', params_b: mid } });
  assert.equal(r.structuredContent.label, 'interpolated');
  assert.equal(r.structuredContent.input.arch, 'blackwell');
  assert.ok(summary(r).includes('Label: interpolated'));
  assert.ok(summary(r).includes('not a measurement'));
  assert.ok(!summary(r).includes('Label: measured'));

  const far = await client.callTool({
    name: 'estimate_energy', arguments: { gpu: 'RTX 5090', precision: 'nf4', params_b: Math.max(...sizes) * 10 },
  });
  assert.equal(far.structuredContent.label, 'extrapolated');
  assert.ok(summary(far).includes('Label: extrapolated') && summary(far).includes('not a measurement'));
  const [lo, hi] = far.structuredContent.range95;
  const [mlo, mhi] = r.structuredContent.range95;
  assert.ok(hi - lo > mhi - mlo, 'the range widens outside the measured sizes');
});

test('recommend_config respects max_vram_gb and orders by the objective', async () => {
  const r = await client.callTool({
    name: 'recommend_config', arguments: { gpu: 'RTX 4090', params_b: 7, max_vram_gb: 8, objective: 'energy' },
  });
  assert.equal(r.isError, false, text(r));
  const s = r.structuredContent;
  assert.equal(s.input.max_vram_gb, 8);
  assert.equal(s.vram_budget_gb, 8);
  assert.equal(s.gpu.name, 'RTX 4090');
  assert.ok(s.recommended, 'a 7B model fits 8 GB quantized');
  assert.notEqual(s.recommended.precision, 'fp16', 'fp16 weights of 7B alone exceed 8 GB');
  for (const c of [s.recommended, ...s.alternatives]) {
    assert.ok(c.vram_gb <= 8, `${c.precision} b${c.batch} uses ${c.vram_gb} GB`);
    assert.equal(c.feasible, true);
    assert.ok(s.recommended.energy_mj_per_token <= c.energy_mj_per_token);
    assert.equal(c.basis.vram, 'modelled');
  }
  assert.ok(s.feasible_count >= 1 && s.feasible_count <= s.candidates_count);
  const t = summary(r);
  assert.match(t, /^Best for energy: a 7B model on RTX 4090 at a context of 2048 positions \(the default; estimate_energy without ctx answers at the measured short context\) is /);
  assert.ok(t.includes(`${s.recommended.precision} at batch ${s.recommended.batch}`));
  assert.match(t, /\(n=\d+ trials?\)/);
  assert.ok(t.includes('(modelled)'));

  // Without the budget, fp16 fits the card and the search space grows.
  const free = await client.callTool({ name: 'recommend_config', arguments: { gpu: 'RTX 4090', params_b: 7 } });
  assert.ok(free.structuredContent.feasible_count > s.feasible_count);
  assert.equal(free.structuredContent.vram_budget_gb, 24);

  const fast = await client.callTool({
    name: 'recommend_config', arguments: { gpu: 'RTX 4090', params_b: 7, max_vram_gb: 8, objective: 'latency' },
  });
  const f = fast.structuredContent;
  assert.equal(f.input.objective, 'latency');
  for (const c of f.alternatives) assert.ok(f.recommended.latency_ms <= c.latency_ms);
  assert.ok(f.recommended.latency_ms <= s.recommended.latency_ms);
});

test('recommend_config with a preset model and with an impossible budget', async () => {
  const models = (await client.callTool({ name: 'list_models', arguments: {} })).structuredContent.models;
  const qwen = models.find((x) => x.name === 'Qwen2.5-7B');
  const r = await client.callTool({ name: 'recommend_config', arguments: { gpu: 'RTX 4090', model: 'Qwen2.5-7B', objective: 'balanced' } });
  assert.equal(r.isError, false, text(r));
  assert.equal(r.structuredContent.input.model, 'Qwen2.5-7B');
  assert.ok(Math.abs(r.structuredContent.input.params_b - qwen.params_b) < 1e-9);
  assert.match(summary(r), /^Best for balanced: Qwen2.5-7B \(7.62B\) on RTX 4090/);

  // an explicit size wins over the preset's: the text names the size used, and a note says the shapes are not used
  const big = await client.callTool({ name: 'recommend_config', arguments: { gpu: 'H200', model: 'Llama-3.1-8B', params_b: 70 } });
  assert.equal(big.isError, false, text(big));
  assert.equal(big.structuredContent.input.params_b, 70);
  assert.match(summary(big), /^Best for energy: Llama-3.1-8B \(70B\) on H200/);
  assert.ok(big.structuredContent.notes.some((n) => /params_b 70B is used, not Llama-3.1-8B's 8.03B/.test(n)),
    big.structuredContent.notes.join(' | '));

  // a pick whose ΔE range includes 0 says the data cannot tell it from fp16 (T4 Qwen2.5-3B nf4: -3.3% to +0.6%)
  const close = await client.callTool({ name: 'recommend_config', arguments: { gpu: 'T4', model: 'Qwen2.5-3B' } });
  const [lo, hi] = close.structuredContent.recommended.delta_range95;
  assert.ok(close.structuredContent.recommended.precision !== 'fp16' && lo < 0 && hi > 0, JSON.stringify(close.structuredContent.recommended));
  assert.ok(summary(close).includes("Its ΔE range includes 0: the data cannot tell its energy from FP16's"), summary(close));
  assert.ok(!summary(r).includes('range includes 0'), summary(r));

  // a long context rescales the measured ΔE: the summary says the recommended ΔE is an estimate from the
  // architecture's own short-context figure, never "measured" (its estimate is asked at the optimizer's context)
  const long = await client.callTool({ name: 'recommend_config', arguments: { gpu: 'RTX 4090', params_b: 7, ctx: 32768, batch: 1 } });
  assert.equal(long.isError, false, text(long));
  const rec = long.structuredContent.recommended;
  assert.ok(rec.precision !== 'fp16' && rec.basis.delta === 'estimated', JSON.stringify(rec));
  assert.match(summary(long), new RegExp(`The ${rec.precision} ΔE is estimated \\(n=\\d+ trials?\\): an estimate, not a measurement: ada's own ` +
    `short-context measured figure of [-+][\\d.]+%, rescaled for a KV cache that adds \\d+% to an fp16 step's bytes`), summary(long));
  assert.ok(!/ΔE is measured/.test(summary(long)), summary(long));
  const est = await client.callTool({ name: 'estimate_energy', arguments: { gpu: 'RTX 4090', params_b: 7, precision: rec.precision, ctx: 32768 } });
  assert.ok(Math.abs(est.structuredContent.delta_pct - rec.delta_pct) < 1e-9, `${est.structuredContent.delta_pct} vs ${rec.delta_pct}`);
  assert.equal(est.structuredContent.context.short_label, 'measured');
  assert.ok(est.structuredContent.context.kv_share_fp16 > 0.05);

  const none = await client.callTool({ name: 'recommend_config', arguments: { gpu: 'RTX 4090', params_b: 70, max_vram_gb: 2 } });
  assert.equal(none.isError, false);
  assert.equal(none.structuredContent.recommended, null);
  assert.equal(none.structuredContent.feasible_count, 0);
  assert.ok(none.structuredContent.closest_infeasible.vram_gb > 2);
  assert.match(summary(none), /^No configuration of a 70B model on RTX 4090 at a context of 2048 positions \(the default; estimate_energy without ctx answers at the measured short context\) meets the budgets \(VRAM <= 2 GB\)\. Closest: /);

  // at batch 8 and the default context the recommended ΔE is the estimate's at that batch and context (eight KV
  // caches a step), and the summary names the context it assumed and gives the same label as the candidate
  const b8 = await client.callTool({ name: 'recommend_config', arguments: { gpu: 'RTX 4090', params_b: 7, batch: 8 } });
  const r8 = b8.structuredContent.recommended;
  assert.ok(summary(b8).startsWith('Best for energy: a 7B model on RTX 4090 at a context of 2048 positions (the default;'), summary(b8));
  assert.ok(summary(b8).includes(`The ${r8.precision} ΔE is ${r8.basis.delta} (`), summary(b8));
  const e8 = await client.callTool({ name: 'estimate_energy', arguments: { gpu: 'RTX 4090', params_b: 7, precision: r8.precision, batch: 8, ctx: 2048 } });
  assert.ok(Math.abs(e8.structuredContent.delta_pct - r8.delta_pct) < 1e-9, `${e8.structuredContent.delta_pct} vs ${r8.delta_pct}`);
  assert.equal(e8.structuredContent.label, r8.basis.delta);
});

test('tool execution errors are isError results naming the field', async () => {
  const cases = [
    ['estimate_energy', { gpu: 4090, precision: 'nf4', params_b: 7 }, 'gpu', /must be a string/],
    ['estimate_energy', { gpu: 'RTX 4090', precision: 'nf4', params_b: 'seven' }, 'params_b', /must be a number/],
    ['estimate_energy', { gpu: 'RTX 4090', precision: 'nf4', params_b: -3 }, 'params_b', /between 0 and|> 0/],
    ['estimate_energy', { gpu: 'Voodoo 5 6000', precision: 'nf4', params_b: 7 }, 'gpu', /./],
    ['estimate_energy', { gpu: 'RTX 4090', precision: 'int3', params_b: 7 }, 'precision', /./],
    ['estimate_energy', { gpu: 'RTX 4090', precision: 'fp16', params_b: 7 }, 'precision', /baseline/],
    ['estimate_energy', { precision: 'nf4', params_b: 7 }, 'gpu', /required/],
    ['recommend_config', { gpu: 'RTX 4090' }, 'params_b', /params_b|model/],
    ['recommend_config', { gpu: 'RTX 4090', params_b: 7, objective: 'cheapest' }, 'objective', /energy, latency, balanced/],
    ['recommend_config', { gpu: 'RTX 4090', params_b: 7, max_vram_gb: '8' }, 'max_vram_gb', /must be a number/],
    ['recommend_config', { gpu: 'RTX 4090', params_b: 7, batch_size: 4 }, 'batch_size', /unknown parameter/],
    ['list_gpus', { verbose: true }, 'verbose', /no arguments/],
  ];
  for (const [name, args, field, re] of cases) {
    const r = await client.callTool({ name, arguments: args });
    assert.equal(r.isError, true, `${name} ${JSON.stringify(args)} should fail`);
    assert.equal(r.structuredContent, undefined);
    const t = text(r);
    assert.ok(t.includes(`'${field}'`), `${JSON.stringify(args)}: "${t}" should name ${field}`);
    assert.match(t, re);
  }
});

test('unknown tool through the SDK is a JSON-RPC invalid-params error', async () => {
  await assert.rejects(client.callTool({ name: 'delete_everything', arguments: {} }), (e) => {
    assert.ok(e instanceof McpError);
    assert.equal(e.code, ErrorCode.InvalidParams);
    assert.match(e.message, /delete_everything/);
    return true;
  });
  // The connection survives.
  assert.deepEqual(await client.ping(), {});
});

// ---- raw stdio ----

test('raw handshake answers 2025-06-18 and 2025-11-25 as asked, else the latest', async () => {
  for (const [asked, expect] of [['2025-06-18', '2025-06-18'], ['2025-11-25', '2025-11-25'], ['2024-11-05', '2025-11-25']]) {
    const s = await rawSession([init(asked, `init-${asked}`), initialized, { jsonrpc: '2.0', id: 1, method: 'tools/list' }]);
    assert.equal(s.code, 0, s.stderr);
    assertProtocolOnly(s.messages);
    assert.equal(s.messages.length, 2, 'the notification gets no response');
    const [r, list] = s.messages;
    assert.equal(r.id, `init-${asked}`);
    assert.equal(r.result.protocolVersion, expect);
    assert.deepEqual(r.result.capabilities, { tools: { listChanged: false } });
    assert.equal(r.result.serverInfo.name, 'ecocompute');
    assert.equal(list.id, 1);
    assert.equal(list.result.tools.length, 4);
  }
});

test('raw malformed input: parse errors, invalid requests, unknown methods, wrong types, unknown tool', async () => {
  const s = await rawSession([
    init('2025-06-18'), initialized,
    '{"jsonrpc":"2.0","id":1,"method":"ping"',            // bad JSON
    { jsonrpc: '2.0', id: 2, method: 'ping' },            // still served
    { jsonrpc: '2.0', id: 3, method: 'resources/list' },  // unknown method
    call(4, 'estimate_energy', { gpu: ['RTX 4090'], params_b: 7 }), // wrong argument type
    call(5, 'no_such_tool', {}),                          // unknown tool
    { jsonrpc: '2.0', id: 6, method: 'tools/call', params: { name: 'list_gpus', arguments: 'all' } },
    [{ jsonrpc: '2.0', id: 7, method: 'ping' }],          // batch: removed in 2025-06-18
    { id: 8, method: 'ping' },                            // no jsonrpc member
    { jsonrpc: '2.0', id: null, method: 'ping' },         // null id
    '',                                                   // blank line: ignored
    { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 99 } },
    call(9, 'estimate_energy', { gpu: 'RTX 4090', precision: 'nf4', params_b: 7 }),
  ]);
  assert.equal(s.code, 0, s.stderr);
  assertProtocolOnly(s.messages);
  const byId = (id) => s.messages.filter((m) => JSON.stringify(m.id) === JSON.stringify(id));
  assert.equal(s.messages.length, 11);
  const parse = s.messages[1];
  assert.equal(parse.id, null);
  assert.equal(parse.error.code, -32700);
  assert.deepEqual(byId(2)[0].result, {});
  assert.equal(byId(3)[0].error.code, -32601);
  const wrong = byId(4)[0].result;
  assert.equal(wrong.isError, true);
  assert.match(wrong.content[0].text, /'gpu'/);
  assert.equal(byId(5)[0].error.code, -32602);
  assert.match(byId(5)[0].error.message, /no_such_tool/);
  assert.equal(byId(6)[0].error.code, -32602);
  assert.equal(byId(8)[0].error.code, -32600);
  const nullIds = byId(null);
  assert.deepEqual(nullIds.map((m) => m.error.code), [-32700, -32600, -32600]);
  assert.match(nullIds[1].error.message, /batch/);
  assert.equal(byId(9)[0].result.isError, false);
  assert.equal(byId(9)[0].result.structuredContent.input.arch, 'ada');
  // Diagnostics went to stderr, not stdout.
  assert.match(s.stderr, /parse error/);
});

test('integers past 64 bits are valid JSON: an argument gets its range error, an id that large is refused', async () => {
  const s = await rawSession([
    init('2025-11-25'), initialized,
    '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"recommend_config","arguments":{"gpu":"H200","params_b":7,"batch":99999999999999999999}}}',
    '{"jsonrpc":"2.0","id":99999999999999999999,"method":"ping"}',
    '{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"estimate_energy","arguments":{"gpu":"H200","params_b":7,"batch":8,"ctx":99999999999999999999}}}',
  ]);
  assert.equal(s.code, 0, s.stderr);
  assertProtocolOnly(s.messages);
  assert.equal(s.messages.length, 4);
  const [, big, id, ctx] = s.messages;
  assert.equal(big.id, 3); // the other integers keep their type: the id is echoed as sent
  assert.equal(big.result.isError, true);
  assert.match(big.result.content[0].text, /batch must be between 1 and 1024, got 1e\+20/);
  assert.equal(id.id, null);
  assert.equal(id.error.code, -32600);
  assert.match(id.error.message, /"id" must be a string or an integer of at most 64 bits/);
  assert.equal(ctx.id, 5);
  assert.match(ctx.result.content[0].text, /'ctx'/); // batch 8 still an integer: only ctx is out of range
  assert.doesNotMatch(ctx.result.content[0].text, /'batch'/);
});

test('requests before initialize are refused; ping is allowed; EOF exits 0', async () => {
  const s = await rawSession([
    { jsonrpc: '2.0', id: 1, method: 'tools/list' },
    { jsonrpc: '2.0', id: 2, method: 'ping' },
    init('2025-11-25', 3),
    init('2025-11-25', 4),
  ]);
  assert.equal(s.code, 0);
  assertProtocolOnly(s.messages);
  assert.equal(s.messages[0].error.code, -32600);
  assert.match(s.messages[0].error.message, /initialize/);
  assert.deepEqual(s.messages[1].result, {});
  assert.equal(s.messages[2].result.protocolVersion, '2025-11-25');
  assert.equal(s.messages[3].error.code, -32600, 'a second initialize');
});

test('an over-long line is refused with a clear error and the server keeps serving', async () => {
  const big = JSON.stringify(call(1, 'list_gpus', { pad: 'x'.repeat(1100000) }));
  const s = await rawSession([init('2025-11-25'), big, { jsonrpc: '2.0', id: 2, method: 'ping' }]);
  assert.equal(s.code, 0);
  assertProtocolOnly(s.messages);
  assert.equal(s.messages.length, 3);
  assert.equal(s.messages[1].error.code, -32600);
  assert.match(s.messages[1].error.message, /line limit/);
  assert.equal(s.messages[2].id, 2);
});

test('bad command lines fail before serving and print nothing on stdout', async () => {
  const missing = await rawSession([init('2025-11-25')], ['mcp']);
  assert.equal(missing.code, 2);
  assert.equal(missing.stdout, '');
  assert.match(missing.stderr, /--curves/);
  const nofile = await rawSession([init('2025-11-25')], ['mcp', '--curves', path.join(dir, 'nope.json')]);
  assert.equal(nofile.code, 1);
  assert.equal(nofile.stdout, '');
  assert.match(nofile.stderr, /nope\.json/);
});

// With this project's H100 SXM and H200 runs, hopper has a curve per card: an answer read from a card's own curve says
// whose measurements it rests on (Qwen2.5-14B on the H100 SXM is extrapolated from the H100's own sizes, or measured
// there once it has been).
test('a card\'s own curve is named in the summary', async () => {
  const db = path.join(dir, 'runs.db'), out = path.join(dir, 'runs-curves.json');
  execFileSync(ECO, ['import', '--db', db, path.join(SRC, 'data/reference')], { stdio: ['ignore', 'ignore', 'pipe'] });
  for (const d of ['data/h200', 'data/h100'])
    for (const f of readdirSync(path.join(SRC, d)).filter((n) => n.endsWith('.energy.json')).sort())
      execFileSync(ECO, ['import', '--db', db, '--run', path.join(SRC, d, f)], { stdio: ['ignore', 'ignore', 'pipe'] });
  execFileSync(ECO, ['fit', '--db', db, '--out', out], { stdio: ['ignore', 'ignore', 'pipe'] });
  const c2 = new Client({ name: 'eco-mcp-test-cards', version: '1.0.0' });
  await c2.connect(new StdioClientTransport({ command: ECO, args: ['mcp', '--curves', out], env: { ...process.env }, stderr: 'ignore' }));
  try {
    const est = await c2.callTool({ name: 'estimate_energy', arguments: { gpu: 'H100 SXM', params_b: 5, precision: 'nf4' } });
    assert.equal(est.isError, false, text(est));
    assert.equal(est.structuredContent.curve.card, 'NVIDIA H100 80GB HBM3');
    assert.equal(est.structuredContent.label, 'interpolated');
    assert.match(summary(est), /read from the curve fitted between measured sizes of the NVIDIA H100 80GB HBM3's own measurements, not a measurement/);
    const pooled = await c2.callTool({ name: 'estimate_energy', arguments: { gpu: 'hopper', params_b: 5, precision: 'nf4' } });
    assert.equal(pooled.structuredContent.curve.card, null);
    assert.ok(!/own measurements/.test(summary(pooled)), summary(pooled));
    assert.ok(Math.abs(pooled.structuredContent.delta_pct - est.structuredContent.delta_pct) > 1, 'the pool is another curve');
  } finally {
    await c2.close();
  }
});
