#!/bin/bash
# One device session on the H200, in the order the results are needed: correctness of the CUDA backend
# against the CPU reference, decode speed against the roofline, design A/Bs, per-kernel profiles, engine
# variants side by side, matvec kernel shapes per format (their winners are printed as env lines, not
# applied), then `eco measure` on as many of the given models as the time left allows. Binaries come
# prebuilt in .device/bin with their libraries in .device/lib.
# usage (repo root, on the device): bench/h200.sh OUTDIR DEADLINE_S [STAGES] [MODEL...]
#   STAGES: comma list of test,testenv,engine,prev,ab,profile,variants,sbs,matvec,dims,sass,measure (default
#   test,matvec,engine,ab,measure); results go to OUTDIR/results.tgz.
#   engine: bench_engine on ENGINE_MODELS x ENGINE_PRECS (comma lists) (default: Qwen2.5 0.5B-14B and Llama-3.1-8B, every precision).
#   prev: .device/bin-prev/bench_engine (the previous build) on PREV_MODELS x PREV_PRECS, in the same call as engine.
#   profile: kernel_profile (CUPTI, per-kernel time of a token) once per PROFILE_VARIANTS entry on
#   PROFILE_MODELS x PROFILE_PRECS. sbs: bench_engine --variants (the variants held at once and decoded in turn
#   for SBS_ROUNDS rounds: ratios side by side) per SBS_JOBS entry, or SBS_VARIANTS on SBS_MODELS x SBS_PRECS. variants: bench_engine once per VARIANTS entry (";"-separated env
#   assignments, "-" for the defaults) on VARIANT_MODELS x VARIANT_PRECS. matvec: bench_matvec once per
#   MATVEC_VARIANTS entry (same form) on MATVEC_MODELS x MATVEC_PRECS, with MATVEC_ARGS (e.g. "--shape 4,1").
#   dims: bench_matvec --dims (bare linears, one kernel at a time: the steady-state share of the bandwidth) once
#   per DIMS_VARIANTS entry (same form) over DIMS (default: Qwen2.5-7B's gate_up and down, 8x gate_up, 8x down)
#   x DIMS_PRECS (default nf4,fp16); ECO_CUDA_NF4=rows puts every nf4 linear on the row-per-lane decoder.
#   sass: the nf4 decoder's machine code (SASS_FUNCS), from bench_matvec, if the image has a cuobjdump.
#   measure: eco measure per model, with MEASURE_BIN (default .device/bin/eco; .device/bin-prev/eco for a
#   same-GPU energy A/B of two builds), MEASURE_PRECS (default all five) and MEASURE_TAG appended to the file names.
#   REQUIRE_GPU=TEXT: run nothing (exit 3) unless `nvidia-smi -L` names TEXT (e.g. H200): the device service may lend
#   another card for a call that asks for one kind, and a figure is only comparable on the card it was planned for.
set -u
OUT=${1:?outdir}; DEADLINE=${2:?deadline seconds}; STAGES=${3:-test,matvec,engine,ab,measure}; shift 3 || shift $#
mkdir -p "$OUT"; W=$(mktemp -d); B=.device/bin; L=$PWD/.device/lib
export ECO_SOURCE_DIR=$PWD
# timed SECONDS PROGRAM ARGS...: a carried binary through the carried loader and libraries, under a time limit.
timed() { local t=$1; shift; timeout "$t" "$L/ld-linux-x86-64.so.2" --library-path "$L:${LD_LIBRARY_PATH:-}:/usr/lib/x86_64-linux-gnu" "$@"; }
left() { echo $((DEADLINE - SECONDS)); }
upto() { local l; l=$(left); ((l < 1)) && l=1; echo $((l < $1 ? l : $1)); } # seconds left (at least 1: timeout refuses 0 and below), at most $1
has() { [[ ",$STAGES," == *",$1,"* ]]; }
pack() { tar -C "$W" -czf "$OUT/results.tgz" . ; }
trap pack EXIT
log() { echo "[$SECONDS s] $*" | tee -a "$W/session.log"; }
vslug() { echo "${1//[^A-Za-z0-9_.,=-]/_}"; } # a variant or test glob as part of a file name

