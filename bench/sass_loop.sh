#!/bin/bash
# The nf4 row decoder's steady-state loop in machine code, counted without a GPU: what one pass of its loop of steps
# issues when no row group ends (the loop with the most LDS, walked from its head to the branch back with the branches
# over the deposit taken), by opcode, and ptxas's registers and spills, for plain nf4 and nf4-dq, 16 warps x 1 chunk
# x 2/SM (the default shape).
# Instruction counts a step are what the H200 rewarded (data/h200/README.md); they are a guide, not a measurement.
#
#   bench/sass_loop.sh [LEAN ...]     (default: 16; the numbers of kNf4RowsSteps with pair sums:
#                                     other loops are not walked whole)
#
# CUOBJDUMP: the disassembler (default: cuobjdump on PATH or in the toolkit). CUDA 13's is missing on the
# development machine; Debian 12's CUDA 11.8 one (non-free package nvidia-cuda-toolkit, unpacked anywhere with
# `apt-get download` and `dpkg -x`) reads these cubins once their ELF header says the old CUDA ABI and sm_90, which
# this script writes into a copy (the code is not touched). Session 36 checked that its listing of =16's loop is
# session 35's H100 listing instruction for instruction, less the `desc[...]` operands it does not print.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
leans=("$@")
[ ${#leans[@]} -gt 0 ] || leans=(16)
nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
dis=${CUOBJDUMP:-$(command -v cuobjdump || echo "$(dirname "$nvcc")/cuobjdump")}
[ -x "$dis" ] || { echo "sass_loop: no cuobjdump (set CUOBJDUMP)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
{
    echo '#include "cuda_nf4_rows.cuh"'
    for l in "${leans[@]}"; do
        for dq in false true; do
            echo "template __global__ void eco_cuda::matvec_nf4_rows<$dq, 1, 16, 1, 2, $l>(const eco_cuda::MatvecParams);"
        done
    done
} > "$tmp/k.cu"
"$nvcc" -std=c++17 -O2 -arch=sm_90a -cubin -Xptxas -v -I "$root/include" -I "$root/src" -I "$root/src/engine/cuda" \
    "$tmp/k.cu" -o "$tmp/k.cubin" 2> "$tmp/ptxas.txt"
if ! "$dis" -sass "$tmp/k.cubin" > "$tmp/k.sass" 2> /dev/null; then
    # an older cuobjdump: the header as CUDA 11.8 wrote it (OS/ABI 0x33, ABI version 7, flags sm_90 | virtual sm_90 |
    # 64-bit addresses | unified textures)
    cp "$tmp/k.cubin" "$tmp/old.cubin"
    printf '\x33\x07' | dd of="$tmp/old.cubin" bs=1 seek=7 conv=notrunc status=none
    printf '\x5a\x05\x5a\x00' | dd of="$tmp/old.cubin" bs=1 seek=48 conv=notrunc status=none
    "$dis" -sass "$tmp/old.cubin" > "$tmp/k.sass"
fi
for l in "${leans[@]}"; do
    for dq in 0 1; do
        name="_ZN8eco_cuda15matvec_nf4_rowsILb${dq}ELi1ELi16ELi1ELi2ELi${l}EEEvNS_12MatvecParamsE"
        regs=$(awk -v f="$name" '/Compiling entry function/ {on = index($0, f) > 0} on && /spill/ {s = $5 " B spilled"} on && /Used/ {print $5 " registers, " s; exit}' "$tmp/ptxas.txt")
        awk -v f="$name" -v label="LEAN=$l $([ $dq = 1 ] && echo nf4-dq || echo nf4)" -v regs="$regs" '
            function hex(s,   v, i) {sub(/^0x/, "", s); v = 0; for (i = 1; i <= length(s); i++) v = v * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1; return v}
            /Function : / {on = ($3 == f); next}
            on && match($0, /\/\*[0-9a-f]+\*\/ +[^;]+;/) {
                s = substr($0, RSTART, RLENGTH - 1); a = substr(s, 3, index(s, "*/") - 3); t = substr(s, index(s, "*/") + 2)
                gsub(/^ +| +$/, "", t); n++; addr[n] = hex(a); text[n] = t
                op = t; sub(/^@!?U?P[0-9T]+ /, "", op); sub(/[ .].*/, "", op); opc[n] = op
            }
            END {
                best = 0
                for (i = 1; i <= n; i++) if (opc[i] == "BRA" && match(text[i], /0x[0-9a-f]+$/)) {
                    to = hex(substr(text[i], RSTART)); if (to >= addr[i]) continue
                    lds = 0; for (j = 1; j <= i; j++) if (addr[j] >= to && opc[j] == "LDS") lds++
                    # the innermost loop holding the lookups: most LDS, then the shortest (an outer loop around it
                    # may hold a few more, e.g. session 46's =24, removed, whose wait for its block's norm sum did)
                    size = addr[i] - to
                    if (lds > best + 4 || (lds >= best - 4 && best && size < bsize)) {best = lds; head = to; bsize = size}
                }
                if (!best) {print label ": no loop found"; exit}
                for (j = 1; j <= n; j++) at[addr[j]] = j
                # the path of a loop on which no row group ends: a forward branch over the deposit (stores, atomics,
                # shuffles, calls) or over the nf4-dq rows of a new row group (a division: MUFU) is taken, any other
                # falls through; to the branch back to the head
                i = at[head]; count = 0
                while (i <= n && count < 20000) {
                    count++; c[opc[i]]++
                    if (opc[i] == "EXIT") break
                    if (opc[i] == "BRA" && match(text[i], /0x[0-9a-f]+$/)) {
                        to = hex(substr(text[i], RSTART))
                        if (to == head) break
                        if (text[i] !~ /^@/) {i = at[to]; continue}
                        if (to > addr[i]) {
                            cold = 0
                            for (j = i + 1; j <= n && addr[j] < to; j++) if (opc[j] ~ /^(STG|ATOMG|RED|SHFL|CALL|MEMBAR|MUFU)$/) cold = 1
                            if (cold) {i = at[to]; continue}
                        }
                    }
                    i++
                }
                printf "%s: %d instructions a loop (head 0x%x, %d LDS); %s\n", label, count, head, c["LDS"], regs
                fflush()
                cmd = "sort -k2,2nr | paste -sd, - | sed \"s/,/, /g; s/^/    /\""
                for (k in c) printf "%s %d\n", k, c[k] | cmd
                close(cmd)
            }' "$tmp/k.sass"
    done
done
