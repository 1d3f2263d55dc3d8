#!/usr/bin/env bash
# scripts/build-web.sh builds a complete, self-contained site: every generated file present, eco.wasm imports
# only the three WASI stubs the loader provides, protocol.json holds libeco's defaults, and nothing in the
# site refers to another origin (the site must work offline).
set -euo pipefail
: "${ECO_BIN:?}" "${ECO_SOURCE_DIR:?}" "${ECO_BINARY_DIR:?}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
export ASAN_OPTIONS=detect_leaks=0

"$ECO_BIN" import --db "$tmp/eco.db" "$ECO_SOURCE_DIR/data/reference" >/dev/null 2>&1
"$ECO_BIN" fit --db "$tmp/eco.db" --out "$tmp/curves.json" >/dev/null 2>&1
bash "$ECO_SOURCE_DIR/scripts/build-web.sh" --build "$ECO_BINARY_DIR" --curves "$tmp/curves.json" --db "$tmp/eco.db" --out "$tmp/site" >/dev/null

for f in index.html estimate.html replications.html methodology.html cite.html corrections.html corrections.json eco.wasm \
         js/eco-wasm.js css/site.css vendor/uPlot.iife.min.js vendor/uPlot.min.css vendor/ajv2020.min.js vendor/versions.json \
         gen/curves.json gen/measurements.json gen/energy.schema.json gen/energy.example.valid.json gen/protocol.json \
         gen/methodology.md gen/ATTRIBUTION.md; do
  [ -s "$tmp/site/$f" ] || fail "site lacks $f"
done
[ ! -e "$tmp/site/wasm" ] && [ ! -e "$tmp/site/tools" ] || fail "build sources copied into the site"
cmp -s "$tmp/site/gen/energy.schema.json" "$ECO_SOURCE_DIR/data/schema/energy.schema.json" || fail "schema is not the validator's file"
cmp -s "$tmp/site/gen/curves.json" "$tmp/curves.json" || fail "curves.json differs from eco fit's"

node -e '
const fs = require("fs");
const m = new WebAssembly.Module(fs.readFileSync(process.argv[1]));
const imports = WebAssembly.Module.imports(m).map((i) => `${i.module}.${i.name}`).sort().join(",");
const want = "wasi_snapshot_preview1.fd_close,wasi_snapshot_preview1.fd_seek,wasi_snapshot_preview1.fd_write";
if (imports !== want) { console.error("eco.wasm imports " + imports); process.exit(1); }
const ex = WebAssembly.Module.exports(m).map((e) => e.name);
for (const e of ["memory", "eco_wasm_estimate", "eco_wasm_optimize", "eco_wasm_curve_series", "eco_wasm_info"])
  if (!ex.includes(e)) { console.error("eco.wasm lacks export " + e); process.exit(1); }
const p = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
if (!/^eco-measure\//.test(p.protocol_version) || !(p.defaults.tokens > 0) || !(p.defaults.min_window_s > 0)) {
  console.error("protocol.json: " + JSON.stringify(p)); process.exit(1);
}' "$tmp/site/eco.wasm" "$tmp/site/gen/protocol.json" || fail "eco.wasm or protocol.json"

# protocol.json carries the C header's version string
v=$(sed -n 's/^#define ECO_PROTOCOL_VERSION "\(.*\)"/\1/p' "$ECO_SOURCE_DIR/include/eco/measure.h")
grep -q "\"protocol_version\": \"$v\"" "$tmp/site/gen/protocol.json" || fail "protocol.json version is not $v"

# offline: no page, script or stylesheet of ours loads anything from another origin
if grep -nE "(src|href)=\"(https?:)?//" "$tmp/site"/*.html; then fail "an HTML file loads from another origin"; fi
if grep -nE "(fetch|import)\(['\"\`](https?:)?//|from ['\"](https?:)?//" "$tmp/site"/js/*.js; then fail "a script loads from another origin"; fi
if grep -nE "url\((['\"])?(https?:)?//" "$tmp/site"/css/*.css "$tmp/site"/vendor/*.css; then fail "a stylesheet loads from another origin"; fi
echo "web_build: ok"
