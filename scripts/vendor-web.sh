#!/usr/bin/env bash
# Copies the site's third-party browser files from node_modules (installed by `npm ci`) into web/vendor/,
# so the site never loads anything from a CDN and works offline. web/vendor/ is generated and git-ignored.
# usage: scripts/vendor-web.sh [SITE_DIR]   (default web)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
site=${1:-$root/web}
nm=$root/node_modules
files=(uplot/dist/uPlot.iife.min.js uplot/dist/uPlot.min.css uplot/LICENSE
       ajv-dist/dist/ajv2020.min.js)
# ajv-dist ships no LICENSE file; its package.json says MIT (shown on the Artifacts page)
mkdir -p "$site/vendor"
for f in "${files[@]}"; do
  [ -f "$nm/$f" ] || { echo "vendor-web: $nm/$f missing (run npm ci)" >&2; exit 2; }
  pkg=${f%%/*}
  case "$f" in */LICENSE) dst="$site/vendor/$pkg.LICENSE" ;; *) dst="$site/vendor/$(basename "$f")" ;; esac
  cp "$nm/$f" "$dst"
done
# versions, for the Artifacts page
node -e '
const fs = require("fs"), out = {};
for (const p of ["uplot", "ajv-dist"]) out[p] = JSON.parse(fs.readFileSync(process.argv[1] + "/" + p + "/package.json", "utf8")).version;
fs.writeFileSync(process.argv[2], JSON.stringify(out, null, 1) + "\n");' "$nm" "$site/vendor/versions.json"
echo "vendor-web: $site/vendor ready"
