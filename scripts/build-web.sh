#!/usr/bin/env bash
# Everything the site needs besides its checked-in files: vendored npm assets (web/vendor/), eco.wasm, and the
# generated data under gen/ (curves.json, measurements.json, the energy.json schema, protocol.json,
# methodology.md). All of it is git-ignored and rebuilt from the sources, so nothing is hand-copied.
# usage: scripts/build-web.sh [--build DIR] [--curves FILE] [--db FILE] [--out SITE_DIR]
#   --build   CMake build dir with eco and libeco.a (default build)
#   --curves  curves.json from `eco fit` (default var/curves.json when present)
#   --db      store for the static measurements table (default var/eco.db when present)
#   --out     write a complete site there (copy of web/ + generated files) instead of generating in web/
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build curves="" db="" out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --curves) curves=$2; shift 2 ;;
    --db) db=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) echo "build-web: unknown option $1" >&2; exit 2 ;;
  esac
done
[ -n "$curves" ] || { [ -f "$root/var/curves.json" ] && curves=$root/var/curves.json; } || true
[ -n "$db" ] || { [ -f "$root/var/eco.db" ] && db=$root/var/eco.db; } || true

site=$root/web
if [ -n "$out" ]; then
  mkdir -p "$out"
  (cd "$root/web" && tar cf - --exclude=./gen --exclude=./vendor --exclude=./eco.wasm --exclude=./tools --exclude=./wasm .) | (cd "$out" && tar xf -)
  site=$(cd "$out" && pwd)
fi
"$root/scripts/vendor-web.sh" "$site"
"$root/scripts/build-wasm.sh" "$site/eco.wasm"

gen=$site/gen
mkdir -p "$gen"
cp "$root/data/schema/energy.schema.json" "$gen/energy.schema.json"
cp "$root/data/schema/examples/energy.example.valid.json" "$gen/energy.example.valid.json"
# always present, so the page never requests a missing file
if [ -f "$root/docs/METHODOLOGY.md" ]; then cp "$root/docs/METHODOLOGY.md" "$gen/methodology.md"
else printf '*docs/METHODOLOGY.md is not in this checkout yet.*\n' >"$gen/methodology.md"; fi
cp "$root/data/reference/ATTRIBUTION.md" "$gen/ATTRIBUTION.md"
[ -z "$curves" ] || cp "$curves" "$gen/curves.json"

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0}
if [ -n "$db" ] && [ -x "$build/eco" ]; then
  "$build/eco" export --db "$db" --format json >"$gen/measurements.json.tmp" && mv "$gen/measurements.json.tmp" "$gen/measurements.json"
fi

# protocol.json from the C constants: link the tiny tool against this build's libeco (same flags as the build).
if [ -f "$build/libeco.a" ]; then
  cache=$build/CMakeCache.txt
  cc=$(sed -n 's/^CMAKE_C_COMPILER:[A-Z]*=//p' "$cache" 2>/dev/null); cc=${cc:-cc}
  flags=()
  grep -q '^ECO_SANITIZE:BOOL=ON' "$cache" 2>/dev/null && flags+=(-fsanitize=address,undefined)
  libs=("$build/libeco.a")
  if [ -f "$build/libeco_cuda.a" ]; then
    cudalib=$(sed -n 's/^CUDAToolkit_LIBRARY_DIR:[A-Z]*=//p' "$cache")
    libs+=("$build/libeco_cuda.a" "$build/libeco.a" -L"$cudalib" -lcudart -lstdc++)
  fi
  tool=$(mktemp)
  if "$cc" -std=c11 -D_DEFAULT_SOURCE -D_POSIX_C_SOURCE=200809L -DECO_VERSION="\"$(sed -n 's/^CMAKE_PROJECT_VERSION:[A-Z]*=//p' "$cache")\"" \
       "${flags[@]}" -I"$root/include" "$root/web/tools/protocol_json.c" -o "$tool" "${libs[@]}" \
       $(pkg-config --libs jansson libmicrohttpd sqlite3 libpcre2-8) -lpthread -ldl -lm; then
    "$tool" >"$gen/protocol.json.tmp" && mv "$gen/protocol.json.tmp" "$gen/protocol.json"
  else
    echo "build-web: could not link web/tools/protocol_json.c against $build/libeco.a: gen/protocol.json not updated" >&2
  fi
  rm -f "$tool"
else
  echo "build-web: $build/libeco.a not found: gen/protocol.json not written (build first)" >&2
fi
echo "build-web: site ready in $site"
