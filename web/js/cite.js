// Artifacts & citation: versions read from the generated files (curves.json provenance, protocol.json, the schema,
// vendored package versions), the licences, and BibTeX for the reference dataset and this tool.
import { getEco, fetchJson, el, markdown, copyText, showError } from './common.js';

const $ = (id) => document.getElementById(id);

const BIB = [
  ['Reference dataset v1.1.0 (CC BY 4.0)', `@dataset{zhang_ecocompute_v110,
  author    = {Zhang, Hongping},
  title     = {EcoCompute: Energy Efficiency Benchmark for Quantized Language Models},
  version   = {v1.1.0},
  year      = {2026},
  publisher = {Zenodo},
  doi       = {10.5281/zenodo.19647290},
  url       = {https://doi.org/10.5281/zenodo.19647290}
}`],
  ['Reference dataset, RTX 4090 (CC BY 4.0)', `@dataset{zhang_ecocompute_rtx4090,
  author    = {Zhang, Hongping},
  title     = {EcoCompute --- LLM Inference Energy on NVIDIA RTX 4090 (Ada)},
  year      = {2026},
  publisher = {Zenodo},
  doi       = {10.5281/zenodo.22037483},
  url       = {https://doi.org/10.5281/zenodo.22037483}
}`],
];

async function main() {
  let eco, proto, schema, vendor;
  try {
    [eco, proto, schema, vendor] = await Promise.all([getEco(), fetchJson('gen/protocol.json'), fetchJson('gen/energy.schema.json'), fetchJson('vendor/versions.json')]);
  } catch (e) { showError($('versions'), e); return; }
  const prov = eco.curvesDoc.provenance;
  const rows = [
    ['curves.json', `format ${eco.curvesDoc.format} v${eco.curvesDoc.version}; ${prov.generator}; ${prov.records} records from ${prov.dataset}`],
    ['measurement protocol', `${proto.protocol_version} (eco ${proto.eco_version})`],
    ['energy.json schema', `${schema.schema_version?.const ?? schema.properties?.schema_version?.const} — ${schema.$id}`],
    ['estimator in the browser', 'eco.wasm: src/fit compiled with clang --target=wasm32-wasi from the same sources as the CLI'],
    ['vendored', Object.entries(vendor).map(([k, v]) => `${k} ${v}`).join(', ')],
  ];
  $('versions').replaceChildren(...rows.flatMap(([k, v]) => [el('dt', {}, k), el('dd', {}, v)]));
  $('licences').replaceChildren(el('ul', {},
    el('li', {}, 'Reference measurements: Creative Commons Attribution 4.0 (CC BY 4.0), Hongping Zhang; some files MIT (see the attribution below).'),
    el('li', {}, 'EcoCompute code (C library, CLI, this site): Apache-2.0.'),
    el('li', {}, `uPlot ${vendor.uplot}: MIT (`, el('a', { href: 'vendor/uplot.LICENSE' }, 'licence'), `). Ajv ${vendor['ajv-dist']} (ajv-dist): MIT.`)));
  const tool = ['EcoCompute (this tool)', `@software{ecocompute_tool,
  author  = {{EcoCompute contributors}},
  title   = {EcoCompute: measured GPU energy per token of quantized LLM weights},
  version = {${proto.eco_version}},
  note    = {measurement protocol ${proto.protocol_version}; curves from ${prov.records} records},
  license = {Apache-2.0}
}`];
  $('bibtex').replaceChildren(...[...BIB, tool].map(([title, text], i) => {
    const status = el('span', { class: 'status', 'aria-live': 'polite' });
    return el('div', {}, el('h3', {}, title), el('pre', { id: `bib-${i}` }, text),
      el('div', { class: 'copy-row' }, el('button', { type: 'button', class: 'secondary', onclick: () => copyText(text, status) }, 'Copy BibTeX'), status));
  }));
  const att = await fetch('gen/ATTRIBUTION.md');
  if (att.ok) $('attribution').innerHTML = markdown(await att.text());
  document.body.dataset.ready = '1';
}

main();
