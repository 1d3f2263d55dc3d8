// nf4 with a row per lane: the weights of 32·R rows interleaved so that one coalesced 512-byte load gives
// every lane 16 bytes (32 weights) of its own row at the same columns, and the matvec streams the whole
// linear as one contiguous run split evenly over all warps (stream-K).
//
// Why: the per-lane-table decoder (matvec_nf4_lanes) spends half its instructions on bookkeeping: each lane
// loads its own x fragment, the warp sums every row with shuffles, and a row of 3584 columns (3.5 warp steps)
// leaves a last step half idle (session 8, Nsight Compute: 3.5 instructions a weight at 44% of the roofline).
// Here x is the same for the whole warp (uniform loads served by L1), a lane owns its rows to the end (no
// shuffle sums), and a warp's share of the linear is a byte range, so no step is partial. The decode is the
// lane decoder's: one conflict-free lookup in the lane's copy of the byte-pair table per two weights, HFMA2.
//
// Layout (bytes unchanged, only their order): row group g (32·R slots), chunk c (32 columns), row r (0..R),
// lane l: the 16 bytes of slot r·32 + l at chunk c are uint4 number ((g·C + c)·R + r)·32 + l, C = cols / 32.
// The fp32 absmax (nf4-dq: its code byte) of block b of that slot: ((g·B + b)·R + r)·32 + l, B = cols / blocksize.
// The flat chunk index f = g·C + c therefore addresses both (absmax block f >> shift) with no division.
// Slots map to rows by the epilogue: consecutive rows, or for a paired epilogue (SwiGLU, RoPE) lanes l and
// l + 16 hold the two rows of one unit, so the pair meets in one shuffle. Spare slots (past the last row or
// unit) hold zero bytes and write nothing.
//
// A warp's range of chunks may start or end inside a row group: it deposits that group's partial sums in a
// slot of its own, and the last warp to arrive (an arrival counter per group, reset by that warp) adds the
// slots in order, so the sum does not depend on timing, and runs the epilogue. A residual add (o, down)
// instead adds each warp's part to y atomically: nothing to wait for at the end of the kernel.
#pragma once

#include "cuda_kernels.cuh"

