#!/bin/bash
# Session 33's device calls: on an H200 the side by side of the block sums (steps 13) and four rows a lane for
# gate_up against the default on Qwen2.5-7B, then the all-format decode table; on another card (unless
# REQUIRE_H200 is set: then nothing) the tests, a kernel profile of the block sums and the side by side on 7-8B.
set -u
OUT=${1:?outdir}
V1="ECO_CUDA_NF4_ROWS_SHAPE=8,1,2,4 ECO_CUDA_NF4_ROWS_SMALL=16,1,2,2,100"
if nvidia-smi -L | grep -q H200; then
    SBS_JOBS="Qwen2.5-7B|nf4|-;ECO_CUDA_NF4_ROWS_LEAN=13;$V1" SBS_ROUNDS=3 SBS_TIMEOUT=120 bench/h200.sh "$OUT/sbs" 120 sbs
    L=.device/lib
    timeout 380 "$L/ld-linux-x86-64.so.2" --library-path "$L:${LD_LIBRARY_PATH:-}:/usr/lib/x86_64-linux-gnu" .device/bin/bench_engine \
        --models Qwen2.5-0.5B,Qwen2.5-1.5B,Qwen2.5-3B,Qwen2.5-7B,Llama-3.1-8B,Qwen2.5-14B > "$OUT/bench_engine_all.txt" 2>&1
    echo "table rc=$?"; cat "$OUT/bench_engine_all.txt"
elif [ -z "${REQUIRE_H200:-}" ]; then
    PROFILE_VARIANTS="-;ECO_CUDA_NF4_ROWS_LEAN=13" PROFILE_MODELS=Qwen2.5-7B PROFILE_PRECS=nf4 \
    SBS_JOBS="Qwen2.5-7B,Llama-3.1-8B|nf4|-;ECO_CUDA_NF4_ROWS_LEAN=13" SBS_ROUNDS=3 SBS_TIMEOUT=150 bench/h200.sh "$OUT" 420 test,profile,sbs
fi
