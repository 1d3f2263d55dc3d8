#!/bin/bash
# Nsight Compute sections of single matvec kernels on the device (speed of light, occupancy, warp stalls,
# pipes, memory), for finding what bounds a format's kernel. Each CASE is "TAG|ENV|PRECISION|R,U|LINEAR";
# bench_matvec --shape --linear launches only that kernel, ncu profiles its first COUNT launches.
# SASS=1 also writes cuobjdump -sass of every matvec kernel in bench_matvec; everything is packed into
# OUTDIR/ncu.tgz (a device call returns only a few files).
# usage (repo root, on the device): bench/ncu_matvec.sh OUTDIR MODEL CASE...
set -u
OUT=${1:?outdir}; MODEL=${2:?model}; shift 2
L=$PWD/.device/lib; B=.device/bin; NCU=${NCU:-/usr/local/cuda/bin/ncu}
mkdir -p "$OUT"
if [ "${SASS:-0}" = 1 ]; then
    CUOBJDUMP=${CUOBJDUMP:-/usr/local/cuda/bin/cuobjdump}
    "$CUOBJDUMP" -sass $B/bench_matvec > "$OUT/bench_matvec.sass" 2>&1 # all kernels: grep a kernel's name
fi
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