namespace eco_cuda {

constexpr int kNf4RowsR = 2; // rows per lane: one x chunk serves both
constexpr int kNf4RowsU = 2; // chunks per row and step of the ring kernel: with R 2, 128 weights a lane
constexpr int kNf4RegsU = 4; // of the register-prefetch kernel (ECO_CUDA_NF4_RING=0)

// The slot -> row mapping an epilogue needs: a residual add and plain stores share consecutive rows.
__host__ __device__ __forceinline__ int rows_map(int epilogue) { return paired_epilogue(epilogue) ? epilogue : EP_STORE; }

// The row in slot j (0 .. 32·R) of row group g, or -1 for a spare slot. map: EP_STORE (consecutive rows),
// EP_SWIGLU or EP_ROPE_KV (units of two rows, lanes l and l + 16 of one r).
__host__ __device__ __forceinline__ int nf4_rows_slot_row(const MatvecParams &p, int map, int R, int g, int j)
{
    if (map == EP_SWIGLU || map == EP_ROPE_KV) {
        int r = j / kWarp, lane = j % kWarp, unit = g * 16 * R + r * 16 + lane % 16, second = lane / 16;
        int units = map == EP_SWIGLU ? p.pair_offset : p.rows / 2;
        if (unit >= units) return -1;
        if (map == EP_SWIGLU) return unit + (second ? p.pair_offset : 0);
        int half = p.head_dim / 2, head = unit / half;
        return head * p.head_dim + unit % half + (second ? half : 0);
    }
    int row = g * kWarp * R + j;
    return row < p.rows ? row : -1;
}

__host__ __device__ __forceinline__ int nf4_rows_groups(const MatvecParams &p, int map, int R)
{
    int slots = kWarp * R;
    if (map == EP_SWIGLU) return (p.pair_offset + slots / 2 - 1) / (slots / 2);
    if (map == EP_ROPE_KV) return (p.rows / 2 + slots / 2 - 1) / (slots / 2);
    return (p.rows + slots - 1) / slots;
}

// The warps whose shares of the flat chunk order (per chunks each, from warp 0) cover row group g.
__host__ __device__ __forceinline__ void rows_group_warps(long g, long chunks, long per, long *first, long *last)
{
    *first = g * chunks / per;
    *last = ((g + 1) * chunks - 1) / per;
}

// How `warps` warps split a linear of `groups` row groups of `chunks` chunks: each warp's share (whole steps
// of u chunks, at least min_steps), the warps that get one, and the most warps a group is split between (its
// deposit slots).
struct RowsShare {
    long per, used;
    int slots;
};

inline RowsShare nf4_rows_share(long groups, long chunks, long warps, int min_steps, long U)
{
    long total = groups * chunks, per = (total + warps - 1) / warps;
    per = (per + U - 1) / U * U;
    if (per < min_steps * U) per = min_steps * U;
    RowsShare sh{per, (total + per - 1) / per, 1};
    for (long g = 0; g < groups; g++) {
        long first, last;
        rows_group_warps(g, chunks, per, &first, &last);
        if (last - first + 1 > sh.slots) sh.slots = (int)(last - first + 1);
    }
    return sh;
}

// Row-major packed nf4 (cols / 2 bytes a row) into the interleaved order, one thread per 16 bytes; and the
// per-block absmax (nf4) or its code bytes (nf4-dq, absmax_q) likewise. Spare slots get zeros.
__global__ void interleave_nf4_rows(const uint8_t *__restrict__ w, uint8_t *__restrict__ w_out, const float *__restrict__ absmax,
                                    float *__restrict__ absmax_out, const uint8_t *__restrict__ codes, uint8_t *__restrict__ codes_out,
                                    const MatvecParams p, int map, int R, int groups, int blocksize)
{
    size_t C = (size_t)p.cols / 32, B = (size_t)p.cols / blocksize, slots = (size_t)kWarp * R;
    size_t n = (size_t)groups * C * slots, nb = (size_t)groups * B * slots;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n + nb; i += (size_t)gridDim.x * blockDim.x) {
        bool block = i >= n;
        size_t k = block ? i - n : i, per_group = (block ? B : C) * slots;
        int g = (int)(k / per_group), j = (int)(k % slots);
        size_t at = k % per_group / slots; // chunk or block within the row
        int row = nf4_rows_slot_row(p, map, R, g, j);
        if (!block) {
            uint4 v = make_uint4(0, 0, 0, 0);
            if (row >= 0) v = *reinterpret_cast<const uint4 *>(w + (size_t)row * (p.cols / 2) + at * 16);
            *reinterpret_cast<uint4 *>(w_out + k * 16) = v;
        } else if (absmax) {
            absmax_out[k] = row >= 0 ? absmax[(size_t)row * B + at] : 0.f;
        } else {
            codes_out[k] = row >= 0 ? codes[(size_t)row * B + at] : 0;
        }
    }
}

// ---- The lookup ----
// The lane decoder's address (byte << 8 | lane · 4) plus the table's shared-memory base cost an add per weight
// byte here (Nsight Compute: an IMAD.IADD beside every PRMT, the compiler kept the base in a general register).
// With the table at a 64 KB boundary of the shared window, the byte permute writes the base's bits 16-23 as
// well (lane_base: lane · 4 | base >> 16 << 8; byte 3 comes from its zero byte 2), and the load takes the
// address as it is. Aligned: the kernel checks, and otherwise takes the address-plus-base path (also with
// ECO_CUDA_NF4_ABS=0, for tests and A/Bs).
__device__ __forceinline__ unsigned lds_u32(unsigned addr)
{
    unsigned v;
    asm volatile("ld.shared.b32 %0, [%1];" : "=r"(v) : "r"(addr));
    return v;
}