nvidia-smi --query-gpu=name,driver_version,power.limit,power.default_limit,clocks.max.sm,clocks.max.mem,clocks.sm,clocks.mem,persistence_mode,temperature.gpu,pstate --format=csv > "$W/gpu.csv" 2>&1
cat "$W/gpu.csv"
nvidia-smi -L > "$W/gpu_uuid.txt" 2>&1
cat "$W/gpu_uuid.txt"
if [ -n "${REQUIRE_GPU:-}" ] && ! grep -q -- "$REQUIRE_GPU" "$W/gpu_uuid.txt"; then
    log "REQUIRE_GPU=$REQUIRE_GPU: this machine has another card; nothing run"
    exit 3
fi

if has test; then
    log "test_cuda_backend"
    timed ${TEST_TIMEOUT:-240} $B/test_cuda_backend > "$W/test_cuda_backend.txt" 2>&1
    rc=$?; log "test_cuda_backend rc=$rc"; tail -5 "$W/test_cuda_backend.txt"
    grep -E "worst|FAILED|PASSED" "$W/test_cuda_backend.txt" | tail -8
    if [ $rc -ne 0 ]; then
        if [ -x .device/bin-prev/eco ]; then log "CUDA backend disagrees with the CPU reference: measuring with the previous, tested build"; cp .device/bin-prev/eco $B/eco
        else log "CUDA backend disagrees with the CPU reference: no measurements"; STAGES=${STAGES//measure/}; fi
    fi
fi
if has testenv; then
    # The suite again with TESTENV (";"-separated assignments) exported, one run per TESTENV_FILTERS glob (space
    # separated, default every test): a mode's coverage as the default before it becomes one. A test that sets and
    # unsets the mode's variable itself ends its reach, so such a test is left out by the filters.
    for f in ${TESTENV_FILTERS:-*}; do
        log "test_cuda_backend with ${TESTENV:?TESTENV}: $f"
        out="$W/test_cuda_backend_env_$(vslug "$f").txt"
        (IFS=';'; for a in $TESTENV; do export "$a"; done; unset IFS; export ECO_TEST_FILTER="$f"
         timed $(upto ${TEST_TIMEOUT:-240}) $B/test_cuda_backend) > "$out" 2>&1
        log "rc=$?"; grep -E "PASSED|FAILED|worst" "$out" | tail -4
    done
fi
if has engine; then
    log "bench_engine"
    timed $(upto 360) $B/bench_engine --models ${ENGINE_MODELS:-Qwen2.5-0.5B,Qwen2.5-1.5B,Qwen2.5-3B,Qwen2.5-7B,Llama-3.1-8B,Qwen2.5-14B} \
        ${ENGINE_PRECS:+--precisions $ENGINE_PRECS} > "$W/bench_engine.txt" 2>&1
    log "bench_engine rc=$?"; cat "$W/bench_engine.txt"
fi
if has prev && [ -x .device/bin-prev/bench_engine ]; then
    # The previous build's engine on the same machine, for ratios measured side by side.
    log "bench_engine, previous build"
    timed $(upto 200) .device/bin-prev/bench_engine --models ${PREV_MODELS:-Qwen2.5-0.5B,Qwen2.5-7B} --precisions ${PREV_PRECS:-fp16,int8,nf4,fp8} > "$W/bench_engine_previous_build.txt" 2>&1
    log "bench_engine previous rc=$?"; grep -E "Qwen|Llama" "$W/bench_engine_previous_build.txt"
fi
if has ab; then
    for v in "ECO_CUDA_PDL=0" "ECO_CUDA_FUSE=0" "ECO_CUDA_FP8=bits"; do
        log "bench_engine $v"
        (export "$v"; timed 70 $B/bench_engine --models Qwen2.5-7B --precisions fp16,int8,nf4,fp8) > "$W/bench_engine_$v.txt" 2>&1
        grep Qwen "$W/bench_engine_$v.txt"
    done
    log "bench_engine reference-stack"
    timed 70 $B/bench_engine --reference-stack --models Qwen2.5-7B --precisions fp16,int8-mixed,nf4 > "$W/bench_engine_reference_stack.txt" 2>&1
    grep Qwen "$W/bench_engine_reference_stack.txt"
fi
if has profile; then
    IFS=';' read -ra vs <<< "${PROFILE_VARIANTS:-${VARIANTS:--;ECO_CUDA_MATVEC=16,2,8}}"
    for v in "${vs[@]}"; do
        log "kernel_profile variant $v"
        (if [ "$v" != - ]; then export $v; fi; timed $(upto 150) $B/kernel_profile --models ${PROFILE_MODELS:-${VARIANT_MODELS:-Qwen2.5-7B}} --precisions ${PROFILE_PRECS:-fp16,int8,int8-mixed,nf4,fp8}) > "$W/kernel_profile_$(vslug "$v").txt" 2>&1
        log "kernel_profile rc=$?"; grep -E "a token|failed|error" "$W/kernel_profile_$(vslug "$v").txt"
    done
fi
if has variants; then
    IFS=';' read -ra vs <<< "${VARIANTS:--;ECO_CUDA_MATVEC=16,2,8}"
    for v in "${vs[@]}"; do
        log "bench_engine variant $v"
        (if [ "$v" != - ]; then export $v; fi; timed $(upto 200) $B/bench_engine --models ${VARIANT_MODELS:-Qwen2.5-7B} --precisions ${VARIANT_PRECS:-fp16,int8,nf4,fp8}) > "$W/bench_engine_variant_$(vslug "$v").txt" 2>&1
        grep -E "Qwen|Llama|Mistral|Phi" "$W/bench_engine_variant_$(vslug "$v").txt"
    done
fi
if has sbs; then
    # SBS_JOBS: "MODELS|PRECISIONS|VARIANTS" jobs separated by '#' (VARIANTS as bench_engine --variants takes them);
    # else one job of SBS_MODELS x SBS_PRECS x SBS_VARIANTS.
    IFS='#' read -ra jobs <<< "${SBS_JOBS:-${SBS_MODELS:-Qwen2.5-7B,Llama-3.1-8B}|${SBS_PRECS:-nf4}|${SBS_VARIANTS:?SBS_VARIANTS or SBS_JOBS}}"
    j=0
    for job in "${jobs[@]}"; do
        j=$((j + 1)); IFS='|' read -r jm jp jv <<< "$job"
        log "bench_engine side by side $j: $jm x $jp: $jv"
        timed $(upto ${SBS_TIMEOUT:-300}) $B/bench_engine --models "$jm" --precisions "$jp" --variants "$jv" --rounds ${SBS_ROUNDS:-5} > "$W/bench_engine_sbs$j.txt" 2>&1
        log "bench_engine side by side $j rc=$?"; grep -E "Qwen|Llama|Mistral|Phi| x[0-9]" "$W/bench_engine_sbs$j.txt"
    done
fi
if has matvec; then
    # MATVEC_VARIANTS: ";"-separated env assignments, "-" for the defaults (the env lines come from the defaults).
    IFS=';' read -ra vs <<< "${MATVEC_VARIANTS:--}"
    for v in "${vs[@]}"; do
        f=bench_matvec.txt; [ "$v" != - ] && f="bench_matvec_$(vslug "$v").txt"
        log "bench_matvec variant $v"
        (if [ "$v" != - ]; then export $v; fi; timed $(upto 200) $B/bench_matvec --models ${MATVEC_MODELS:-Qwen2.5-7B,Llama-3.1-8B} --precisions ${MATVEC_PRECS:-fp16,int8,int8-mixed,nf4,fp8} ${MATVEC_ARGS:-}) > "$W/$f" 2>&1
        log "bench_matvec rc=$?"; grep best "$W/$f"
    done
    grep '^ECO_CUDA_MATVEC_' "$W/bench_matvec.txt" | sed 's/ *#.*//; s/^/export /' > "$W/matvec.env"
    cat "$W/matvec.env" # recorded, not applied: measurements use the engine's defaults
    if [[ "${MATVEC_PRECS:-fp8}" == *fp8* ]]; then
        timed 60 $B/bench_matvec --models Qwen2.5-7B --precisions fp8 --fp8-bits > "$W/bench_matvec_fp8_bits.txt" 2>&1
        grep best "$W/bench_matvec_fp8_bits.txt"
    fi
fi
if has dims; then
    IFS=';' read -ra vs <<< "${DIMS_VARIANTS:--}"
    for v in "${vs[@]}"; do
        f=bench_matvec_dims.txt; [ "$v" != - ] && f="bench_matvec_dims_$(vslug "$v").txt"
        log "bench_matvec --dims variant $v"
        (if [ "$v" != - ]; then export $v; fi; timed $(upto 120) $B/bench_matvec --precisions ${DIMS_PRECS:-nf4,fp16} \
            --dims ${DIMS:-37888x3584,3584x18944,303104x3584,28672x18944}) > "$W/$f" 2>&1
        log "bench_matvec --dims rc=$?"; grep -E "^  (nf4|fp16|int8|fp8)" "$W/$f"
    done
fi
if has sass; then
    # The machine code of the matvec kernels (SASS_FUNCS: "|"-separated regular expressions over mangled names;
    # default the nf4 row-per-lane decoder), from .device/bin/bench_matvec, with a disassembler the image has: the
    # CUDA toolkit's cuobjdump, or the one Triton's wheel bundles. Each kernel's opcode counts are summed here; the
    # listing comes back for reading the step loop.
    tool=$(command -v cuobjdump || true)
    [ -z "$tool" ] && [ -x /usr/local/cuda/bin/cuobjdump ] && tool=/usr/local/cuda/bin/cuobjdump
    [ -z "$tool" ] && tool=$(python3 -c 'import triton, os; print(os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "cuobjdump"))' 2>/dev/null || true)
    if [ -n "$tool" ] && [ -x "$tool" ]; then
        log "SASS with $tool"
        timeout $(upto 120) "$tool" -sass .device/bin/bench_matvec > "$W/sass_all.txt" 2>&1
        awk -v pat="${SASS_FUNCS:-matvec_nf4_rows}" '/Function : /{keep = ($3 ~ pat)} keep' "$W/sass_all.txt" > "$W/sass.txt"
        rm -f "$W/sass_all.txt"
        awk '/Function : /{f=$3} /^[ \t]*\/\*[0-9a-f]+\*\//{op=$2; if (op ~ /^@/) op=$3; sub(/[.;].*/, "", op); n[f" "op]++}
             END {for (k in n) print n[k], k}' "$W/sass.txt" | sort -k2,2 -k1,1nr > "$W/sass_opcodes.txt"
        log "SASS: $(grep -c 'Function : ' "$W/sass.txt") kernels, $(wc -l < "$W/sass.txt") lines"
    else
        log "SASS: no cuobjdump here (toolkit or Triton); nothing disassembled"
    fi
fi
if has measure; then
    # Rough seconds per model for 5 precisions, 3 blocks of 3 s windows (load included).
    declare -A need=([Qwen2.5-0.5B]=95 [Qwen2.5-1.5B]=105 [Qwen2.5-3B]=125 [Phi-3-mini]=130 [Qwen2.5-7B]=160 [Mistral-7B-v0.3]=160 [Llama-3.1-8B]=170 [Qwen2.5-14B]=240)
    if [ "${WINDOW_S:-3}" = 2 ]; then need=([Qwen2.5-0.5B]=65 [Qwen2.5-1.5B]=75 [Qwen2.5-3B]=90 [Phi-3-mini]=85 [Qwen2.5-7B]=125 [Mistral-7B-v0.3]=125 [Llama-3.1-8B]=135 [Qwen2.5-14B]=195); fi
    np=$(echo "${MEASURE_PRECS:-fp16,int8,int8-mixed,nf4,fp8}" | tr ',' '\n' | wc -l)
    for m in "$@"; do
        n=${need[$m]:-150}
        n=$((n * (np + 1) / 6)) # the figures are for five precisions; load and idle come once
        if [ "$(left)" -lt $((n + 15)) ]; then log "skip $m: $(left) s left, needs ~$n"; continue; fi
        slug=$(echo "$m" | tr 'A-Z' 'a-z')${MEASURE_TAG:-}
        log "eco measure $m (${MEASURE_BIN:-$B/eco})"
        timed $(( $(left) - 10 )) ${MEASURE_BIN:-$B/eco} measure --model $m --precisions ${MEASURE_PRECS:-fp16,int8,int8-mixed,nf4,fp8} --blocks 3 --window ${WINDOW_S:-3} --warmups ${WARMUPS:-2} --quality-tokens ${QUALITY_TOKENS:-128} --idle 2 --tokens 256 --out $W/h200_$slug.energy.json --report $W/h200_$slug.report.md > "$W/measure_$slug.log" 2>&1
        log "eco measure $m rc=$?"; tail -12 "$W/measure_$slug.log"
    done
fi
log "done"
