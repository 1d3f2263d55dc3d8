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
constexpr int kNf4RowsU = 4; // the most chunks per row and step of any shape (RowsShape below): the layout keeps
                             // columns in multiples of 32 * kNf4RowsU, so every shape takes the same linears

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

// After this warp's deposit into a split group's slot: whether it is the last of the group's n warps to arrive
// (then every deposit is visible to it). The counter is per group; its last warp resets it.
__device__ __forceinline__ bool last_to_arrive(int *arrivals, int n, int lane)
{
    __threadfence();
    __syncwarp();
    int arrived = 0;
    if (lane == 0) arrived = atomicAdd(arrivals, 1);
    arrived = __shfl_sync(0xffffffffu, arrived, 0);
    if (arrived != n - 1) return false;
    __threadfence();
    return true;
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
    if (!last_to_arrive(p.arrivals + g, n, lane)) return;
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

// ---- The kernel ----
// Each lane loads the next step (U chunks x R rows) into registers while it decodes the current one;
// blocks of W warps, B per SM, each with its own table. Registers won over a cp.async ring of 4 stages a warp
// in shared memory (16-warp blocks, one per SM, steps of 2 chunks), side by side on the H200
// (data/h200/README.md, session 11): a Qwen2.5-7B layer's four matvecs 51.5 vs 56.1 us, Llama-3.1-8B 50.1
// vs 54.8, Qwen2.5-14B 61.3 vs 65.8; whole 7B tokens 466.1 vs 448.3 tok/s. The ring's table at a 64 KB
// boundary (the byte permute writing the address's base bits, no add) measured no different (56.2 vs 56.1).
//
// Warps per block, chunks per step, and blocks per SM the registers are capped for; the first is the default.
// The decode is latency-bound with one eligible warp per scheduler (session 9's profile), so more warps with
// fewer bytes in flight each win: blocks of 16 warps, 2 per SM (32 warps, 64 registers, 2 KB in flight a warp:
// 64 KB an SM), against session 11's 8 warps x 4 chunks (16 warps, 8 KB a warp). Side by side on the H200
// (data/h200/README.md, session 13): Qwen2.5-7B nf4 550.8 vs 510.6 / 510.8 tok/s (58.5% vs 54.2% of the
// roofline), Llama-3.1-8B 523.3 vs 472.6 / 472.2; 8 warps x 2 chunks x 3 blocks (24 warps) lost (477.2, 450.2).
// ECO_CUDA_NF4_ROWS_SHAPE="W,U,B" picks another for A/Bs.
struct RowsShape {
    int warps, u, per_sm;
};
// Steps a warp loads before its dependency wait (ECO_CUDA_NF4_PRELOAD=1 keeps session 16's one for A/Bs).
constexpr int kNf4RowsPreload = 2;
// The steps' variants (the template's Lean, ECO_CUDA_NF4_ROWS_LEAN): 0 full, 1 lean (the default), 2-5 experiments;
// their words in the engine design string.
constexpr int kNf4RowsLeanMost = 5, kNf4RowsLeanDefault = 1;
constexpr const char *kNf4RowsStepNames[kNf4RowsLeanMost + 1] = {", full steps", ", lean steps", ", lean narrow steps x2",
                                                                  ", lean narrow steps", ", lean late-check steps",
                                                                  ", lean scaled-table steps"};
constexpr RowsShape kNf4RowsShapes[] = {{16, 1, 2}, {8, 4, 2}, {8, 2, 3}};

template <bool DoubleQuant, int R, int U> struct RowsStep {
    uint4 w[U][R];
    float am[U][R];
    unsigned code[U][R];
};

// same_block: step f lies in the absmax block of `prev`, the step before it (a step within one block, not at its
// start): its scales are copied from prev rather than asked of L1 again (ECO_CUDA_NF4_ROWS_LEAN).
template <bool DoubleQuant, int R, int U, int AmEvery, bool MayReuse = false>
__device__ __forceinline__ void rows_step_load(const MatvecParams &p, int f, int lane, const int (&rowB)[R], int c, RowsStep<DoubleQuant, R, U> &s,
                                               const RowsStep<DoubleQuant, R, U> *prev = nullptr, bool same_block = false)
{
    const uint4 *w = reinterpret_cast<const uint4 *>(p.w);
#pragma unroll
    for (int u = 0; u < U; u++)
#pragma unroll
        for (int r = 0; r < R; r++) s.w[u][r] = load_stream(w + ((size_t)(f + u) * R + r) * kWarp + lane);
    if constexpr (MayReuse) {
        if (same_block) {
#pragma unroll
            for (int r = 0; r < R; r++) {
                s.am[0][r] = prev->am[0][r];
                if constexpr (DoubleQuant) s.code[0][r] = prev->code[0][r];
            }
            return;
        }
    }
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

// Step f, the one after the step at (group g, chunk c); nf4-dq's rowB follows it into a new group.
template <bool DoubleQuant, int R, int U, int AmEvery, bool MayReuse = false>
__device__ __forceinline__ void rows_load_after(const MatvecParams &p, int f, int lane, int g, int c, int C, int (&rowB)[R],
                                                RowsStep<DoubleQuant, R, U> &s, const RowsStep<DoubleQuant, R, U> *prev = nullptr,
                                                bool same_block = false)
{
    c += U;
    if (c == C) {
        c = 0;
        if constexpr (DoubleQuant) rows_group_rowB<R>(p, g + 1, lane, rowB);
    }
    rows_step_load<DoubleQuant, R, U, AmEvery, MayReuse>(p, f, lane, rowB, c, s, prev, same_block);
}

// One step's products into acc, narrow (ECO_CUDA_NF4_ROWS_LEAN=2 and 3, experiments): words outer and rows inner,
// so x is read 16 bytes (one weight word's columns) at a time rather than a chunk's 64 bytes at once, and two fp16
// chains a row rather than four; that frees about 12 registers, which the loop unrolled by two needs (it spilled
// 32-84 bytes a thread without them). A chunk whose fp16 sum overflowed is redone in fp32 (redo_overflowed).
template <bool DoubleQuant, int R, int U, int AmEvery>
__device__ __forceinline__ void rows_decode_narrow(const MatvecParams &p, const RowsStep<DoubleQuant, R, U> &now, const uint4 *x, int c,
                                                   const unsigned char *table, unsigned lane4, const float *dmap, float (&acc)[R])
{
#pragma unroll
    for (int u = 0; u < U; u++) {
        __half2 h[R][2];
#pragma unroll
        for (int r = 0; r < R; r++) h[r][0] = h[r][1] = __float2half2_rn(0.f);
#pragma unroll
        for (int i = 0; i < 4; i++) {
            uint4 xv = __ldca(x + (size_t)(c + u) * 4 + i); // coherent: x was written by the previous kernel
            const __half2 *xp = reinterpret_cast<const __half2 *>(&xv);
#pragma unroll
            for (int r = 0; r < R; r++) {
                const unsigned word = reinterpret_cast<const unsigned *>(&now.w[u][r])[i];
#pragma unroll
                for (int k = 0; k < 4; k++) {
                    unsigned bits = nf4_pair(word, k, table, lane4);
                    h[r][k & 1] = __hfma2(*reinterpret_cast<const __half2 *>(&bits), xp[k], h[r][k & 1]);
                }
            }
        }
        float part[R];
        bool finite = true;
#pragma unroll
        for (int r = 0; r < R; r++) {
            float2 fv = __half22float2(__hadd2(h[r][0], h[r][1]));
            part[r] = fv.x + fv.y;
            finite &= isfinite(part[r]);
        }
        if (!finite) {
            uint4 xh[4];
#pragma unroll
            for (int i = 0; i < 4; i++) xh[i] = __ldca(x + (size_t)(c + u) * 4 + i);
            redo_overflowed<R>(now.w[u], xh, part);
        }
#pragma unroll
        for (int r = 0; r < R; r++) {
            const int ub = u - u % AmEvery;
            float am = nf4_block_scale<DoubleQuant>(dmap, now.code[ub][r], now.am[ub][r], p.absmax_offset);
            acc[r] = fmaf(part[r], am, acc[r]);
        }
    }
}

// Lean 4 (experiment): a row whose sum over this warp's part of group g (flat chunks [from, to)) is not finite had a
// chunk whose fp16 partial overflowed (an overflowed partial stays inf or NaN through the fp32 sum and its scales), so
// that part is redone in fp32 from memory: one check a group instead of one a chunk, and the chunk's x and weights need
// not stay live past its products. Also right for x that is itself not finite (the fp32 sum is not finite either).
template <bool DoubleQuant, int R>
__device__ __forceinline__ float rows_redo_part(const MatvecParams &p, int g, int from, int to, int r, int lane, const float *dmap)
{
    const int C = p.cols / 32, B = C >> p.chunk_shift;
    const int row = nf4_rows_slot_row(p, rows_map(p.epilogue), R, g, r * kWarp + lane);
    const uint4 *w = reinterpret_cast<const uint4 *>(p.w), *x = reinterpret_cast<const uint4 *>(p.x);
    float acc = 0.f;
    for (int f = from; f < to; f++) {
        const int c = f - g * C;
        const size_t at = ((size_t)(f >> p.chunk_shift) * R + r) * kWarp + lane;
        float am;
        if constexpr (DoubleQuant)
            am = nf4_block_scale<true>(dmap, __ldg(p.absmax_q + at),
                                       __ldg(p.absmax_q_scale + (((row < 0 ? 0 : row) * B + (c >> p.chunk_shift)) >> 8)), p.absmax_offset);
        else
            am = __ldg(p.absmax + at);
        const size_t xc = (size_t)c * 4;
        acc = fmaf(dot16_nf4_fp32(__ldg(w + ((size_t)f * R + r) * kWarp + lane), __ldca(x + xc), __ldca(x + xc + 1), __ldca(x + xc + 2),
                                  __ldca(x + xc + 3)),
                   am, acc);
    }
    return acc;
}

// p.chunk_shift: log2(blocksize / 32); p.chunks_per_warp: each warp's share of the flat chunk order (whole
// steps); p.partials / p.slots / p.arrivals: the deposits of split groups; dynamic
// shared memory: the pair table and (nf4-dq) the dynamic map, as the lane decoder's.
// Lean (the default; ECO_CUDA_NF4_ROWS_LEAN=0 keeps the full steps for A/Bs): fewer requests and less bookkeeping a
// step with the same loads in flight. A step in the absmax block of the step before (every other step at blocksize
// 64) copies its scales instead of loading them (one L1 request a row less); the first step's preload is a
// loop-carried flag, and the column count a shift, where the full steps recompute the warp's first chunk and a
// signed division from the parameters every step (the 64-register cap makes that cheaper than keeping them). Its
// SASS loop is 184 instructions a step against 196; side by side on an H200 (data/h200/README.md, session 28) the
// bare linears read 1.4-2.0 points more of the bandwidth and whole Qwen2.5-7B / Llama-3.1-8B nf4 tokens were
// x1.015 / x1.016 faster (on an H100, x1.0071 / x1.0077).
template <bool DoubleQuant, int AmEvery, int Warps, int U, int PerSm, int Lean = 0>
__global__ void __launch_bounds__(Warps * kWarp, PerSm) matvec_nf4_rows(const MatvecParams p)
{
    extern __shared__ __align__(16) unsigned char nf4_smem[];
    constexpr int R = kNf4RowsR;
    static_assert(AmEvery <= U && U <= kNf4RowsU && kNf4RowsU % U == 0, "steps of whole absmax blocks within the layout's column unit");
    grid_dependents_launch();
    const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp, warp_id = blockIdx.x * Warps + warp;
    const int C = Lean ? (int)((unsigned)p.cols >> 5) : p.cols / 32, total = nf4_rows_groups(p, rows_map(p.epilogue), R) * C;
    constexpr bool kReuse = Lean && AmEvery == U; // a step within one block: its successor may share it
    // Lean: step f (a multiple of U) lies in the absmax block of the step before it
    auto in_block_before = [&](int f) { return kReuse && (f & ((1 << p.chunk_shift) - 1)) != 0; };
    const int f0 = warp_id * p.chunks_per_warp, f1 = min(total, f0 + p.chunks_per_warp);
    int g = f0 / C, c = f0 % C;
    int rowB[R] = {};
    if constexpr (DoubleQuant) rows_group_rowB<R>(p, g, lane, rowB);
    // Two steps in flight before the dependency wait (the weights are not the previous kernel's output): a
    // warp of qkv or o has about two steps in all, so after the wait it only decodes; longer ranges start with
    // one more step under way. The loads then run one step ahead of the decode, as before.
    RowsStep<DoubleQuant, R, U> cur, next;
    if (f0 < f1) rows_step_load<DoubleQuant, R, U, AmEvery>(p, f0, lane, rowB, c, cur);
    fill_nf4_pair_table(nf4_smem, DoubleQuant, Lean == 5);
    const bool preloaded = p.preload > 1 && f0 + U < f1;
    if (preloaded)
        rows_load_after<DoubleQuant, R, U, AmEvery, kReuse>(p, f0 + U, lane, g, c, C, rowB, next, &cur, in_block_before(f0 + U));
    __syncthreads();
    grid_dependency_wait();
    if (f0 >= f1) return;
    const float *dmap = reinterpret_cast<const float *>(nf4_smem + kNf4TableBytes);
    const unsigned lane4 = (unsigned)lane * 4u;
    const uint4 *x = reinterpret_cast<const uint4 *>(p.x);
    float acc[R];
#pragma unroll
    for (int r = 0; r < R; r++) acc[r] = 0.f;
    [[maybe_unused]] bool load_next = !preloaded; // Lean: the first step's successor is under way when preloaded
    if constexpr (Lean == 2) {
        // The loop unrolled by two, the two buffers alternating: no copy of the next step into the current one (10
        // register moves a step), with the narrow decode's registers (experiment, ECO_CUDA_NF4_ROWS_LEAN=2).
        int f = f0, gd = g;
        auto body = [&](RowsStep<DoubleQuant, R, U> &now, RowsStep<DoubleQuant, R, U> &after) {
            int nc = c + U, ng = g;
            if (nc == C) { nc = 0; ng++; }
            if (load_next && f + U < f1)
                rows_load_after<DoubleQuant, R, U, AmEvery, kReuse>(p, f + U, lane, g, c, C, rowB, after, &now, in_block_before(f + U));
            load_next = true;
            rows_decode_narrow<DoubleQuant, R, U, AmEvery>(p, now, x, c, nf4_smem, lane4, dmap, acc);
            bool end = nc == 0 || f + U >= f1; // the end of a row group, or of this warp's range
            gd = g;
            c = nc;
            g = ng;
            f += U;
            return end;
        };
        auto deposit = [&] {
            rows_deposit<R>(p, gd, warp_id, lane, acc);
#pragma unroll
            for (int r = 0; r < R; r++) acc[r] = 0.f;
        };
        for (;;) {
            if (body(cur, next)) {
                deposit();
                if (f >= f1) return;
            }
            if (body(next, cur)) {
                deposit();
                if (f >= f1) return;
            }
        }
    } else {
        for (int f = f0; f < f1; f += U) {
            int nc = c + U, ng = g;
            if (nc == C) { nc = 0; ng++; }
            if constexpr (Lean) {
                if (load_next && f + U < f1)
                    rows_load_after<DoubleQuant, R, U, AmEvery, kReuse>(p, f + U, lane, g, c, C, rowB, next, &cur, in_block_before(f + U));
                load_next = true;
            } else if ((f != f0 || !preloaded) && f + U < f1) { // with preloaded, the first step's successor is under way
                rows_load_after<DoubleQuant, R, U, AmEvery>(p, f + U, lane, g, c, C, rowB, next);
            }
            if constexpr (Lean == 3) rows_decode_narrow<DoubleQuant, R, U, AmEvery>(p, cur, x, c, nf4_smem, lane4, dmap, acc);
            else
#pragma unroll
            for (int u = 0; u < U; u++) {
                // x: the same 64 bytes for the whole warp (coherent loads: x was written by the previous kernel)
                uint4 xh[4];
#pragma unroll
                for (int i = 0; i < 4; i++) xh[i] = __ldca(x + (size_t)(c + u) * 4 + i);
                float part[R];
                if constexpr (Lean == 4 || Lean == 5) { // 5: the scaled table cannot overflow
#pragma unroll
                    for (int r = 0; r < R; r++) part[r] = dot32_nf4_pairs(cur.w[u][r], xh, nf4_smem, lane4);
                } else {
                    dot32_nf4_rows_checked<R>(cur.w[u], xh, nf4_smem, lane4, part);
                }
#pragma unroll
                for (int r = 0; r < R; r++) {
                    const int ub = u - u % AmEvery;
                    float am = nf4_block_scale<DoubleQuant>(dmap, cur.code[ub][r], cur.am[ub][r], p.absmax_offset);
                    acc[r] = fmaf(part[r], am, acc[r]);
                }
            }
            if (nc == 0 || f + U >= f1) { // the end of a row group, or of this warp's range
                if constexpr (Lean == 4) {
#pragma unroll
                    for (int r = 0; r < R; r++)
                        if (!isfinite(acc[r])) acc[r] = rows_redo_part<DoubleQuant, R>(p, g, max(f0, g * C), f + U, r, lane, dmap);
                }
                if constexpr (Lean == 5) {
#pragma unroll
                    for (int r = 0; r < R; r++) acc[r] *= (float)(1 << kNf4ScaledShift);
                }
                rows_deposit<R>(p, g, warp_id, lane, acc);
#pragma unroll
                for (int r = 0; r < R; r++) acc[r] = 0.f;
            }
            c = nc;
            g = ng;
            cur = next;
        }
    }
}

} // namespace eco_cuda