template <bool Absolute>
__device__ __forceinline__ float dot32_rows(uint4 w, const uint4 (&xh)[4], const unsigned char *table, unsigned lane_base)
{
    if constexpr (!Absolute) return dot32_nf4_pairs(w, xh, table, lane_base);
    return dot32_pairs(w, xh, [=](unsigned word, int k) { return lds_u32(__byte_perm(word, lane_base, 0x6504u | ((unsigned)k << 4))); });
}

// ---- The stage ring ----
// Each warp streams its range through a ring of kNf4RowsStages stages in shared memory, filled with cp.async
// kNf4RowsStages - 1 steps ahead of the step it decodes: the bytes in flight no longer cost registers (the
// register-prefetch version of session 9 kept one step, 2 KB a warp, in flight and stalled on HBM latency:
// Qwen2.5-7B gate_up at 66% of the bandwidth, Nsight Compute: long-scoreboard stalls on the weights and x).
// A stage: the weights of U chunks x R rows (lane l's 16 bytes at uint4 (u·R + r)·32 + l, the order they
// have in HBM), then the absmax of its blocks (float per lane; nf4-dq: the nested scale per lane, then the
// code bytes). Every lane reads back only what it copied itself, except the nf4-dq code bytes (a lane copies
// four lanes' worth): a cp.async.wait_group per lane, and __syncwarp for those.
constexpr int kNf4RowsWarps = 16; // one block per SM: one 64 KB table fill per SM for 16 warps
constexpr int kNf4RingOffset = kNf4TableBytes + kNf4DmapBytes; // the rings start after the table and the dynamic map

template <bool DoubleQuant, int AmEvery> struct RowsRing {
    static constexpr int am_groups = kNf4RowsU / AmEvery; // absmax entries per row and step
    static constexpr int w_bytes = kNf4RowsU * kNf4RowsR * kWarp * 16;
    static constexpr int am_bytes = am_groups * kNf4RowsR * kWarp * 4;
    static constexpr int code_bytes = DoubleQuant ? am_groups * kNf4RowsR * kWarp : 0;
    static constexpr int stage_bytes = w_bytes + am_bytes + code_bytes;
};

// A stage's bytes for the host (am_every: 1 or 2).
constexpr int nf4_rows_stage_bytes(bool dq, int am_every)
{
    return dq ? (am_every == 1 ? RowsRing<true, 1>::stage_bytes : RowsRing<true, 2>::stage_bytes)
              : (am_every == 1 ? RowsRing<false, 1>::stage_bytes : RowsRing<false, 2>::stage_bytes);
}

__device__ __forceinline__ void cp_async16(void *smem, const void *g)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"((unsigned)__cvta_generic_to_shared(smem)), "l"(g) : "memory");
}
__device__ __forceinline__ void cp_async4(void *smem, const void *g)
{
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"((unsigned)__cvta_generic_to_shared(smem)), "l"(g) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N> __device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory"); }

