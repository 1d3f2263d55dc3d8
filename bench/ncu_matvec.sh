#!/bin/bash
# Nsight Compute sections of single matvec kernels on the device (speed of light, occupancy, warp stalls,
# pipes, memory), for finding what bounds a format's kernel. Each CASE is "TAG|ENV|PRECISION|R,U|LINEAR";
# bench_matvec --shape --linear launches only that kernel, ncu profiles its first COUNT launches.
# SASS_FUNCS="mangled names" also writes those kernels' cuobjdump -sass; everything is packed into
# OUTDIR/ncu.tgz (a device call returns only a few files).
# usage (repo root, on the device): bench/ncu_matvec.sh OUTDIR MODEL CASE...
set -u
OUT=${1:?outdir}; MODEL=${2:?model}; shift 2
L=$PWD/.device/lib; B=.device/bin; NCU=${NCU:-/usr/local/cuda/bin/ncu}
mkdir -p "$OUT"
for f in ${SASS_FUNCS:-}; do # mangled names, e.g. _ZN8eco_cuda6matvecILi3ELb0ELi4ELi1EEEvNS_12MatvecParamsE
    ${CUOBJDUMP:-/usr/local/cuda/bin/cuobjdump} -sass -fun "$f" $B/bench_matvec > "$OUT/$f.sass" 2>&1
done
for c in "$@"; do
    IFS='|' read -r tag envs prec shape linear <<< "$c"
    echo "== $tag: $MODEL $prec R,U=$shape $linear ${envs}"
    (if [ "$envs" != - ]; then export $envs; fi
     timeout 150 "$NCU" --target-processes all -k regex:matvec -c ${COUNT:-1} \
        --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats --section SchedulerStats \
        --section InstructionStats --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
        "$L/ld-linux-x86-64.so.2" --library-path "$L" $B/bench_matvec --models "$MODEL" --precisions "$prec" \
        --shape "$shape" --linear "$linear") > "$OUT/ncu_$tag.txt" 2>&1
    echo "rc=$?"; grep -E "Duration|DRAM Throughput|Memory Throughput|Achieved Occupancy|Theoretical Occupancy|Registers Per|Issue Slots Busy|No Eligible|Warp Cycles Per Issued|ERR|rror" "$OUT/ncu_$tag.txt" | head -14
done
tar -C "$OUT" -czf "$OUT.tgz" . && rm -rf "$OUT" && mkdir -p "$OUT" && mv "$OUT.tgz" "$OUT/ncu.tgz"
