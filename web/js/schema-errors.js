// Ajv's errors in the C validator's terms, so the page lists the same fields `eco validate` does:
// one (JSON Pointer, keyword) per failure, at the instance that failed. Ajv also reports every failing
// branch inside `contains` and an extra `if` error per failed `then`: those are explanations of another error,
// not failures of their own, so they are folded away.
export function normalizeAjvErrors(errors) {
  const out = [];
  const seen = new Set();
  for (const e of errors || []) {
    if (e.keyword === 'if') continue;
    if (/\/contains\//.test(e.schemaPath)) continue;
    let pointer = e.instancePath || '';
    let keyword = e.keyword;
    if (keyword === 'additionalProperties' || keyword === 'unevaluatedProperties') {
      const p = e.params.additionalProperty ?? e.params.unevaluatedProperty;
      pointer += '/' + String(p).replace(/~/g, '~0').replace(/\//g, '~1');
    }
    if (keyword === 'contains' && e.params && e.params.minContains !== undefined) keyword = 'minContains';
    if (keyword === 'contains' && e.params && e.params.maxContains !== undefined) keyword = 'maxContains';
    let message = e.message || '';
    if (e.keyword === 'required') message = `missing required property '${e.params.missingProperty}'`;
    const k = `${pointer} ${keyword}`;
    if (seen.has(k)) continue;
    seen.add(k);
    out.push({ pointer: pointer || '/', keyword, message, schemaPath: e.schemaPath });
  }
  return out;
}