// Starts the copy of the step at flat chunk f (chunk c of its row group; rowB: nf4-dq) into `stage`.
template <bool DoubleQuant, int AmEvery>
__device__ __forceinline__ void rows_stage_issue(const MatvecParams &p, int f, int c, int lane, const int (&rowB)[kNf4RowsR], unsigned char *stage)
{
    using Ring = RowsRing<DoubleQuant, AmEvery>;
    constexpr int R = kNf4RowsR;
    const uint4 *w = reinterpret_cast<const uint4 *>(p.w) + (size_t)f * R * kWarp + lane;
    uint4 *sw = reinterpret_cast<uint4 *>(stage) + lane;
#pragma unroll
    for (int i = 0; i < kNf4RowsU * R; i++) cp_async16(sw + i * kWarp, w + i * kWarp);
    float *sam = reinterpret_cast<float *>(stage + Ring::w_bytes) + lane;
#pragma unroll
    for (int a = 0; a < Ring::am_groups; a++) {
        int u = a * AmEvery, b = (f + u) >> p.chunk_shift;
#pragma unroll
        for (int r = 0; r < R; r++) {
            size_t at = ((size_t)b * R + r) * kWarp + lane;
            if constexpr (DoubleQuant) {
                // the nested scale: one per 256 blocks of the row-major order (row·B + block within the row)
                cp_async4(sam + (a * R + r) * kWarp, p.absmax_q_scale + ((rowB[r] + ((c + u) >> p.chunk_shift)) >> 8));
                if (lane % 4 == 0) cp_async4(stage + Ring::w_bytes + Ring::am_bytes + (a * R + r) * kWarp + lane, p.absmax_q + at);
            } else {
                cp_async4(sam + (a * R + r) * kWarp, p.absmax + at);
            }
        }
    }
}

// Row r's index times B (blocks a row) for the slots of this lane in group g: the nf4-dq nested scale index.
template <int R> __device__ __forceinline__ void rows_group_rowB(const MatvecParams &p, int g, int lane, int (&rowB)[R])
{
    int B = (p.cols / 32) >> p.chunk_shift;
#pragma unroll
    for (int r = 0; r < R; r++) {
        int row = nf4_rows_slot_row(p, rows_map(p.epilogue), R, g, r * kWarp + lane);
        rowB[r] = (row < 0 ? 0 : row) * B;
    }
}

// Starts the copy of the step at flat chunk f into `stage`, then moves the issuing side's chunk ic and group ig
// (and for nf4-dq its rows' nested-scale index) to the next step.
template <bool DoubleQuant, int AmEvery>
__device__ __forceinline__ void rows_stage_issue_next(const MatvecParams &p, int f, int &ic, int &ig, int lane, int (&rowB)[kNf4RowsR],
                                                      unsigned char *stage)
{
    rows_stage_issue<DoubleQuant, AmEvery>(p, f, ic, lane, rowB, stage);
    if ((ic += kNf4RowsU) == p.cols / 32) {
        ic = 0;
        ig++;
        if constexpr (DoubleQuant) rows_group_rowB<kNf4RowsR>(p, ig, lane, rowB);
    }
}

// The finished dot products of group g: lane l's rows r.
template <int R> __device__ __forceinline__ void rows_finish(const MatvecParams &p, int g, int lane, const float (&v)[R])
{
    bool paired = paired_epilogue(p.epilogue);
    int map = rows_map(p.epilogue);
#pragma unroll
    for (int r = 0; r < R; r++) {
        float other = __shfl_xor_sync(0xffffffffu, v[r], 16);
        int row = nf4_rows_slot_row(p, map, R, g, r * kWarp + lane);
        if (row < 0) continue;
        if (paired) {
            if (lane >= 16) continue;
            int unit = g * 16 * R + r * 16 + lane;
            const int pr[2] = {row, nf4_rows_slot_row(p, map, R, g, r * kWarp + lane + 16)};
            const float pv[2] = {v[r], other};
            finish_rows<2>(p, unit, pr, pv);
        } else {
            const int pr[1] = {row};
            const float pv[1] = {v[r]};
            finish_rows<1>(p, row, pr, pv);
        }
    }
}

