#!/bin/bash
# Packs what bench/h200.sh runs on the device machine into .device/ (carried by the device tool, 64 MiB at most):
# the GPU binaries of the release build, stripped, in .device/bin, and every library they load but the driver's
# (libcuda, libnvidia-ml: the device has its own) in .device/lib, with the loader the binaries are run through.
# usage (repo root, after `make build`): scripts/pack_device.sh [BUILD_DIR]
set -euo pipefail
BUILD=${1:-build}
bins=("$BUILD/bench/bench_engine" "$BUILD/bench/kernel_profile" "$BUILD/tests/test_cuda_backend" "$BUILD/eco")
for b in "${bins[@]}"; do
    [ -x "$b" ] || { echo "pack_device: $b is missing: run 'make build' (with nvcc and CUPTI) first" >&2; exit 1; }
done
# .device is build output: keep it out of commits without touching .gitignore's tracked text
mkdir -p .git/info
grep -qxF '/.device/' .git/info/exclude 2>/dev/null || echo '/.device/' >> .git/info/exclude
rm -rf .device/bin .device/lib
mkdir -p .device/bin .device/lib
cp "${bins[@]}" .device/bin/
strip .device/bin/*
for b in .device/bin/*; do ldd "$b"; done |
    awk '/=>/ {print $3} /ld-linux/ {print $1}' | sort -u | grep -v 'libcuda\.so\|libnvidia-ml' |
    while read -r lib; do cp -L "$lib" .device/lib/; done
[ -x .device/lib/ld-linux-x86-64.so.2 ] || { echo "pack_device: the loader was not found among the libraries" >&2; exit 1; }
size=$(du -sm .device | cut -f1)
echo "pack_device: .device is ${size} MiB (the device tool carries 64 MiB at most)"
[ "$size" -le 64 ] || { echo "pack_device: over the limit: leave a binary out" >&2; exit 1; }
