#!/bin/bash
# Nsight Compute sections of single matvec kernels on the device (speed of light, occupancy, warp stalls,
# pipes, memory), for finding what bounds a format's kernel. Each CASE is "TAG|ENV|PRECISION|R,U|LINEAR";
# bench_matvec --shape --linear launches only that kernel, ncu profiles its first COUNT launches.
# SOURCE=1 takes Nsight Compute's full set and its SASS source page (see below).
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
     if [ -n "${SOURCE:-}" ]; then set_args=(--set full -o "$OUT/rep_$tag"); else
         set_args=(--section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats --section SchedulerStats
                   --section InstructionStats --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis); fi
     timeout 150 "$NCU" --target-processes all -k regex:matvec -c ${COUNT:-1} "${set_args[@]}" \
        "$L/ld-linux-x86-64.so.2" --library-path "$L" $B/bench_matvec --models "$MODEL" --precisions "$prec" \
        --shape "$shape" --linear "$linear"
     # SOURCE=1: the full set kept as a report, its details page as text and its SASS page (per-instruction
     # executed counts and stall samples) as CSV
     if [ -n "${SOURCE:-}" ] && [ -f "$OUT/rep_$tag.ncu-rep" ]; then
         "$NCU" -i "$OUT/rep_$tag.ncu-rep" --page details
         "$NCU" -i "$OUT/rep_$tag.ncu-rep" --page source --csv --print-source sass > "$OUT/sass_$tag.csv" 2> "$OUT/sass_$tag.err" ||
             "$NCU" -i "$OUT/rep_$tag.ncu-rep" --page source --csv > "$OUT/sass_$tag.csv" 2>> "$OUT/sass_$tag.err"
     fi) > "$OUT/ncu_$tag.txt" 2>&1
    echo "rc=$?"; grep -E "Duration|DRAM Throughput|Memory Throughput|L2 Hit|L1/TEX Hit|Achieved Occupancy|Registers Per|Issue Slots Busy|No Eligible|Warp Cycles Per Issued|ERR|rror" "$OUT/ncu_$tag.txt" | head -16
done
tar -C "$OUT" -czf "$OUT.tgz" . && rm -rf "$OUT" && mkdir -p "$OUT" && mv "$OUT.tgz" "$OUT/ncu.tgz"