// The exact fallback for this warp's chunks [from, to) of group g: fp32 codes and products, weights and x
// read again. Taken when a lane's sum is not finite, which an fp16 partial overflowing makes it (x near the
// fp16 limit); one check per group and warp instead of one per chunk.
template <int R>
__device__ __noinline__ void rows_redo_fp32(const MatvecParams p, int g, int from, int to, int lane, float *acc, const float *dmap)
{
    const int C = p.cols / 32;
    int rowB[R] = {};
    rows_group_rowB<R>(p, g, lane, rowB);
    for (int r = 0; r < R; r++) acc[r] = 0.f;
    const uint4 *w = reinterpret_cast<const uint4 *>(p.w), *x = reinterpret_cast<const uint4 *>(p.x);
    for (int f = from; f < to; f++) {
        int c = f - g * C, b = f >> p.chunk_shift;
        uint4 xh[4];
        for (int i = 0; i < 4; i++) xh[i] = __ldcg(x + (size_t)c * 4 + i);
        for (int r = 0; r < R; r++) {
            size_t at = ((size_t)b * R + r) * kWarp + lane;
            float am = p.absmax_q ? dmap[p.absmax_q[at]] * p.absmax_q_scale[(rowB[r] + (c >> p.chunk_shift)) >> 8] + p.absmax_offset
                                  : p.absmax[at];
            acc[r] = fmaf(dot16_nf4_fp32(w[((size_t)f * R + r) * kWarp + lane], xh[0], xh[1], xh[2], xh[3]), am, acc[r]);
        }
    }
}

// Group g's partial sums from this warp's part of it (chunks [from, to) of the flat order); the whole group
// when the warp covered all of it. Otherwise the last of the group's warps to arrive adds the deposits.
template <int R>
__device__ __forceinline__ void rows_deposit(const MatvecParams &p, int g, int warp_id, int lane, const float (&acc)[R])
{
    long first, last;
    rows_group_warps(g, p.cols / 32, p.chunks_per_warp, &first, &last);
    if (first == last) {
        rows_finish<R>(p, g, lane, acc);
        return;
    }
    if (p.epilogue == EP_ADD || p.epilogue == EP_ATOMIC_ADD) {
        // a residual add is linear: each warp adds its part to y itself (the summation order then varies
        // from run to run, as with the other kernels' column slices), and no warp waits for the group's last
#pragma unroll
        for (int r = 0; r < R; r++) {
            int row = nf4_rows_slot_row(p, EP_STORE, R, g, r * kWarp + lane);
            if (row >= 0) atomicAdd(p.y + row, acc[r]);
        }
        return;
    }
    int n = (int)(last - first + 1);
    float *slot = p.partials + ((size_t)g * p.slots + (warp_id - first)) * R * kWarp;
#pragma unroll
    for (int r = 0; r < R; r++) __stcg(slot + r * kWarp + lane, acc[r]);
    __threadfence();
    __syncwarp();
    int arrived = 0;
    if (lane == 0) arrived = atomicAdd(p.arrivals + g, 1);
    arrived = __shfl_sync(0xffffffffu, arrived, 0);
    if (arrived != n - 1) return;
    __threadfence();
    float v[R];
#pragma unroll
    for (int r = 0; r < R; r++) v[r] = 0.f;
    // in slot order (the same sum whichever warp arrives last), eight slots' loads in flight at a time: a
    // group split between 37 warps (Qwen2.5-7B down) read one by one cost 37 L2 round trips
    const float *all = p.partials + (size_t)g * p.slots * R * kWarp;
    constexpr int kBatch = 8;
    for (int s0 = 0; s0 < n; s0 += kBatch) {
        float t[kBatch][R];
#pragma unroll
        for (int k = 0; k < kBatch; k++)
#pragma unroll
            for (int r = 0; r < R; r++) t[k][r] = s0 + k < n ? __ldcg(all + ((size_t)(s0 + k) * R + r) * kWarp + lane) : 0.f;
#pragma unroll
        for (int k = 0; k < kBatch; k++)
#pragma unroll
            for (int r = 0; r < R; r++) v[r] += t[k][r];
    }
    if (lane == 0) p.arrivals[g] = 0; // for the next launch (it reads it only after this grid completes)
    rows_finish<R>(p, g, lane, v);
}

