#!/usr/bin/env bash
# Builds web/eco.wasm: src/fit and the pure-C pieces it needs, plus web/wasm/eco_wasm.c, for wasm32-wasi as a
# reactor (no main, no start function). Same sources as libeco, so the site computes what the CLI/API compute.
# usage: scripts/build-wasm.sh [OUT]   (default web/eco.wasm; CLANG, WASI_SYSROOT override the tools)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/web/eco.wasm}
clang=${CLANG:-clang-14}
# Debian's wasi-libc installs into /usr (include/wasm32-wasi, lib/wasm32-wasi); other distros use a sysroot dir.
sysroot=${WASI_SYSROOT:-}
if [ -z "$sysroot" ]; then
  for d in /usr /usr/share/wasi-sysroot /opt/wasi-sdk/share/wasi-sysroot; do
    [ -e "$d/include/wasm32-wasi/stdio.h" ] || [ -e "$d/include/stdio.h" -a -d "$d/lib/wasm32-wasi" ] && { sysroot=$d; break; }
  done
fi
[ -n "$sysroot" ] || { echo "build-wasm: no wasi-libc sysroot found (apt-get install wasi-libc)" >&2; exit 2; }
command -v "$clang" >/dev/null || { echo "build-wasm: $clang not found" >&2; exit 2; }

srcs=(src/fit/fit.c src/fit/estimate.c src/fit/optimize.c
      src/core/err.c src/core/stats.c src/core/record.c
      src/quant/precision.c src/model/presets.c
      web/wasm/eco_wasm.c)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
objs=()
for s in "${srcs[@]}"; do
  o="$tmp/$(basename "${s%.c}").o"
  "$clang" --target=wasm32-wasi --sysroot="$sysroot" -std=c11 -O2 \
    -D_DEFAULT_SOURCE -D_POSIX_C_SOURCE=200809L -DECO_VERSION='"wasm"' -DECO_BUILD_HASH='"wasm"' \
    -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wno-unused-parameter \
    -I"$root/include" -I"$root/src" -c "$root/$s" -o "$o"
  objs+=("$o")
done
# The estimator's structs are large (bootstrap samples, 64 anchors per curve): a 1 MiB stack leaves room.
"$clang" --target=wasm32-wasi --sysroot="$sysroot" -O2 -mexec-model=reactor -nostartfiles -Wl,--no-entry \
  -Wl,-z,stack-size=1048576 -o "$out.tmp" "${objs[@]}"
mv "$out.tmp" "$out"
echo "build-wasm: wrote $out ($(stat -c %s "$out") bytes)"
