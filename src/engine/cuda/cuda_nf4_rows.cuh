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

#include <iterator>

#include "cuda_kernels.cuh"

extern "C" {
#include "eco/warp_trace.h" // the record the traced steps write (=22)
}

namespace eco_cuda {

constexpr int kNf4RowsR = 2; // rows per lane: one x chunk serves both (four lost on H100s in session 33, ENGINE.md)
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

// Block b's first chunk of the flat order when the warps of the first n1 blocks take s1 chunks each, those of the
// next n2 blocks s2 and the rest s3 (filled shares, nf4_rows_fill; even shares are n1 = every block), bw warps a
// block. By block, not warp: the block's start and share are then uniform (ptxas keeps them in uniform registers),
// where shares by warp made the 64-register loop recompute them every pass (295 instructions against 275).
__host__ __device__ __forceinline__ long rows_share_start(long b, long bw, long s1, long n1, long s2, long n2, long s3)
{
    long x = b < n1 ? b : n1, y = b - x < n2 ? b - x : n2;
    return (x * s1 + y * s2 + (b - x - y) * s3) * bw;
}

// And the share of each warp of block b.
__host__ __device__ __forceinline__ long rows_share_of(long b, long s1, long n1, long s2, long n2, long s3)
{
    return b < n1 ? s1 : b < n1 + n2 ? s2 : s3;
}

// How `warps` warps split a linear of `groups` row groups of `chunks` chunks: each warp's share (whole steps
// of U chunks, at least min_steps, a multiple of `whole` chunks: U, or two steps for the pair sums), the warps that
// get one, and the most warps a group is split between (its deposit slots). Even shares: per for every warp used
// (n1 = every block, n2 = 0); filled ones (nf4_rows_fill) in up to three sizes by block (rows_share_start), per the
// largest.
struct RowsShare {
    long per, used;
    int slots;
    long n1, s2, n2, s3;
};

inline RowsShare nf4_rows_share(long groups, long chunks, long warps, int min_steps, long U, long whole = 0)
{
    if (whole < U) whole = U;
    long total = groups * chunks, per = (total + warps - 1) / warps;
    if (per < min_steps * U) per = min_steps * U;
    per = (per + whole - 1) / whole * whole;
    long used = (total + per - 1) / per;
    RowsShare sh{per, used, 1, used, per, 0, per}; // n1 counts blocks: `used` warps are at least the blocks launched
    for (long g = 0; g < groups; g++) {
        long first, last;
        rows_group_warps(g, chunks, per, &first, &last);
        if (last - first + 1 > sh.slots) sh.slots = (int)(last - first + 1);
    }
    return sh;
}

// Filled shares for a residual linear (its warps add to y atomically, so no group needs to know its warps): every
// block the GPU holds takes a share, in two sizes a `whole` apart with the larger first, where even shares round up
// to whole steps and leave warps idle (Llama-3.1-8B's down: 224 of 264 blocks, so 40 SMs ran one block of it). The
// first blocks are dispatched first: under dependent launch down's last blocks become resident only as gate_up's
// leave, and are released up to 2 us after its first (session 44's warp trace). `skew` more blocks at the end then
// give one whole a warp to as many blocks at the front, where the sizes allow (the blocks moved are returned in
// *skewed). Sizes go by block (rows_share_start): the larger ones' blocks rounded up, so the last warps of the last
// block may have less or nothing. False where the chunks do not give every warp a share of at least min_share: even
// shares then. blocks: of bw warps each.
inline bool nf4_rows_fill(long groups, long chunks, long blocks, long bw, long min_share, long whole, long skew, RowsShare *out,
                          long *skewed)
{
    long total = groups * chunks, warps = blocks * bw;
    min_share = (min_share + whole - 1) / whole * whole;
    long lo = total / warps / whole * whole;
    *skewed = 0;
    if (lo < min_share || lo < whole) return false;
    long first = ((total - warps * lo + whole - 1) / whole + bw - 1) / bw; // blocks at lo + whole
    long k = 0;
    if (lo - whole >= min_share && lo - whole >= whole)
        for (long b = skew; b > 0 && !k; b--)
            if (first + 2 * b <= blocks) k = b;
    *skewed = k;
    *out = RowsShare{lo + whole, warps, 1, first + k, lo, blocks - first - 2 * k, k ? lo - whole : lo};
    if (out->n1 == 0) { // every warp at lo
        out->per = lo;
        out->n1 = blocks;
        out->n2 = 0;
    }
    return true;
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
    if (p.epilogue == EP_ADD || p.epilogue == EP_ATOMIC_ADD) {
        // a residual add is linear: each warp adds its part to y itself (the summation order then varies
        // from run to run, as with the other kernels' column slices), and no warp waits for the group's last.
        // Atomically even where the warp has the whole group (one adder: the same sum): asking which warps share
        // the group cost two 64-bit divisions (called subroutines) in every deposit, a large part of a 7B down
        // warp's four passes (without them whole nf4 tokens were x1.017 / x1.014 at 7B / 8B on an H100, session
        // 45), and filled shares have no formula for it
#pragma unroll
        for (int r = 0; r < R; r++) {
            int row = nf4_rows_slot_row(p, EP_STORE, R, g, r * kWarp + lane);
            if (row >= 0) atomicAdd(p.y + row, acc[r]);
        }
        return;
    }
    long first, last;
    rows_group_warps(g, p.cols / 32, p.chunks_per_warp, &first, &last); // even shares (a residual add alone is filled)
    if (first == last) { // this warp has the whole group
        rows_finish<R>(p, g, lane, acc);
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
// The steps' variants (the template's Lean, ECO_CUDA_NF4_ROWS_LEAN), their words in the engine design string and what
// each is made of: 0 full, 1 lean, 5 lean with the scaled table (the default in session 30), 9 those two steps a loop
// (the default in sessions 31-34), 16 those with one fp16 sum for both steps (the default since session 35; blocks of 32
// columns run 9, nf4_rows_lean_for), 21 the pair sums with the first pair's preload told by a loop-carried flag (session
// 39), 22 the default's steps with a warp trace (session 40; ECO_CUDA_NF4_ROWS_TRACE, below). The numbers are the ones
// the A/B records use (data/h200/README.md); 2-4, 6-8, 10-15 and 17-20 were experiments, removed in sessions 30-37
// (ENGINE.md says what they were).
struct RowsSteps {
    int lean;
    const char *name;
    int shift;      // > 0: the table's codes times 2^-shift, so no fp16 sum can overflow and nothing is checked
    bool two_steps; // two steps a loop: the step buffers take turns instead of `cur = next`
    bool pair_sums; // and the two steps (one absmax block, blocks of >= 64) share their fp16 chains and one sum
    bool first_by_flag; // pair sums: whether the first pair's second weights are under way is a loop-carried flag, not
                        // a test of f against the warp's first chunk (which ptxas recomputed every pass)
    bool trace;         // pair sums: each warp records when it entered, was released, finished its stream and ended
    bool swiglu_x;      // pair sums: x is fp16(silu(gate) * up) of gate_up's atomic sums, made once a warp into shared
                        // memory (down under ECO_CUDA_SWIGLU_ATOMIC; chosen per linear, never by ECO_CUDA_NF4_ROWS_LEAN)
};
constexpr int kNf4StepsScaled = 5, kNf4StepsScaled2 = 9, kNf4StepsPairSums = 16, kNf4StepsPairSumsFlag = 21,
              kNf4StepsTraced = 22, kNf4StepsSwigluX = 23, kNf4RowsLeanDefault = kNf4StepsPairSums;
constexpr RowsSteps kNf4RowsSteps[] = {
    {0, ", full steps", 0, false, false, false, false, false},
    {1, ", lean steps", 0, false, false, false, false, false},
    {kNf4StepsScaled, ", lean scaled-table steps", kNf4ScaledShift, false, false, false, false, false},
    {kNf4StepsScaled2, ", lean scaled-table steps, two steps a loop", kNf4ScaledShift, true, false, false, false, false},
    {kNf4StepsPairSums, ", lean steps two a loop, one sum for both where one block holds them (2^-5 table)", kNf4PairSumsShift, true, true, false, false,
     false},
    {kNf4StepsPairSumsFlag, ", lean steps two a loop, one sum for both where one block holds them (2^-5 table), first pair by a flag",
     kNf4PairSumsShift, true, true, true, false, false},
    {kNf4StepsTraced, ", lean steps two a loop, one sum for both where one block holds them (2^-5 table), warps traced",
     kNf4PairSumsShift, true, true, false, true, false},
    {kNf4StepsSwigluX, ", lean steps two a loop, one sum for both where one block holds them (2^-5 table), x from gate_up's sums",
     kNf4PairSumsShift, true, true, false, false, true}};

// The entry of kNf4RowsSteps for `lean`, or -1 for a value that is none of them.
constexpr int nf4_rows_steps_index(int lean)
{
    for (int i = 0; i < (int)std::size(kNf4RowsSteps); i++)
        if (kNf4RowsSteps[i].lean == lean) return i;
    return -1;
}

// The entry's properties as scalar constants for device code: nvcc refuses the table there when it is indexed through
// the host function nf4_rows_steps_index.
template <int Lean> constexpr int kRowsStepsAt = nf4_rows_steps_index(Lean);
template <int Lean> constexpr int kRowsShift = kNf4RowsSteps[kRowsStepsAt<Lean>].shift;
template <int Lean> constexpr bool kRowsTwoSteps = kNf4RowsSteps[kRowsStepsAt<Lean>].two_steps;
template <int Lean> constexpr bool kRowsPairSums = kNf4RowsSteps[kRowsStepsAt<Lean>].pair_sums;
template <int Lean> constexpr bool kRowsFirstByFlag = kNf4RowsSteps[kRowsStepsAt<Lean>].first_by_flag;
template <int Lean> constexpr bool kRowsTrace = kNf4RowsSteps[kRowsStepsAt<Lean>].trace;
template <int Lean> constexpr bool kRowsSwigluX = kNf4RowsSteps[kRowsStepsAt<Lean>].swiglu_x;

// =23's x: each warp's chunks of x (64 bytes each, in the warp's flat chunk order) in shared memory after the table,
// at most this many a warp (for a model whose down would give a warp more, resolve_swiglu_atomic keeps the mode off,
// and nf4_rows_plan refuses such a launch), so two 16-warp blocks still fit an SM beside their 64 KB tables.
constexpr int kSwigluXMaxChunks = 24, kSwigluXChunkBytes = 64;

// x = fp16(silu(gate) * up) for chunks [f0, f1) of the flat order (column chunk f % C), from gate_up's fp32 sums
// (gate at column j, up at cols + j), into xs in that order: once a warp, kBatch float4 pairs a lane in flight at a
// time.
__device__ __forceinline__ void swiglu_x_fill(const MatvecParams &p, int f0, int f1, int C, int lane, __half *xs)
{
    const float4 *gate = reinterpret_cast<const float4 *>(p.swiglu_sums), *up = gate + p.cols / 4;
    const int n4 = (f1 - f0) * 8; // float4 a chunk: 8
    constexpr int kBatch = 2;
    for (int i0 = 0; i0 < n4; i0 += kBatch * kWarp) {
        float4 g[kBatch], u[kBatch];
#pragma unroll
        for (int k = 0; k < kBatch; k++) {
            int i = i0 + k * kWarp + lane;
            if (i < n4) {
                int at = ((f0 + (i >> 3)) % C) * 8 + (i & 7);
                g[k] = __ldcg(gate + at);
                u[k] = __ldcg(up + at);
            }
        }
#pragma unroll
        for (int k = 0; k < kBatch; k++) {
            int i = i0 + k * kWarp + lane;
            if (i >= n4) continue;
            __half2 lo = __floats2half2_rn(silu_times(g[k].x, u[k].x), silu_times(g[k].y, u[k].y));
            __half2 hi = __floats2half2_rn(silu_times(g[k].z, u[k].z), silu_times(g[k].w, u[k].w));
            reinterpret_cast<uint2 *>(xs)[i] = make_uint2(*reinterpret_cast<unsigned *>(&lo), *reinterpret_cast<unsigned *>(&hi));
        }
    }
}

// The warp trace (=22): where a linear's time goes between its warps, which CUPTI's kernel spans cannot show. Each warp
// that has work writes one eco_warp_trace_record (eco/warp_trace.h) into a ring the host allocates and names here;
// NULL records nothing. Times are %globaltimer (ns, comparable across SMs) at entry and end, and the SM's clock64 between.
struct RowsTraceRing {
    eco_warp_trace_record *rec; // [cap]
    unsigned *next;             // records written so far (the ring wraps)
    unsigned cap;
};
__device__ RowsTraceRing g_rows_trace;

__device__ __forceinline__ unsigned long long global_ns()
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

__device__ __forceinline__ unsigned sm_id()
{
    unsigned id;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
    return id;
}

// One warp's record: entry (ns and clock), the clocks after the dependency wait and before its last deposit, its end.
__device__ __forceinline__ void rows_trace_record(const MatvecParams &p, int warp_id, int lane, unsigned long long ns0, long long clk0,
                                                  long long clk_released, long long clk_streamed)
{
    long long clk_end = clock64();
    unsigned long long ns_end = global_ns();
    const RowsTraceRing ring = g_rows_trace;
    if (lane != 0 || !ring.rec) return;
    // the fields as six 64-bit words in eco_warp_trace_record's order: stored field by field or as three 16-byte
    // words, ptxas spilled 8 or 4 bytes in =22's loop, and a tool that perturbs the loop would time another kernel
    static_assert(sizeof(eco_warp_trace_record) == 48 && offsetof(eco_warp_trace_record, clk_released) == 16 &&
                      offsetof(eco_warp_trace_record, clk_end) == 24 && offsetof(eco_warp_trace_record, warp) == 32 &&
                      offsetof(eco_warp_trace_record, rows) == 40, "eco_warp_trace_record's layout");
    unsigned long long *r = reinterpret_cast<unsigned long long *>(ring.rec + atomicAdd(ring.next, 1u) % ring.cap);
    r[0] = ns0;
    r[1] = ns_end;
    r[2] = (unsigned long long)(clk_released - clk0) | (unsigned long long)(clk_streamed - clk0) << 32;
    r[3] = (unsigned long long)(clk_end - clk0) | (unsigned long long)sm_id() << 32;
    r[4] = (unsigned long long)(unsigned)warp_id | (unsigned long long)(unsigned)p.chunks_per_warp << 32;
    r[5] = (unsigned long long)(unsigned)p.rows | (unsigned long long)(unsigned)p.cols << 32;
}

// The steps a linear of absmax blocks of `blocksize` runs under ECO_CUDA_NF4_ROWS_LEAN=lean: the pair sums need both
// steps of a pair in one block, so blocks of 32 columns and steps of several chunks run the two steps a loop (=9).
inline int nf4_rows_lean_for(int lean, int blocksize, int u)
{
    if (nf4_rows_steps_index(lean) >= 0 && kNf4RowsSteps[nf4_rows_steps_index(lean)].pair_sums && (blocksize < 64 || u != 1))
        return kNf4StepsScaled2;
    return lean;
}

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

// Step f's weights alone (U = 1), for a step whose scales are the step before's.
template <int R> __device__ __forceinline__ void rows_weights_load(const MatvecParams &p, int f, int lane, uint4 (&w)[R])
{
#pragma unroll
    for (int r = 0; r < R; r++) w[r] = load_stream(reinterpret_cast<const uint4 *>(p.w) + ((size_t)f * R + r) * kWarp + lane);
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

// p.chunk_shift: log2(blocksize / 32); p.chunks_per_warp: each warp's share of the flat chunk order (whole
// steps); p.partials / p.slots / p.arrivals: the deposits of split groups; dynamic
// shared memory: the pair table and (nf4-dq) the dynamic map, as the lane decoder's.
// Lean (ECO_CUDA_NF4_ROWS_LEAN=1, and under the scaled steps; 0 keeps the full steps for A/Bs): fewer requests and less
// bookkeeping a step with the same loads in flight. A step in the absmax block of the step before (every other step at
// blocksize 64) copies its scales instead of loading them (one L1 request a row less); the first step's preload is a
// loop-carried flag, and the column count a shift, where the full steps recompute the warp's first chunk and a
// signed division from the parameters every step (the 64-register cap makes that cheaper than keeping them). Its
// SASS loop is 184 instructions a step against 196; side by side on an H200 (data/h200/README.md, session 28) the
// bare linears read 1.4-2.0 points more of the bandwidth and whole Qwen2.5-7B / Llama-3.1-8B nf4 tokens were
// x1.015 / x1.016 faster (on an H100, x1.0071 / x1.0077).
// Scaled (kNf4StepsScaled, the default in session 30): the lean steps with the table's codes times 2^-4, so no
// fp16 partial can overflow (fill_nf4_pair_table) and the per-chunk check and its fp32 redo go; a row group's sums
// are multiplied by 16 again before the deposit. Side by side against the lean steps, whole nf4 tokens were x1.0188
// (Qwen2.5-7B) on an H200 (session 31), x1.008-1.016 on H100s (sessions 30-31).
// Two steps a loop (kNf4StepsScaled2, the default since session 31): the scaled steps with the two step buffers taking
// turns, so the loaded step is never copied into the decoded one's registers (at the 64-register cap of the full steps
// this spilled, session 15; the scaled steps leave room). Side by side against the scaled steps on an H200 (session 31)
// whole nf4 tokens were x1.0145 (Qwen2.5-7B), x1.0179 (Llama-3.1-8B), x1.0328 (Qwen2.5-14B); on an H100 x1.0006 and
// x1.0036, a tie: the decode is issue-bound only at the H200's bandwidth.
// Pair sums (kNf4StepsPairSums, ECO_CUDA_NF4_ROWS_LEAN=16): the two steps of a loop are one absmax block's two chunks
// (blocks of >= 64 columns, each warp's share an even number of steps), so their products go on in the same four fp16
// chains and the block's sum, scale and fp32 add are done once: per row and block, 3 HADD2, 2 conversions, a FADD and
// an FFMA instead of twice that, and the odd step loads no scales. 32 products a half before the sum: the table is
// scaled by 2^-5 (kNf4PairSumsShift), so no sum can overflow. Its SASS loop is 272 instructions a pair of steps against
// =9's 319; side by side on three H100s (data/h200/README.md, session 35) whole nf4 tokens were x1.019-1.021
// (Qwen2.5-7B), x1.008-1.010 (Llama-3.1-8B) and x1.026 (Qwen2.5-14B) faster than =9's. The default since session 35;
// on an H200 (session 41) x1.023 (Qwen2.5-7B) and x1.025 (Llama-3.1-8B), and =21 x0.992 / x0.990 against it.
template <bool DoubleQuant, int AmEvery, int Warps, int U, int PerSm, int Lean = 0>
__global__ void __launch_bounds__(Warps * kWarp, PerSm) matvec_nf4_rows(const MatvecParams p)
{
    extern __shared__ __align__(16) unsigned char nf4_smem[];
    constexpr int R = kNf4RowsR;
    static_assert(kRowsStepsAt<Lean> >= 0, "steps of kNf4RowsSteps");
    constexpr int kShift = kRowsShift<Lean>;
    constexpr bool kScaled = kShift > 0, kTwoSteps = kRowsTwoSteps<Lean>, kPairSums = kRowsPairSums<Lean> && U == 1;
    constexpr bool kTrace = kRowsTrace<Lean> && kPairSums; // steps of several chunks run =9 (nf4_rows_lean_for): untraced
    constexpr bool kSwigluX = kRowsSwigluX<Lean> && kPairSums; // (the engine runs =23 only where the pair sums take it)
    static_assert(AmEvery <= U && U <= kNf4RowsU && kNf4RowsU % U == 0, "steps of whole absmax blocks within the layout's column unit");
    [[maybe_unused]] unsigned long long trace_ns0 = 0;
    [[maybe_unused]] long long trace_clk0 = 0, trace_released = 0, trace_streamed = 0;
    if constexpr (kTrace) {
        trace_ns0 = global_ns();
        trace_clk0 = clock64();
    }
    grid_dependents_launch();
    const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp, warp_id = blockIdx.x * Warps + warp;
    const int C = Lean ? (int)((unsigned)p.cols >> 5) : p.cols / 32, total = nf4_rows_groups(p, rows_map(p.epilogue), R) * C;
    constexpr bool kReuse = Lean && AmEvery == U; // a step within one block: its successor may share it
    // Lean: step f (a multiple of U) lies in the absmax block of the step before it
    auto in_block_before = [&](int f) { return kReuse && (f & ((1 << p.chunk_shift) - 1)) != 0; };
    // this warp's chunks [f0, f1): even shares under =23 (its loop spilled 8 bytes on filled ones; the host fills none)
    const int share = kSwigluX ? p.chunks_per_warp : (int)rows_share_of(blockIdx.x, p.chunks_per_warp, p.share_n1, p.share_s2, p.share_n2, p.share_s3);
    const int f0 = kSwigluX ? warp_id * share : (int)rows_share_start(blockIdx.x, Warps, p.chunks_per_warp, p.share_n1, p.share_s2, p.share_n2, p.share_s3) + warp * share,
              f1 = min(total, f0 + share);
    int g = f0 / C, c = f0 % C;
    int rowB[R] = {};
    if constexpr (DoubleQuant) rows_group_rowB<R>(p, g, lane, rowB);
    // Two steps in flight before the dependency wait (the weights are not the previous kernel's output): a
    // warp of qkv or o has about two steps in all, so after the wait it only decodes; longer ranges start with
    // one more step under way. The loads then run one step ahead of the decode, as before.
    RowsStep<DoubleQuant, R, U> cur, next;
    if (f0 < f1) rows_step_load<DoubleQuant, R, U, AmEvery>(p, f0, lane, rowB, c, cur);
    fill_nf4_pair_table(nf4_smem, DoubleQuant, kShift);
    const bool preloaded = p.preload > 1 && f0 + U < f1;
    if constexpr (kPairSums) { // the second step of the first pair: its weights (its scales are the first step's)
        if (preloaded) rows_weights_load<R>(p, f0 + 1, lane, next.w[0]);
    } else if (preloaded) {
        rows_load_after<DoubleQuant, R, U, AmEvery, kReuse>(p, f0 + U, lane, g, c, C, rowB, next, &cur, in_block_before(f0 + U));
    }
    __syncthreads();
    grid_dependency_wait();
    [[maybe_unused]] const uint4 *xs4 = nullptr;
    if constexpr (kSwigluX) {
        // the next layer's gate_up sums: its down read them two layers ago and its gate_up adds after this grid is done
        float4 *zero4 = reinterpret_cast<float4 *>(p.zero);
        for (int i = warp_id * kWarp + lane; i < p.zero_n / 4; i += gridDim.x * Warps * kWarp) zero4[i] = make_float4(0.f, 0.f, 0.f, 0.f);
        __half *xs = reinterpret_cast<__half *>(nf4_smem + kNf4TableBytes + (DoubleQuant ? kNf4DmapBytes : 0)) +
                     (size_t)warp * p.chunks_per_warp * (kSwigluXChunkBytes / sizeof(__half));
        if (f0 < f1) swiglu_x_fill(p, f0, f1, C, lane, xs);
        __syncwarp();
        xs4 = reinterpret_cast<const uint4 *>(xs);
    }
    if (f0 >= f1) return;
    if constexpr (kTrace) trace_released = clock64();
    const float *dmap = reinterpret_cast<const float *>(nf4_smem + kNf4TableBytes);
    // nf4-dq: the table's lookups at a fixed window offset (nf4_pair_fixed), which a differently placed table would break
    constexpr bool kFixedTable = DoubleQuant;
    if (kFixedTable && ((unsigned)__cvta_generic_to_shared(nf4_smem) & 0xFFFFu) != kNf4TableWindowOffset) __trap();
    const unsigned lane4 = kFixedTable ? nf4_window_lane_word(nf4_smem, lane) : (unsigned)lane * 4u;
    const uint4 *x = reinterpret_cast<const uint4 *>(p.x);
    float acc[R];
#pragma unroll
    for (int r = 0; r < R; r++) acc[r] = 0.f;
    [[maybe_unused]] bool load_next = !preloaded; // Lean: the first step's successor is under way when preloaded
    // step f: decode `cur`, with `next` (the step after it) loading
    auto step = [&](RowsStep<DoubleQuant, R, U> &cur, RowsStep<DoubleQuant, R, U> &next, const int f) {
        int nc = c + U, ng = g;
        if (nc == C) { nc = 0; ng++; }
        if constexpr (Lean) {
            if (load_next && f + U < f1)
                rows_load_after<DoubleQuant, R, U, AmEvery, kReuse>(p, f + U, lane, g, c, C, rowB, next, &cur, in_block_before(f + U));
            load_next = true;
        } else if ((f != f0 || !preloaded) && f + U < f1) { // with preloaded, the first step's successor is under way
            rows_load_after<DoubleQuant, R, U, AmEvery>(p, f + U, lane, g, c, C, rowB, next);
        }
#pragma unroll
        for (int u = 0; u < U; u++) {
            // x: the same 64 bytes for the whole warp (coherent loads: x was written by the previous kernel)
            uint4 xh[4];
#pragma unroll
            for (int i = 0; i < 4; i++) xh[i] = __ldca(x + (size_t)(c + u) * 4 + i);
            float part[R];
            dot32_nf4_rows<R, !kScaled, kFixedTable>(cur.w[u], xh, nf4_smem, lane4, part);
#pragma unroll
            for (int r = 0; r < R; r++) {
                const int ub = u - u % AmEvery;
                float am = nf4_block_scale<DoubleQuant>(dmap, cur.code[ub][r], cur.am[ub][r], p.absmax_offset);
                acc[r] = fmaf(part[r], am, acc[r]);
            }
        }
        if (nc == 0 || f + U >= f1) { // the end of a row group, or of this warp's range
            if constexpr (kScaled) {
#pragma unroll
                for (int r = 0; r < R; r++) acc[r] *= (float)(1 << kShift);
            }
            rows_deposit<R>(p, g, warp_id, lane, acc);
#pragma unroll
            for (int r = 0; r < R; r++) acc[r] = 0.f;
        }
        c = nc;
        g = ng;
    };
    if constexpr (kPairSums) {
        // pairs of steps (f even): `cur` holds f with its block's scales, `next` f + 1's weights; f + 1 loads while f
        // decodes and f + 2 while f + 1 decodes, as in the two steps a loop
        [[maybe_unused]] bool load_second = !preloaded; // kRowsFirstByFlag<Lean>
        for (int f = f0; f < f1; f += 2) {
            // the block's scale now, not after the decode: nf4-dq's code and nested scale then need no registers
            // across it (with them, ptxas spilled 24 bytes at the 64-register cap)
            float scale[R];
#pragma unroll
            for (int r = 0; r < R; r++) scale[r] = nf4_block_scale<DoubleQuant>(dmap, cur.code[0][r], cur.am[0][r], p.absmax_offset);
            if (kRowsFirstByFlag<Lean> ? load_second : f != f0 || !preloaded) rows_weights_load<R>(p, f + 1, lane, next.w[0]);
            if constexpr (kRowsFirstByFlag<Lean>) load_second = true;
            __half2 h[R][4];
#pragma unroll
            for (int r = 0; r < R; r++)
#pragma unroll
                for (int k = 0; k < 4; k++) h[r][k] = __float2half2_rn(0.f);
            uint4 xh[4];
#pragma unroll
            for (int i = 0; i < 4; i++) xh[i] = kSwigluX ? xs4[(f - f0) * 4 + i] : __ldca(x + (size_t)c * 4 + i);
#pragma unroll
            for (int r = 0; r < R; r++) add32_nf4_pairs<kFixedTable>(cur.w[0][r], xh, nf4_smem, lane4, h[r]);
            if (f + 2 < f1) rows_load_after<DoubleQuant, R, 1, 1>(p, f + 2, lane, g, c + 1, C, rowB, cur);
#pragma unroll
            for (int i = 0; i < 4; i++) xh[i] = kSwigluX ? xs4[(f + 1 - f0) * 4 + i] : __ldca(x + (size_t)(c + 1) * 4 + i);
#pragma unroll
            for (int r = 0; r < R; r++) {
                add32_nf4_pairs<kFixedTable>(next.w[0][r], xh, nf4_smem, lane4, h[r]);
                acc[r] = fmaf(sum_pair_chains(h[r]), scale[r], acc[r]);
            }
            c += 2;
            if (c == C || f + 2 >= f1) { // the end of a row group, or of this warp's range
#pragma unroll
                for (int r = 0; r < R; r++) acc[r] *= (float)(1 << kShift);
                if constexpr (kTrace)
                    if (f + 2 >= f1) trace_streamed = clock64();
                rows_deposit<R>(p, g, warp_id, lane, acc);
#pragma unroll
                for (int r = 0; r < R; r++) acc[r] = 0.f;
            }
            if (c == C) {
                c = 0;
                g++;
            }
        }
        if constexpr (kTrace) rows_trace_record(p, warp_id, lane, trace_ns0, trace_clk0, trace_released, trace_streamed);
    } else if constexpr (kTwoSteps) {
        for (int f = f0; f < f1; f += 2 * U) {
            step(cur, next, f);
            if (f + U >= f1) break;
            step(next, cur, f + U);
        }
    } else {
        for (int f = f0; f < f1; f += U) {
            step(cur, next, f);
            cur = next;
        }
    }
}

} // namespace eco_cuda