// The decoding loop of matvec_nf4_rows (Absolute: the table at a 64 KB boundary, see dot32_rows).
template <bool DoubleQuant, int AmEvery, int Stages, bool Absolute>
__device__ __forceinline__ void rows_loop(const MatvecParams &p, int f0, int f1, int g, int c, int ic, int ig, int (&rowB)[kNf4RowsR],
                                          unsigned char *ring, int lane, int warp_id, float (&acc)[kNf4RowsR], unsigned lane_base,
                                          const float *dmap)
{
    extern __shared__ __align__(16) unsigned char nf4_smem[];
    using Ring = RowsRing<DoubleQuant, AmEvery>;
    constexpr int R = kNf4RowsR, U = kNf4RowsU;
    const int C = p.cols / 32;
    const uint4 *x = reinterpret_cast<const uint4 *>(p.x);
    int slot = 0, from = f0;
    for (int f = f0; f < f1; f += U) {
        int fi = f + (Stages - 1) * U;
        int islot = slot == 0 ? Stages - 1 : slot - 1; // the stage decoded last step
        if (fi < f1) rows_stage_issue_next<DoubleQuant, AmEvery>(p, fi, ic, ig, lane, rowB, ring + islot * Ring::stage_bytes);
        cp_async_commit();
        // x: the same 64 bytes a chunk for the whole warp (coherent loads: the previous kernel wrote it),
        // issued before waiting for the weights
        uint4 xh[U][4];
#pragma unroll
        for (int u = 0; u < U; u++)
#pragma unroll
            for (int i = 0; i < 4; i++) xh[u][i] = __ldca(x + (size_t)(c + u) * 4 + i);
        cp_async_wait<Stages - 1>();
        if constexpr (DoubleQuant) __syncwarp();
        const unsigned char *st = ring + slot * Ring::stage_bytes;
        const uint4 *sw = reinterpret_cast<const uint4 *>(st) + lane;
        const float *sam = reinterpret_cast<const float *>(st + Ring::w_bytes) + lane;
#pragma unroll
        for (int u = 0; u < U; u++) {
            float part[R];
#pragma unroll
            for (int r = 0; r < R; r++) part[r] = dot32_rows<Absolute>(sw[(u * R + r) * kWarp], xh[u], nf4_smem, lane_base);
#pragma unroll
            for (int r = 0; r < R; r++) {
                const int a = u / AmEvery;
                float am = sam[(a * R + r) * kWarp];
                if constexpr (DoubleQuant) am = dmap[st[Ring::w_bytes + Ring::am_bytes + (a * R + r) * kWarp + lane]] * am + p.absmax_offset;
                acc[r] = fmaf(part[r], am, acc[r]);
            }
        }
        slot = slot == Stages - 1 ? 0 : slot + 1;
        bool group_end = c + U == C;
        if (group_end || f + U >= f1) { // the end of a row group, or of this warp's range
            bool finite = true;
#pragma unroll
            for (int r = 0; r < R; r++) finite &= isfinite(acc[r]);
            if (!__all_sync(0xffffffffu, finite)) rows_redo_fp32<R>(p, g, from, f + U, lane, acc, dmap);
            from = f + U;
            rows_deposit<R>(p, g, warp_id, lane, acc);
#pragma unroll
            for (int r = 0; r < R; r++) acc[r] = 0.f;
        }
        c += U;
        if (group_end) { c = 0; g++; }
    }
}

