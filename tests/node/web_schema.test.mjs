// The Replications page's validator outside the browser: the same Ajv 2020 bundle the site vendors, the same
// schema file the C validator reads, and the page's error normalisation. Every example must give exactly the
// (pointer, keyword) pairs its .expect sidecar lists (the contract `eco validate` is tested against), and the
// valid examples must pass.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const SRC = process.env.ECO_SOURCE_DIR;
const require = createRequire(import.meta.url);
const Ajv2020 = require(join(SRC, 'node_modules/ajv-dist/dist/ajv2020.min.js')).default;
const { normalizeAjvErrors } = await import(pathToFileURL(join(SRC, 'web/js/schema-errors.js')).href);
const ex = join(SRC, 'data/schema/examples');
const schema = JSON.parse(readFileSync(join(SRC, 'data/schema/energy.schema.json'), 'utf8'));
const validate = new Ajv2020({ allErrors: true, strict: false }).compile(schema);

test('valid examples pass', () => {
  const files = readdirSync(ex).filter((f) => /^energy\.example\..*\.json$/.test(f));
  assert.ok(files.length >= 2);
  for (const f of files) assert.equal(validate(JSON.parse(readFileSync(join(ex, f), 'utf8'))), true, `${f}: ${JSON.stringify(validate.errors)}`);
});

test('invalid examples report exactly their sidecar pointers and keywords', () => {
  const files = readdirSync(ex).filter((f) => /^energy\.invalid\..*\.json$/.test(f));
  assert.ok(files.length >= 10);
  for (const f of files) {
    const want = readFileSync(join(ex, f.replace(/\.json$/, '.expect')), 'utf8').split('\n')
      .filter((l) => l.trim() && !l.startsWith('#')).map((l) => l.trim()).sort();
    assert.equal(validate(JSON.parse(readFileSync(join(ex, f), 'utf8'))), false, `${f} passed`);
    const got = normalizeAjvErrors(validate.errors).map((e) => `${e.pointer} ${e.keyword}`).sort();
    assert.deepEqual(got, want, f);
  }
});

test('normalisation: additionalProperties points at the property, if-wrappers fold away', () => {
  const errs = normalizeAjvErrors([
    { keyword: 'additionalProperties', instancePath: '/a', schemaPath: '#/additionalProperties', params: { additionalProperty: 'x/y' }, message: 'm' },
    { keyword: 'if', instancePath: '/b', schemaPath: '#/if', params: {}, message: 'm' },
    { keyword: 'required', instancePath: '/c', schemaPath: '#/required', params: { missingProperty: 'z' }, message: 'm' },
  ]);
  assert.deepEqual(errs.map((e) => `${e.pointer} ${e.keyword}`), ['/a/x~1y additionalProperties', '/c required']);
  assert.match(errs[1].message, /'z'/);
});