// p.chunk_shift: log2(blocksize / 32); p.chunks_per_warp: each warp's share of the flat chunk order (a
// multiple of kNf4RowsU); p.partials / p.slots / p.arrivals: the deposits of split groups. Dynamic shared
// memory: the pair table, the nf4-dq dynamic map (1 KB), then kNf4RowsWarps rings of Stages stages.
template <bool DoubleQuant, int AmEvery, int Stages>
__global__ void __launch_bounds__(kNf4RowsWarps * kWarp, 1) matvec_nf4_rows(const MatvecParams p)
{
    extern __shared__ __align__(16) unsigned char nf4_smem[];
    using Ring = RowsRing<DoubleQuant, AmEvery>;
    constexpr int R = kNf4RowsR, U = kNf4RowsU;
    grid_dependents_launch();
    const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp, warp_id = blockIdx.x * kNf4RowsWarps + warp;
    const int C = p.cols / 32, total = nf4_rows_groups(p, rows_map(p.epilogue), R) * C;
    const int f0 = warp_id * p.chunks_per_warp, f1 = min(total, f0 + p.chunks_per_warp);
    unsigned char *ring = nf4_smem + kNf4RingOffset + (size_t)warp * Stages * Ring::stage_bytes;
    // the issuing side runs Stages - 1 steps ahead of the decoding side: its own chunk and group
    int ic = f0 % C, ig = f0 / C;
    int rowB[R] = {};
    if constexpr (DoubleQuant) rows_group_rowB<R>(p, ig, lane, rowB);
#pragma unroll
    for (int k = 0; k < Stages - 1; k++) { // weights never depend on the previous kernel: before the wait
        int f = f0 + k * U;
        if (f < f1) rows_stage_issue_next<DoubleQuant, AmEvery>(p, f, ic, ig, lane, rowB, ring + k * Ring::stage_bytes);
        cp_async_commit();
    }
    fill_nf4_pair_table(nf4_smem, DoubleQuant);
    __syncthreads();
    grid_dependency_wait();
    if (f0 >= f1) return;
    const float *dmap = reinterpret_cast<const float *>(nf4_smem + kNf4TableBytes);
    const unsigned table_base = (unsigned)__cvta_generic_to_shared(nf4_smem);
    float acc[R];
#pragma unroll
    for (int r = 0; r < R; r++) acc[r] = 0.f;
    int g = f0 / C, c = f0 % C;
    if (p.nf4_abs && table_base % 65536u == 0)
        rows_loop<DoubleQuant, AmEvery, Stages, true>(p, f0, f1, g, c, ic, ig, rowB, ring, lane, warp_id, acc, table_base >> 16 << 8 | lane * 4u, dmap);
    else
        rows_loop<DoubleQuant, AmEvery, Stages, false>(p, f0, f1, g, c, ic, ig, rowB, ring, lane, warp_id, acc, lane * 4u, dmap);
    cp_async_wait<0>(); // nothing may land in shared memory after the block exits
}

// ---- The register-prefetch kernel (ECO_CUDA_NF4_RING=0) ----
// The first version of session 9, kept for A/Bs: each lane loads the next step (4 chunks x R rows, 8 KB a
// warp) into registers while it decodes the current one; blocks of 8 warps, 2 per SM, each with its own table.
// Measured against the ring in bench_matvec (data/h200/README.md, session 9, calls 2 and 3, on the ring's
// layout): Qwen2.5-7B gate_up 25.2 vs 26.2 us, Llama-3.1-8B 22.1 vs 23.9; not yet side by side in one call.
constexpr int kNf4RegsWarps = 8;

template <bool DoubleQuant, int R, int U> struct RegsStep {
    uint4 w[U][R];
    float am[U][R];
    unsigned code[U][R];
};

template <bool DoubleQuant, int R, int U, int AmEvery>
__device__ __forceinline__ void regs_step_load(const MatvecParams &p, int f, int lane, const int (&rowB)[R], int c, RegsStep<DoubleQuant, R, U> &s)
{
    const uint4 *w = reinterpret_cast<const uint4 *>(p.w);
#pragma unroll
    for (int u = 0; u < U; u++)
#pragma unroll
        for (int r = 0; r < R; r++) s.w[u][r] = load_stream(w + ((size_t)(f + u) * R + r) * kWarp + lane);
#pragma unroll
    for (int u = 0; u < U; u += AmEvery) {
        int b = (f + u) >> p.chunk_shift;
#pragma unroll
        for (int r = 0; r < R; r++) {
            size_t at = ((size_t)b * R + r) * kWarp + lane;
            if constexpr (DoubleQuant) {
                s.code[u][r] = __ldg(p.absmax_q + at);
                s.am[u][r] = __ldg(p.absmax_q_scale + ((rowB[r] + ((c + u) >> p.chunk_shift)) >> 8));
            } else {
                s.am[u][r] = __ldg(p.absmax + at);
            }
        }
    }
}

// Same layout, shares (whole steps of kNf4RegsU chunks), deposits and epilogues as matvec_nf4_rows; dynamic
// shared memory: the pair table and (nf4-dq) the dynamic map, as the lane decoder's.
template <bool DoubleQuant, int AmEvery>
__global__ void __launch_bounds__(kNf4RegsWarps * kWarp, 2) matvec_nf4_rows_regs(const MatvecParams p)
{
    extern __shared__ __align__(16) unsigned char nf4_smem[];
    constexpr int R = kNf4RowsR, U = kNf4RegsU;
    grid_dependents_launch();
    const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp, warp_id = blockIdx.x * kNf4RegsWarps + warp;
    const int C = p.cols / 32, total = nf4_rows_groups(p, rows_map(p.epilogue), R) * C;
    const int f0 = warp_id * p.chunks_per_warp, f1 = min(total, f0 + p.chunks_per_warp);
    int g = f0 / C, c = f0 % C;
    int rowB[R] = {};
    if constexpr (DoubleQuant) rows_group_rowB<R>(p, g, lane, rowB);
    RegsStep<DoubleQuant, R, U> cur;
    if (f0 < f1) regs_step_load<DoubleQuant, R, U, AmEvery>(p, f0, lane, rowB, c, cur);
    fill_nf4_pair_table(nf4_smem, DoubleQuant);
    __syncthreads();
    grid_dependency_wait();
    if (f0 >= f1) return;
    const float *dmap = reinterpret_cast<const float *>(nf4_smem + kNf4TableBytes);
    const unsigned lane4 = (unsigned)lane * 4u;
    const uint4 *x = reinterpret_cast<const uint4 *>(p.x);
    float acc[R];
#pragma unroll
    for (int r = 0; r < R; r++) acc[r] = 0.f;
    for (int f = f0; f < f1; f += U) {
        RegsStep<DoubleQuant, R, U> next;
        int nc = c + U, ng = g;
        if (nc == C) { nc = 0; ng++; }
        if (f + U < f1) {
            if constexpr (DoubleQuant)
                if (nc == 0) rows_group_rowB<R>(p, ng, lane, rowB);
            regs_step_load<DoubleQuant, R, U, AmEvery>(p, f + U, lane, rowB, nc, next);
        }
#pragma unroll
        for (int u = 0; u < U; u++) {
            // x: the same 64 bytes for the whole warp (coherent loads: x was written by the previous kernel)
            uint4 xh[4];
#pragma unroll
            for (int i = 0; i < 4; i++) xh[i] = __ldca(x + (size_t)(c + u) * 4 + i);
            float part[R];
            dot32_nf4_rows_checked<R>(cur.w[u], xh, nf4_smem, lane4, part);
#pragma unroll
            for (int r = 0; r < R; r++) {
                const int ub = u - u % AmEvery;
                float am = DoubleQuant ? dmap[cur.code[ub][r]] * cur.am[ub][r] + p.absmax_offset : cur.am[ub][r];
                acc[r] = fmaf(part[r], am, acc[r]);
            }
        }
        if (nc == 0 || f + U >= f1) { // the end of a row group, or of this warp's range
            rows_deposit<R>(p, g, warp_id, lane, acc);
#pragma unroll
            for (int r = 0; r < R; r++) acc[r] = 0.f;
        }
        c = nc;
        g = ng;
        cur = next;
    }
}

} // namespace eco_cuda
