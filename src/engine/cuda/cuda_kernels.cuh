// Device kernels of the CUDA backend: one warp-per-row matrix-vector skeleton with a dequant path per
// format, and the small per-token kernels (embedding, RMSNorm, RoPE + KV write, attention, SwiGLU).
// Residual stream, norms, softmax and every accumulator are fp32; matvec inputs are fp16 as in the
// reference stack (shared/research/anchor-kernels.md, Recommendations).
#pragma once

#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <stdint.h>

namespace eco_cuda {

constexpr int kWarp = 32;

__constant__ float c_nf4[16];
// byte b: fp16 code[b >> 4] (the first element) low, code[b & 15] high. Global, not __constant__: the table fill
// reads four entries per warp instruction, which the constant cache would serialize.
__device__ unsigned g_nf4_pairs[256];
__constant__ float c_dynamic_map[256];

// Everything a linear layer needs on the device, in the layout of eco_qweight (include/eco/quant.h).
struct DeviceLinear {
    int format;                 // eco_precision
    int rows, cols;
    const void *w;              // fp16 | int8 | packed nf4 (first element in the high nibble) | e4m3 bytes
    const float *row_scale;     // int8, int8-mixed, fp8
    const float *absmax;        // nf4 (fp32 per block)
    const uint8_t *absmax_q;    // nf4-dq codes
    const float *absmax_q_scale;// nf4-dq, one per 256 blocks
    float absmax_offset;        // nf4-dq
    int blocksize;              // nf4
    bool tiled;                 // weights in the tensor-core matvec's tile order (cuda_mma.cuh), not by rows
    int tile_map;               // that order's unit -> rows mapping: EP_ROPE_KV, EP_SWIGLU, or EP_STORE (consecutive rows)
    bool nf4_rows;              // nf4 interleaved a row per lane (cuda_nf4_rows.cuh); tile_map is its slot -> row mapping
    int rows_chunks_per_warp, rows_blocks, rows_slots; // its launch: each warp's share, the grid, deposit slots per group
    int rows_share_n1, rows_share_s2, rows_share_n2, rows_share_s3; // filled shares (ECO_CUDA_NF4_FILL): the warps of the
                                // first n1 blocks take rows_chunks_per_warp chunks, of the next n2 s2, the rest s3; even: n1 every block
    int rows_shape;             // and its shape (index into kNf4RowsShapes, cuda_nf4_rows.cuh)
    bool rows_filled;           // its shares filled (nf4_rows_fill): launched with a residual add only
    bool rows_swiglu_x;         // down under ECO_CUDA_SWIGLU_ATOMIC: its x made from gate_up's sums (kNf4StepsSwigluX)
    bool pairs_adjacent;        // SwiGLU gate_up stored gate 0, up 0, gate 1, up 1, ... (interleave_pairs), not stacked
};

__device__ __forceinline__ float warp_sum(float v)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ __forceinline__ int warp_sum_int(int v)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// Weights are streamed once per token: bypass L1 and mark them evict-first (ld.global.cs).
__device__ __forceinline__ uint4 load_stream(const void *p) { return __ldcs(reinterpret_cast<const uint4 *>(p)); }

// Asks L2 to fetch [p, p + bytes) from HBM (16-byte aligned, a multiple of 16) without waiting for it.
__device__ __forceinline__ void prefetch_l2(const void *p, unsigned bytes)
{
    asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(p), "r"(bytes) : "memory");
}

// ---- Programmatic dependent launch (Hopper) ----
// Every kernel of a token lets the next one be scheduled as soon as it starts (launch_dependents) and waits
// for its predecessor's results only where it reads them (wait). A matvec issues its first weight loads
// before the wait: weights never depend on the previous kernel, so HBM keeps streaming through the small
// kernels (norm, attention) and the tail of the previous matvec. Both are no-ops in a plain launch.
__device__ __forceinline__ void grid_dependency_wait() { asm volatile("griddepcontrol.wait;" ::: "memory"); }
__device__ __forceinline__ void grid_dependents_launch() { asm volatile("griddepcontrol.launch_dependents;" ::: "memory"); }

// ---- The matrix-vector skeleton ----
// One warp owns one work item: R rows (consecutive, or a pair the epilogue combines) over one slice of the
// columns. Each lane keeps U x R independent 16-byte streaming loads in flight and loads the next batch
// before it computes the current one. The x fragment a lane loads (and converts to fp32 once) serves all R
// rows. Decoders avoid the slow int->float conversion unit: int8 through the 2^23 float trick, e4m3 by
// moving its bits into an fp16 (value * 2^-8, exact, folded into the row scale), nf4 through a 16-entry
// fp32 table in shared memory (16 distinct banks: any lookup pattern is conflict-free).
constexpr int kWarpsPerBlock = 4;

enum WeightKind { W_F16 = 0, W_I8 = 1, W_FP8 = 2, W_NF4 = 3, W_FP8_HW = 4, W_I8X = 5 /* LLM.int8(): int8 x int8 */ };

template <int K> struct Elems;                       // weights per 16-byte load
template <> struct Elems<W_F16> { static constexpr int n = 8; };
template <> struct Elems<W_I8> { static constexpr int n = 16; };
template <> struct Elems<W_FP8> { static constexpr int n = 16; };
template <> struct Elems<W_NF4> { static constexpr int n = 32; };
template <> struct Elems<W_FP8_HW> { static constexpr int n = 16; };
template <> struct Elems<W_I8X> { static constexpr int n = 16; };

enum Epilogue {
    EP_STORE = 0,      // y[row] = v (fp32)
    EP_ADD = 1,        // y[row] += v (the residual add)
    EP_ATOMIC_ADD = 2, // y[row] += v from several column slices (split-K)
    EP_SWIGLU = 3,     // rows (i, i + pair_offset) are (gate, up): act[i] = fp16(silu(gate) * up)
    EP_ROPE_KV = 4,    // rows (i, i + head_dim/2) of one head: bias, rotate q and k, k and v into the fp16 caches
};

// The epilogues that combine two rows (a unit is a pair of rows, not one).
__host__ __device__ __forceinline__ bool paired_epilogue(int epilogue) { return epilogue == EP_SWIGLU || epilogue == EP_ROPE_KV; }

struct MatvecParams {
    const uint8_t *w;
    const float *row_scale;      // int8, int8-mixed, fp8
    const float *absmax;         // nf4
    const uint8_t *absmax_q;     // nf4-dq
    const float *absmax_q_scale; // nf4-dq
    float absmax_offset;         // nf4-dq
    int block_shift;             // nf4: log2(blocksize)
    const __half *x;             // fp16 input
    const int8_t *xq;            // int8-mixed: quantized input, its absmax and outlier columns
    const float *x_absmax;
    const int *outliers, *n_outliers;
    int rows, cols, splits;
    int epilogue;
    float *y;                    // EP_STORE / EP_ADD / EP_ATOMIC_ADD; EP_ROPE_KV: q (fp32, first heads*head_dim rows)
    __half *act;                 // EP_SWIGLU
    int pair_offset;             // EP_SWIGLU
    const float *bias;           // EP_ROPE_KV (may be NULL)
    const float2 *rope;          // EP_ROPE_KV: (cos, sin) per position and frequency, computed in double on the host
    const int *pos;
    __half *k_cache, *v_cache;
    int heads, kv_heads, head_dim;
    unsigned l2_prefetch;        // bytes of each row slice, past the first loads, to prefetch into L2 before the wait
    int chunk_shift;             // nf4 rows (cuda_nf4_rows.cuh): log2(blocksize / 32)
    int chunks_per_warp, slots;  // its share of the chunks per warp; deposit slots per row group
    int share_n1, share_s2, share_n2, share_s3; // a residual linear's filled shares: chunks_per_warp for the warps of
                                 // the first share_n1 blocks, share_s2 of the next share_n2, share_s3 the rest (rows_share_start)
    int preload;                 // its steps loaded before the dependency wait: 1 or 2 (ECO_CUDA_NF4_PRELOAD)
    float *partials;             // its deposits [groups][slots][R][32]
    int *arrivals;               // [groups]: warps done with a row group (the last resets it)
    int pairs_adjacent;          // EP_SWIGLU: unit u's gate and up rows are 2u and 2u + 1 (else u and u + pair_offset)
    const float *swiglu_sums;    // nf4 rows, down under ECO_CUDA_SWIGLU_ATOMIC: x = fp16(silu(gate) * up) of these sums
                                 // (gate at column j, up at cols + j), not p.x
    float *zero;                 // and the sums of the next layer's gate_up, zeroed after the dependency wait
    int zero_n;
};

// The scale of a block of nf4 weights: its fp32 absmax, or for nf4-dq the absmax code's dynamic-map value times
// the nested (group) scale, plus the offset.
template <bool DoubleQuant>
__device__ __forceinline__ float nf4_block_scale(const float *dmap, unsigned code, float scale, float offset)
{
    return DoubleQuant ? dmap[code] * scale + offset : scale;
}

template <int N> __device__ __forceinline__ void load_x(const __half *__restrict__ x, float (&xf)[N])
{
#pragma unroll
    for (int i = 0; i < N / 8; i++) {
        uint4 v = __ldg(reinterpret_cast<const uint4 *>(x) + i);
        const __half2 *h = reinterpret_cast<const __half2 *>(&v);
#pragma unroll
        for (int j = 0; j < 4; j++) {
            float2 f = __half22float2(h[j]);
            xf[8 * i + 2 * j] = f.x;
            xf[8 * i + 2 * j + 1] = f.y;
        }
    }
}

// int8 byte k of word v as an exact float: the byte (offset by 128) becomes the low mantissa bits of 2^23.
__device__ __forceinline__ float i8_at(unsigned v_offset, int k)
{
    return __int_as_float(__byte_perm(v_offset, 0x4B000000u, 0x7540 + k)) - 8388736.f;
}

// Two e4m3 bytes (selected by `sel`) as an fp16 pair holding value * 2^-8: the byte goes to the high byte
// of each half, and the 7 exponent+mantissa bits move one place right (e4m3 has 4 exponent bits, fp16 5).
// Exact for every finite e4m3 value, subnormals included.
__device__ __forceinline__ float2 e4m3x2_scaled(unsigned v, unsigned sel)
{
    unsigned t = __byte_perm(v, 0u, sel);
    unsigned h = (t & 0x80008000u) | ((t >> 1) & 0x3F803F80u);
    return __half22float2(*reinterpret_cast<__half2 *>(&h));
}

// Four independent accumulators per 16-byte chunk: a single chain would serialize the FMAs of a chunk.
template <int K> __device__ __forceinline__ float dot16(uint4 w, const float *xf, const float *lut)
{
    float acc[4] = {0.f, 0.f, 0.f, 0.f};
    const unsigned *u = reinterpret_cast<const unsigned *>(&w);
    if constexpr (K == W_F16) {
        const __half2 *h = reinterpret_cast<const __half2 *>(&w);
#pragma unroll
        for (int i = 0; i < 4; i++) {
            float2 f = __half22float2(h[i]);
            acc[i] = fmaf(f.x, xf[2 * i], acc[i]);
            acc[i] = fmaf(f.y, xf[2 * i + 1], acc[i]);
        }
    } else if constexpr (K == W_I8) {
#pragma unroll
        for (int i = 0; i < 4; i++) {
            unsigned v = u[i] ^ 0x80808080u;
#pragma unroll
            for (int k = 0; k < 4; k++) acc[k] = fmaf(i8_at(v, k), xf[4 * i + k], acc[k]);
        }
    } else if constexpr (K == W_FP8_HW) { // the hardware e4m3x2 -> f16x2 conversion (sm_89+)
        const __nv_fp8x2_storage_t *p = reinterpret_cast<const __nv_fp8x2_storage_t *>(&w);
#pragma unroll
        for (int i = 0; i < 8; i++) {
            __half2_raw raw = __nv_cvt_fp8x2_to_halfraw2(p[i], __NV_E4M3);
            float2 f = __half22float2(*reinterpret_cast<__half2 *>(&raw));
            acc[i & 3] = fmaf(f.x, xf[2 * i], acc[i & 3]);
            acc[i & 3] = fmaf(f.y, xf[2 * i + 1], acc[i & 3]);
        }
    } else if constexpr (K == W_FP8) {
#pragma unroll
        for (int i = 0; i < 4; i++) {
            float2 a = e4m3x2_scaled(u[i], 0x1404u), b = e4m3x2_scaled(u[i], 0x3424u);
            acc[0] = fmaf(a.x, xf[4 * i], acc[0]);
            acc[1] = fmaf(a.y, xf[4 * i + 1], acc[1]);
            acc[2] = fmaf(b.x, xf[4 * i + 2], acc[2]);
            acc[3] = fmaf(b.y, xf[4 * i + 3], acc[3]);
        }
    } else if constexpr (K == W_NF4) {
        // Byte offsets into the fp32 table (index * 4) for the four high and four low nibbles of a word,
        // two instructions each; one byte permute then picks each offset (the first element is the high nibble).
        const char *base = reinterpret_cast<const char *>(lut);
#pragma unroll
        for (int i = 0; i < 4; i++) {
            unsigned hi = (u[i] >> 2) & 0x3C3C3C3Cu, lo = (u[i] << 2) & 0x3C3C3C3Cu;
#pragma unroll
            for (int k = 0; k < 4; k++) {
                float a = *reinterpret_cast<const float *>(base + __byte_perm(hi, 0u, 0x4440u + k));
                float b = *reinterpret_cast<const float *>(base + __byte_perm(lo, 0u, 0x4440u + k));
                acc[k] = fmaf(a, xf[8 * i + 2 * k], acc[k]);
                acc[k] = fmaf(b, xf[8 * i + 2 * k + 1], acc[k]);
            }
        }
    }
    return (acc[0] + acc[1]) + (acc[2] + acc[3]);
}

// The rows of one work item, in the order the epilogue expects.
template <int R> __device__ __forceinline__ void item_rows(const MatvecParams &p, int unit, int (&row)[R])
{
    if (p.epilogue == EP_SWIGLU) {
        row[0] = p.pairs_adjacent ? 2 * unit : unit;
        row[R - 1] = p.pairs_adjacent ? 2 * unit + 1 : unit + p.pair_offset;
    } else if (p.epilogue == EP_ROPE_KV) {
        int half = p.head_dim / 2, head = unit / half;
        row[0] = head * p.head_dim + unit % half;
        row[R - 1] = row[0] + half;
    } else {
#pragma unroll
        for (int r = 0; r < R; r++) row[r] = min(unit * R + r, p.rows - 1);
    }
}

// Work items before column slicing; the host sizes the grid with the same function.
__host__ __device__ __forceinline__ int item_units(const MatvecParams &p, int R)
{
    if (p.epilogue == EP_SWIGLU) return p.pair_offset;
    if (p.epilogue == EP_ROPE_KV) return p.rows / 2;
    return (p.rows + R - 1) / R;
}

// SwiGLU's activation of one unit, in fp32: every path that makes it (the fused epilogue, the unfused kernel, down's
// x under ECO_CUDA_SWIGLU_ATOMIC) rounds the same value to fp16.
__device__ __forceinline__ float silu_times(float gate, float up) { return gate / (1.f + __expf(-gate)) * up; }

// Rotate-half RoPE of the pair (a, b) = (x[i], x[i + head_dim / 2]) by (cos, sin) of its position and frequency.
__device__ __forceinline__ float2 rope_rotate(float a, float b, float2 cs) { return make_float2(a * cs.x - b * cs.y, b * cs.x + a * cs.y); }

// Lane 0 writes the finished rows. v[] is already scaled to the true dot product.
template <int R> __device__ __forceinline__ void finish_rows(const MatvecParams &p, int unit, const int (&row)[R], const float (&v)[R])
{
    switch (p.epilogue) {
    case EP_STORE:
#pragma unroll
        for (int r = 0; r < R; r++)
            if (unit * R + r < p.rows) p.y[row[r]] = v[r];
        break;
    case EP_ADD:
#pragma unroll
        for (int r = 0; r < R; r++)
            if (unit * R + r < p.rows) p.y[row[r]] += v[r];
        break;
    case EP_ATOMIC_ADD:
#pragma unroll
        for (int r = 0; r < R; r++)
            if (unit * R + r < p.rows) atomicAdd(p.y + row[r], v[r]);
        break;
    case EP_SWIGLU: {
        float g = v[0], up = v[R - 1];
        p.act[unit] = __float2half(silu_times(g, up));
        break;
    }
    case EP_ROPE_KV: {
        int half = p.head_dim / 2, head = unit / half, i = unit % half, pos = *p.pos;
        int q_dim = p.heads * p.head_dim, kv_dim = p.kv_heads * p.head_dim;
        float a = v[0], b = v[R - 1];
        if (p.bias) { a += p.bias[row[0]]; b += p.bias[row[R - 1]]; }
        if (head < p.heads + p.kv_heads) {
            float2 r = rope_rotate(a, b, p.rope[(size_t)pos * half + i]);
            a = r.x;
            b = r.y;
        }
        if (head < p.heads) {
            p.y[row[0]] = a;
            p.y[row[R - 1]] = b;
        } else {
            bool is_k = head < p.heads + p.kv_heads;
            __half *cache = is_k ? p.k_cache : p.v_cache;
            size_t at = (size_t)pos * kv_dim + row[0] - q_dim - (is_k ? 0 : kv_dim);
            cache[at] = __float2half(a);
            cache[at + half] = __float2half(b);
        }
        break;
    }
    }
}

template <int K, bool DoubleQuant, int R, int U> struct Batch {
    uint4 w[U][R];
    float am[U][R];      // nf4: absmax; nf4-dq: the block's group scale (the code is in code[][])
    unsigned code[U][R]; // nf4-dq: absmax code
};

template <int K, bool DoubleQuant, int R, int U>
__device__ __forceinline__ void load_batch(const MatvecParams &p, const uint8_t *const (&base)[R], const int (&row)[R],
                                           int ch, int c1, Batch<K, DoubleQuant, R, U> &b)
{
    constexpr int E = Elems<K>::n;
#pragma unroll
    for (int u = 0; u < U; u++) {
        int c = ch + u * kWarp;
#pragma unroll
        for (int r = 0; r < R; r++) {
            if (c < c1) {
                b.w[u][r] = load_stream(base[r] + (size_t)c * 16);
                if constexpr (K == W_NF4) {
                    size_t block = ((size_t)row[r] * (size_t)p.cols + (size_t)c * E) >> p.block_shift;
                    if constexpr (DoubleQuant) {
                        b.code[u][r] = __ldg(p.absmax_q + block);
                        b.am[u][r] = __ldg(p.absmax_q_scale + (block >> 8));
                    } else {
                        b.am[u][r] = __ldg(p.absmax + block);
                    }
                }
            }
        }
    }
}

// y (epilogue) = W x for one linear. W_I8X (LLM.int8()) dots the int8 activations with dp4a and adds the
// fp16 outlier columns at the end. For nf4 the block absmax multiplies each 32-weight partial sum (a
// 16-byte chunk never straddles a block: blocksize % 32 == 0, checked on the host).
template <int K, bool DoubleQuant, int R, int U>
__global__ void __launch_bounds__(kWarpsPerBlock * kWarp) matvec(const MatvecParams p)
{
    __shared__ float lut[K == W_NF4 ? 16 : 1];
    __shared__ float dmap[K == W_NF4 && DoubleQuant ? 256 : 1];
    if constexpr (K == W_NF4) {
        if (threadIdx.x < 16) lut[threadIdx.x] = c_nf4[threadIdx.x];
        if constexpr (DoubleQuant)
            for (int i = threadIdx.x; i < 256; i += blockDim.x) dmap[i] = c_dynamic_map[i];
        __syncthreads();
    }
    grid_dependents_launch();
    constexpr int E = Elems<K>::n;
    int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
    int item = blockIdx.x * kWarpsPerBlock + warp;
    int units = item_units(p, R);
    if (item >= units * p.splits) return;
    int unit = item / p.splits, split = item % p.splits;
    int row[R];
    item_rows<R>(p, unit, row);
    size_t row_bytes = K == W_NF4 ? (size_t)p.cols / 2 : K == W_F16 ? (size_t)p.cols * 2 : (size_t)p.cols;
    const uint8_t *base[R];
#pragma unroll
    for (int r = 0; r < R; r++) base[r] = p.w + (size_t)row[r] * row_bytes;
    int chunks = p.cols / E, per = (chunks + p.splits - 1) / p.splits;
    int c0 = split * per, c1 = min(chunks, c0 + per);

    Batch<K, DoubleQuant, R, U> cur;
    load_batch<K, DoubleQuant, R, U>(p, base, row, c0 + lane, c1, cur);
    // Between two matvecs sit latency-bound kernels (norm, attention) that leave HBM idle: a small linear's
    // remaining bytes are fetched into L2 meanwhile (the host sets l2_prefetch only for those).
    if (p.l2_prefetch) {
        size_t from = (size_t)(c0 + kWarp * U) * 16, to = min((size_t)c1 * 16, from + p.l2_prefetch);
#pragma unroll
        for (int r = 0; r < R; r++)
            if (lane == r && to > from) prefetch_l2(base[r] + from, (unsigned)(to - from));
    }
    grid_dependency_wait();

    float acc[R];
    int iacc[R];
#pragma unroll
    for (int r = 0; r < R; r++) { acc[r] = 0.f; iacc[r] = 0; }
    for (int ch = c0 + lane; ch < c1; ch += kWarp * U) {
        Batch<K, DoubleQuant, R, U> next;
        load_batch<K, DoubleQuant, R, U>(p, base, row, ch + kWarp * U, c1, next);
#pragma unroll
        for (int u = 0; u < U; u++) {
            int c = ch + u * kWarp;
            if (c >= c1) break;
            if constexpr (K == W_I8X) {
                uint4 a = __ldg(reinterpret_cast<const uint4 *>(p.xq) + c);
#pragma unroll
                for (int r = 0; r < R; r++) {
                    iacc[r] = __dp4a((int)cur.w[u][r].x, (int)a.x, iacc[r]);
                    iacc[r] = __dp4a((int)cur.w[u][r].y, (int)a.y, iacc[r]);
                    iacc[r] = __dp4a((int)cur.w[u][r].z, (int)a.z, iacc[r]);
                    iacc[r] = __dp4a((int)cur.w[u][r].w, (int)a.w, iacc[r]);
                }
            } else {
                float xf[E];
                load_x<E>(p.x + (size_t)c * E, xf);
#pragma unroll
                for (int r = 0; r < R; r++) {
                    float part = dot16<K>(cur.w[u][r], xf, lut);
                    if constexpr (K == W_NF4) {
                        float am = nf4_block_scale<DoubleQuant>(dmap, cur.code[u][r], cur.am[u][r], p.absmax_offset);
                        acc[r] = fmaf(part, am, acc[r]);
                    } else {
                        acc[r] += part;
                    }
                }
            }
        }
        cur = next;
    }

    float v[R];
    if constexpr (K == W_I8X) {
        int n = split == 0 ? *p.n_outliers : 0;
        float xs = *p.x_absmax / 127.f;
#pragma unroll
        for (int r = 0; r < R; r++) {
            float s = p.row_scale[row[r]], out = 0.f;
            for (int i = lane; i < n; i += kWarp) {
                int j = p.outliers[i];
                float wdq = __half2float(__float2half((float)((const int8_t *)base[r])[j] * s));
                out = fmaf(wdq, __half2float(p.x[j]), out);
            }
            v[r] = (float)warp_sum_int(iacc[r]) * xs * s + warp_sum(out);
        }
    } else {
#pragma unroll
        for (int r = 0; r < R; r++) {
            v[r] = warp_sum(acc[r]);
            if (K == W_I8 || K == W_FP8_HW) v[r] *= p.row_scale[row[r]];
            if (K == W_FP8) v[r] *= p.row_scale[row[r]] * 256.f; // the e4m3 -> fp16 bit move scaled by 2^-8
        }
    }
    if (lane == 0) finish_rows<R>(p, unit, row, v);
}

// ---- nf4 through per-lane copies of a byte-pair table ----
// The 16-entry fp32 table costs one shared-memory lookup per weight, and shared memory serves 32 lookups a
// clock per SM: about the rate at which the H200 streams nf4 weights, so the decoder, not HBM, sets the pace
// (bench_matvec: 41% of the bandwidth). Here a byte indexes a table of 256 fp16 pairs: one lookup per two
// weights, multiplied with the fp16 x pair by one HFMA2. A single 256-word table puts 8 entries in every bank
// and random bytes collide; 32 copies, lane l's at byte l * 4 of every 256-byte row, put lane l in bank l, so
// no byte pattern conflicts, and the row stride makes the lookup address one byte permute of the weight word
// and lane * 4 (PRMT, LDS, HFMA2 per weight byte; the 128-byte stride of session 5 needed five instructions).
// The 64 KB table is filled once per block, so blocks are wide and loop over work items (the grid is what fits
// on the GPU at once), and the fill runs before the dependency wait, under the previous kernel's tail.
constexpr int kNf4TableRowBytes = 256; // 128 used
constexpr int kNf4TableBytes = 256 * kNf4TableRowBytes;
constexpr int kNf4DmapBytes = 256 * sizeof(float); // nf4-dq: the dynamic map, after the table
constexpr int kNf4LaneWarps = 8;

// The codes scaled by 2^-4 (kNf4ScaledShift; the rows decoder's default steps since session 30): |code| <= 1 and
// |x| <= 65504, so a fp16 sum of 16 scaled products stays within 65504 and cannot overflow; the caller multiplies
// its fp32 sums by 16 again (exact). The cost: a scaled product below 2^-14 is an fp16 subnormal, so products below
// 2^-10 in unscaled terms lose bits (2^-14 with the unscaled table).
constexpr int kNf4ScaledShift = 4;
// The pair sums (kNf4StepsPairSums) add 32 products a half before their sum: codes times 2^-5 keep those within 65504.
constexpr int kNf4PairSumsShift = 5;

// The table, and for nf4-dq the dynamic map right after it, by every thread of the block; shift > 0: codes times
// 2^-shift (exact for shifts up to 9: the smallest nonzero code, 0.0796, stays a normal fp16 number).
__device__ __forceinline__ void fill_nf4_pair_table(unsigned char *smem, bool double_quant, int shift = 0)
{
#pragma unroll 8
    for (int i = threadIdx.x; i < 256 * kWarp / 4; i += blockDim.x) { // 8 uint4 per row: the 32 lane copies
        unsigned v = __ldg(g_nf4_pairs + i / 8);
        if (shift) {
            __half2 h = __hmul2(*reinterpret_cast<const __half2 *>(&v), __float2half2_rn(1.f / (1 << shift)));
            v = *reinterpret_cast<const unsigned *>(&h);
        }
        *reinterpret_cast<uint4 *>(smem + (i / 8) * kNf4TableRowBytes + (i % 8) * 16) = make_uint4(v, v, v, v);
    }
    if (double_quant) {
        float *dmap = reinterpret_cast<float *>(smem + kNf4TableBytes);
        for (int i = threadIdx.x; i < 256; i += blockDim.x) dmap[i] = c_dynamic_map[i];
    }
}

// The fp16 pair of codes for byte k of a weight word, from lane copy lane4 / 4.
__device__ __forceinline__ unsigned nf4_pair(unsigned word, int k, const unsigned char *table, unsigned lane4)
{
    return *reinterpret_cast<const unsigned *>(table + __byte_perm(word, lane4, 0x5504u | ((unsigned)k << 4)));
}

// Where the row decoder's dynamic shared memory (the pair table) begins in the CTA's shared window: sm_90 reserves the
// window's first 1 KB for the system and matvec_nf4_rows declares no static shared memory (allow_large_shared_memory
// checks both on the host, the kernel its own address on the device).
constexpr unsigned kNf4TableWindowOffset = 1024;

// The lane word of nf4_pair_fixed: the table's window address less its low half (the CTA's place in its cluster),
// and lane * 4.
__device__ __forceinline__ unsigned nf4_window_lane_word(const unsigned char *table, int lane)
{
    return ((unsigned)__cvta_generic_to_shared(table) & 0xFFFF0000u) | (unsigned)lane * 4u;
}

// nf4_pair for the table at kNf4TableWindowOffset: one byte permute makes the whole address but that offset, which the
// load takes as an immediate. Why: in the nf4-dq row decoder ptxas kept the table's base in a vector register and
// added it before every lookup (64 IMADs in a loop of 336 instructions, bench/sass_loop.sh); the plain decoder keeps
// it in a uniform register, which the load adds for free.
__device__ __forceinline__ unsigned nf4_pair_fixed(unsigned word, int k, unsigned lane_word)
{
    unsigned v, at = __byte_perm(word, lane_word, 0x7604u | ((unsigned)k << 4));
    asm volatile("ld.shared.b32 %0, [%1+%2];" : "=r"(v) : "r"(at), "n"(kNf4TableWindowOffset));
    return v;
}

// The pair lookup the row decoder uses: lane4 is lane * 4 (table: the table) or, Fixed, nf4_window_lane_word's.
template <bool Fixed> __device__ __forceinline__ unsigned nf4_pair_in(unsigned word, int k, const unsigned char *table, unsigned lane4)
{
    if constexpr (Fixed) return nf4_pair_fixed(word, k, lane4);
    else return nf4_pair(word, k, table, lane4);
}

// The exact fallback: fp32 codes and products (for a chunk whose fp16 partial overflowed).
__device__ __noinline__ float dot16_nf4_fp32(uint4 w, uint4 x0, uint4 x1, uint4 x2, uint4 x3)
{
    const uint4 xh[4] = {x0, x1, x2, x3};
    const unsigned *u = reinterpret_cast<const unsigned *>(&w);
    const __half2 *x = reinterpret_cast<const __half2 *>(xh);
    float acc = 0.f;
    for (int i = 0; i < 16; i++) {
        unsigned byte = (u[i / 4] >> (8 * (i % 4))) & 0xFFu;
        float2 xf = __half22float2(x[i]);
        acc = fmaf(c_nf4[byte >> 4], xf.x, acc);
        acc = fmaf(c_nf4[byte & 15u], xf.y, acc);
    }
    return acc;
}

// 32 weights added into four fp16 pair chains (pair(word, k): the fp16 pair of codes for byte k of the weight
// word, i.e. how the table is addressed). The caller sums the chains (sum_pair_chains): after one chunk
// (dot32_pairs), or after the chunks that share one sum (the nf4 rows decoder's pair sums).
template <typename Pair> __device__ __forceinline__ void add32_pairs(uint4 w, const uint4 (&xh)[4], Pair pair, __half2 (&acc)[4])
{
    const unsigned *u = reinterpret_cast<const unsigned *>(&w);
    const __half2 *x = reinterpret_cast<const __half2 *>(xh);
#pragma unroll
    for (int i = 0; i < 4; i++) {
#pragma unroll
        for (int k = 0; k < 4; k++) {
            unsigned bits = pair(u[i], k);
            acc[k] = __hfma2(*reinterpret_cast<const __half2 *>(&bits), x[4 * i + k], acc[k]);
        }
    }
}

// The four chains' sum, in fp32 from their fp16 total.
__device__ __forceinline__ float sum_pair_chains(const __half2 (&acc)[4])
{
    float2 f = __half22float2(__hadd2(__hadd2(acc[0], acc[1]), __hadd2(acc[2], acc[3])));
    return f.x + f.y;
}

// 32 weights: fp16 products summed in four pair chains of four, then in fp32. |code| <= 1, so the fp16
// partial overflows only when x holds values near the fp16 limit; the caller redoes such a chunk in fp32
// (one check for all R rows, so the rows' lookups interleave without a branch between them).
template <typename Pair> __device__ __forceinline__ float dot32_pairs(uint4 w, const uint4 (&xh)[4], Pair pair)
{
    __half2 acc[4];
#pragma unroll
    for (int k = 0; k < 4; k++) acc[k] = __float2half2_rn(0.f);
    add32_pairs(w, xh, pair, acc);
    return sum_pair_chains(acc);
}

template <bool Fixed = false>
__device__ __forceinline__ float dot32_nf4_pairs(uint4 w, const uint4 (&xh)[4], const unsigned char *table, unsigned lane4)
{
    return dot32_pairs(w, xh, [=](unsigned word, int k) { return nf4_pair_in<Fixed>(word, k, table, lane4); });
}

template <bool Fixed = false>
__device__ __forceinline__ void add32_nf4_pairs(uint4 w, const uint4 (&xh)[4], const unsigned char *table, unsigned lane4, __half2 (&acc)[4])
{
    add32_pairs(w, xh, [=](unsigned word, int k) { return nf4_pair_in<Fixed>(word, k, table, lane4); }, acc);
}

// The rows whose fp16 partial sum overflowed (not finite), redone in fp32 from their 32-weight chunk w[r] and xh.
template <int R>
__device__ __forceinline__ void redo_overflowed(const uint4 (&w)[R], const uint4 (&xh)[4], float (&part)[R])
{
#pragma unroll
    for (int r = 0; r < R; r++)
        if (!isfinite(part[r])) part[r] = dot16_nf4_fp32(w[r], xh[0], xh[1], xh[2], xh[3]);
}

// The partial sums of R rows' 32-weight chunks w[r] against xh. Checked: each chunk whose fp16 sum overflowed is
// redone in fp32 (one check for the R rows); unchecked for a table whose codes cannot overflow (kNf4ScaledShift).
template <int R, bool Checked = true, bool Fixed = false>
__device__ __forceinline__ void dot32_nf4_rows(const uint4 (&w)[R], const uint4 (&xh)[4], const unsigned char *table, unsigned lane4,
                                               float (&part)[R])
{
    bool finite = true;
#pragma unroll
    for (int r = 0; r < R; r++) {
        part[r] = dot32_nf4_pairs<Fixed>(w[r], xh, table, lane4);
        if constexpr (Checked) finite &= isfinite(part[r]);
    }
    if (Checked && !finite) redo_overflowed<R>(w, xh, part);
}

// A work item of this decoder is R rows: one unit of R rows, or for a paired epilogue (SwiGLU, RoPE) R/2
// consecutive units of two rows, so x is read and kept once for R rows either way.

__host__ __device__ __forceinline__ int lane_items(const MatvecParams &p, int R)
{
    return paired_epilogue(p.epilogue) ? (item_units(p, 2) + R / 2 - 1) / (R / 2) : item_units(p, R);
}

template <int R> __device__ __forceinline__ void lane_item_rows(const MatvecParams &p, int item, int (&row)[R])
{
    if (paired_epilogue(p.epilogue)) {
        int units = item_units(p, 2);
#pragma unroll
        for (int j = 0; j < R / 2; j++) {
            int pair[2];
            item_rows<2>(p, min(item * (R / 2) + j, units - 1), pair); // a last item's spare units repeat the last
            row[2 * j] = pair[0];
            row[2 * j + 1] = pair[1];
        }
    } else {
        item_rows<R>(p, item, row);
    }
}

template <int R> __device__ __forceinline__ void lane_item_finish(const MatvecParams &p, int item, const int (&row)[R], const float (&v)[R])
{
    if (paired_epilogue(p.epilogue)) {
        int units = item_units(p, 2);
#pragma unroll
        for (int j = 0; j < R / 2; j++) {
            int unit = item * (R / 2) + j;
            const int pr[2] = {row[2 * j], row[2 * j + 1]};
            const float pv[2] = {v[2 * j], v[2 * j + 1]};
            if (unit < units) finish_rows<2>(p, unit, pr, pv);
        }
    } else {
        finish_rows<R>(p, item, row, v);
    }
}

// One work item: its rows and this split's chunk range.
template <int R> struct LaneItem {
    int item, c0, c1;
    int row[R];
};

template <int R> __device__ __forceinline__ void lane_item_begin(const MatvecParams &p, int work, LaneItem<R> &t)
{
    constexpr int E = Elems<W_NF4>::n;
    int split = work % p.splits, chunks = p.cols / E, per = (chunks + p.splits - 1) / p.splits;
    t.item = work / p.splits;
    lane_item_rows<R>(p, t.item, t.row);
    t.c0 = split * per;
    t.c1 = min(chunks, t.c0 + per);
}

// Puts this lane's loads of chunk c of item t in flight.
template <bool DoubleQuant, int R>
__device__ __forceinline__ void lane_item_load(const MatvecParams &p, const LaneItem<R> &t, int c, Batch<W_NF4, DoubleQuant, R, 1> &b)
{
    const uint8_t *base[R];
#pragma unroll
    for (int r = 0; r < R; r++) base[r] = p.w + (size_t)t.row[r] * ((size_t)p.cols / 2);
    load_batch<W_NF4, DoubleQuant, R, 1>(p, base, t.row, c, t.c1, b);
}

// Dynamic shared memory: the pair table, then (nf4-dq) the dynamic map. A warp's work is one stream of
// steps (a step: 32 chunks of R rows) over all its work items, and each lane keeps the next step's loads in
// flight while it decodes the current one, across item boundaries too: nf4 rows are short (3584 columns:
// 1.75 KB, under four steps), and an item that started with a load it then waited for spent a whole memory
// latency of its four steps idle. MinBlocks (blocks per SM) caps the registers.
template <bool DoubleQuant, int R, int MinBlocks>
__global__ void __launch_bounds__(kNf4LaneWarps * kWarp, MinBlocks) matvec_nf4_lanes(const MatvecParams p)
{
    extern __shared__ __align__(16) unsigned char nf4_smem[];
    grid_dependents_launch();
    constexpr int E = Elems<W_NF4>::n;
    int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
    int total = lane_items(p, R) * p.splits, stride = gridDim.x * kNf4LaneWarps;
    int work = blockIdx.x * kNf4LaneWarps + warp;
    LaneItem<R> a;
    Batch<W_NF4, DoubleQuant, R, 1> cur;
    if (work < total) {
        lane_item_begin<R>(p, work, a);
        lane_item_load<DoubleQuant, R>(p, a, a.c0 + lane, cur);
    }
    fill_nf4_pair_table(nf4_smem, DoubleQuant);
    __syncthreads();
    grid_dependency_wait();
    if (work >= total) return;
    const float *dmap = reinterpret_cast<const float *>(nf4_smem + kNf4TableBytes);
    const unsigned lane4 = (unsigned)lane * 4u;
    float acc[R];
#pragma unroll
    for (int r = 0; r < R; r++) acc[r] = 0.f;
    for (int step = a.c0;;) { // warp-uniform: this lane's chunk is step + lane
        int next_step = step + kWarp, next_work = work + stride;
        bool last = next_step >= a.c1; // of this item
        LaneItem<R> b;
        Batch<W_NF4, DoubleQuant, R, 1> next;
        if (!last) {
            lane_item_load<DoubleQuant, R>(p, a, next_step + lane, next);
        } else if (next_work < total) {
            lane_item_begin<R>(p, next_work, b);
            next_step = b.c0;
            lane_item_load<DoubleQuant, R>(p, b, next_step + lane, next);
        }
        int c = step + lane;
        if (c < a.c1) {
            // x stays fp16: 32 values as 16 pairs, shared by the R rows. A coherent load: the read-only path
            // (__ldg) may be hoisted above the dependency wait, before the previous kernel wrote x.
            uint4 xh[4];
#pragma unroll
            for (int i = 0; i < 4; i++) xh[i] = __ldca(reinterpret_cast<const uint4 *>(p.x + (size_t)c * E) + i);
            float part[R];
            dot32_nf4_rows<R>(cur.w[0], xh, nf4_smem, lane4, part);
#pragma unroll
            for (int r = 0; r < R; r++) {
                float am = nf4_block_scale<DoubleQuant>(dmap, cur.code[0][r], cur.am[0][r], p.absmax_offset);
                acc[r] = fmaf(part[r], am, acc[r]);
            }
        }
        if (last) {
            float v[R];
#pragma unroll
            for (int r = 0; r < R; r++) v[r] = warp_sum(acc[r]), acc[r] = 0.f;
            if (lane == 0) lane_item_finish<R>(p, a.item, a.row, v);
            if (next_work >= total) break;
            work = next_work;
            a = b;
        }
        step = next_step;
        cur = next;
    }
}

// The second half of LLM.int8()'s per-token quantization, by every thread of one block, given the absmax of the
// inliers: outlier columns (|x| >= threshold) are listed (*count, in shared memory, starts at 0) and zeroed in
// xq; the rest are scaled by 127/absmax and rounded half to even. Shared by quantize_activations and the
// quantizing RMSNorm, so both give the same bytes.
// x is not __restrict__: the quantizing RMSNorm reads back what it wrote in the same kernel, which the
// read-only (non-coherent) path must not serve.
__device__ __forceinline__ void quantize_with_absmax(const __half *x, int n, float absmax, float threshold,
                                                     int8_t *__restrict__ xq, int *count, float *__restrict__ x_absmax,
                                                     int *__restrict__ outliers, int *__restrict__ n_outliers, int max_outliers)
{
    float inv = absmax > 0.f ? 127.f / absmax : 0.f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        float v = __half2float(x[i]);
        if (threshold > 0.f && fabsf(v) >= threshold) {
            int k = atomicAdd(count, 1);
            if (k < max_outliers) outliers[k] = i;
            xq[i] = 0;
        } else {
            xq[i] = (int8_t)__float2int_rn(v * inv);
        }
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        *x_absmax = absmax;
        *n_outliers = *count < max_outliers ? *count : max_outliers;
    }
}

// Per-token activation quantization for LLM.int8(): one block. Outlier columns (|x| >= threshold) are
// listed and zeroed in xq; the rest are scaled by 127/absmax and rounded half to even.
__global__ void quantize_activations(const __half *__restrict__ x, int n, float threshold, int8_t *__restrict__ xq,
                                     float *__restrict__ x_absmax, int *__restrict__ outliers,
                                     int *__restrict__ n_outliers, int max_outliers)
{
    grid_dependents_launch();
    grid_dependency_wait();
    __shared__ float red[32];
    __shared__ int count;
    if (threadIdx.x == 0) count = 0;
    float m = 0.f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        float v = fabsf(__half2float(x[i]));
        if (threshold > 0.f && v >= threshold) continue;
        m = fmaxf(m, v);
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = m;
    __syncthreads();
    if (threadIdx.x < 32) {
        float v = threadIdx.x < blockDim.x / 32 ? red[threadIdx.x] : 0.f;
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
        if (threadIdx.x == 0) red[0] = v;
    }
    __syncthreads();
    quantize_with_absmax(x, n, red[0], threshold, xq, &count, x_absmax, outliers, n_outliers, max_outliers);
}

// x[hidden] = fp32(embedding row of *token) (embeddings stay 16-bit).
__global__ void embed(const __half *__restrict__ table, const int *__restrict__ token, float *__restrict__ x, int hidden)
{
    grid_dependents_launch();
    grid_dependency_wait();
    const __half *row = table + (size_t)(*token) * hidden;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < hidden; i += gridDim.x * blockDim.x) x[i] = __half2float(row[i]);
}

// out = fp16(x * rsqrt(mean(x^2) + eps) * weight), one block. It sits between two matvecs on the critical
// path, so it is kept short: 16-byte loads, 8 warps, one barrier (every thread adds the 8 warp sums), the
// weights loaded before the dependency wait and x read once.
constexpr int kNormThreads = 256, kNormCached = 6; // hidden sizes up to 6144 are read once (8 spills)

// With Quantize (LLM.int8() inputs of qkv and gate_up), the same block also quantizes its fp16 output as
// quantize_activations does (same outliers, absmax and rounding): one kernel instead of two on the critical
// path, and no second pass over x from another block.
template <bool Quantize>
__global__ void __launch_bounds__(kNormThreads) rmsnorm(const float *__restrict__ x, const float *__restrict__ weight,
                                                        __half *__restrict__ out, int n, float eps, float threshold,
                                                        int8_t *__restrict__ xq, float *__restrict__ x_absmax,
                                                        int *__restrict__ outliers, int *__restrict__ n_outliers, int max_outliers,
                                                        float *__restrict__ zero, int zero_n)
{
    grid_dependents_launch();
    __shared__ float red[kNormThreads / kWarp], red_max[kNormThreads / kWarp];
    __shared__ int count;
    if (Quantize && threadIdx.x == 0) count = 0;
    const float4 *x4 = reinterpret_cast<const float4 *>(x), *w4 = reinterpret_cast<const float4 *>(weight);
    int n4 = n / 4;
    // The weights (model constants) are loaded before the wait, x once after it (coherently: the previous
    // kernel wrote it); up to kNormCached float4 of each stay in registers for the second pass.
    float4 g[kNormCached], v[kNormCached];
#pragma unroll
    for (int k = 0; k < kNormCached; k++) {
        int i = threadIdx.x + k * kNormThreads;
        if (i < n4) g[k] = __ldg(w4 + i);
    }
    grid_dependency_wait();
    // zero: memory a kernel before this one has finished with (the atomic qkv sums, read by attention)
    for (int i = threadIdx.x; i < zero_n; i += kNormThreads) zero[i] = 0.f;
    float s = 0.f;
#pragma unroll
    for (int k = 0; k < kNormCached; k++) {
        int i = threadIdx.x + k * kNormThreads;
        if (i < n4) {
            v[k] = __ldcg(x4 + i);
            s += v[k].x * v[k].x + v[k].y * v[k].y + v[k].z * v[k].z + v[k].w * v[k].w;
        }
    }
    for (int i = threadIdx.x + kNormCached * kNormThreads; i < n4; i += kNormThreads) {
        float4 t = __ldcg(x4 + i);
        s += t.x * t.x + t.y * t.y + t.z * t.z + t.w * t.w;
    }
    for (int i = 4 * n4 + threadIdx.x; i < n; i += kNormThreads) {
        float t = __ldcg(x + i);
        s += t * t;
    }
    s = warp_sum(s);
    if (threadIdx.x % kWarp == 0) red[threadIdx.x / kWarp] = s;
    __syncthreads();
    float total = 0.f;
#pragma unroll
    for (int w = 0; w < kNormThreads / kWarp; w++) total += red[w];
    float r = rsqrtf(total / n + eps);
    float m = 0.f; // Quantize: largest |out| below the outlier threshold
    auto inlier = [threshold](float a) { return !(threshold > 0.f && a >= threshold); };
    auto emit = [&](int i, float4 xv, float4 gv) {
        __half2 lo = __floats2half2_rn(xv.x * r * gv.x, xv.y * r * gv.y), hi = __floats2half2_rn(xv.z * r * gv.z, xv.w * r * gv.w);
        uint2 packed = make_uint2(*reinterpret_cast<unsigned *>(&lo), *reinterpret_cast<unsigned *>(&hi));
        reinterpret_cast<uint2 *>(out)[i] = packed;
        if constexpr (Quantize) {
            float2 a = __half22float2(lo), b = __half22float2(hi);
            float e[4] = {fabsf(a.x), fabsf(a.y), fabsf(b.x), fabsf(b.y)};
#pragma unroll
            for (int k = 0; k < 4; k++)
                if (inlier(e[k])) m = fmaxf(m, e[k]);
        }
    };
#pragma unroll
    for (int k = 0; k < kNormCached; k++) {
        int i = threadIdx.x + k * kNormThreads;
        if (i < n4) emit(i, v[k], g[k]);
    }
    for (int i = threadIdx.x + kNormCached * kNormThreads; i < n4; i += kNormThreads) emit(i, __ldcg(x4 + i), __ldg(w4 + i));
    for (int i = 4 * n4 + threadIdx.x; i < n; i += kNormThreads) {
        __half h = __float2half(__ldcg(x + i) * r * weight[i]);
        out[i] = h;
        float a = fabsf(__half2float(h));
        if (Quantize && inlier(a)) m = fmaxf(m, a);
    }
    if constexpr (Quantize) {
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
        if (threadIdx.x % kWarp == 0) red_max[threadIdx.x / kWarp] = m;
        __syncthreads();
        float absmax = 0.f;
#pragma unroll
        for (int w = 0; w < kNormThreads / kWarp; w++) absmax = fmaxf(absmax, red_max[w]);
        // The barrier above made every thread's fp16 output visible to the block.
        quantize_with_absmax(out, n, absmax, threshold, xq, &count, x_absmax, outliers, n_outliers, max_outliers);
    }
}

// qkv[q | k | v] (fp32) += bias; rotate-half RoPE on q and k at position *pos; k, v -> fp16 cache rows.
// (The unfused path, in place: src == dst; the fused one does this in the qkv matvec's epilogue, or in attention
// after an atomic qkv.) Consume (ECO_CUDA_QKV_ATOMIC=apart): src holds the matvec's atomic sums, the results go
// to dst, and src is zeroed for the next layer's sums, each element by the thread that read it. src and dst may
// be one buffer: not __restrict__.
template <bool Consume>
__global__ void rope_kv(float *src, float *dst, const float *__restrict__ bias, const float2 *__restrict__ rope,
                        const int *__restrict__ pos_ptr, __half *__restrict__ k_cache, __half *__restrict__ v_cache,
                        int heads, int kv_heads, int head_dim)
{
    grid_dependents_launch();
    grid_dependency_wait();
    int pos = *pos_ptr;
    int half_dim = head_dim / 2;
    int q_dim = heads * head_dim, kv_dim = kv_heads * head_dim;
    int total_pairs = (heads + kv_heads) * half_dim;
    for (int p = blockIdx.x * blockDim.x + threadIdx.x; p < total_pairs; p += gridDim.x * blockDim.x) {
        int h = p / half_dim, i = p % half_dim;
        int off = h < heads ? h * head_dim : q_dim + (h - heads) * head_dim;
        float a = __ldcg(src + off + i), b = __ldcg(src + off + i + half_dim);
        if (Consume) src[off + i] = src[off + i + half_dim] = 0.f;
        if (bias) { a += bias[off + i]; b += bias[off + i + half_dim]; }
        float2 r = rope_rotate(a, b, rope[(size_t)pos * half_dim + i]);
        dst[off + i] = r.x;
        dst[off + i + half_dim] = r.y;
        if (h >= heads) {
            size_t row = (size_t)pos * kv_dim + (off - q_dim);
            k_cache[row + i] = __float2half(r.x);
            k_cache[row + i + half_dim] = __float2half(r.y);
        }
    }
    for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < kv_dim; j += gridDim.x * blockDim.x) {
        float v = __ldcg(src + q_dim + kv_dim + j) + (bias ? bias[q_dim + kv_dim + j] : 0.f);
        if (Consume) src[q_dim + kv_dim + j] = 0.f;
        v_cache[(size_t)pos * kv_dim + j] = __float2half(v);
    }
}

// Split ("flash-decoding") attention. At batch 1 a head's few hundred positions are latency-bound, so each
// head's positions [start, pos] are cut into `splits` blocks of kAttnWarps warps (a grid of about two
// blocks per SM), and every warp walks its own positions four at a time with an online softmax: K and V
// rows of the four are loaded together, so a group costs one round trip to memory. A block merges its warps in
// shared memory; with splits > 1 it writes (max, sum, unnormalized V sum) to `partial`, and the last block
// of the head to finish (a counter per head, reset by that block for the next replay) merges the splits.
// Only the row at `pos` is written by the previous kernel (the qkv matvec's epilogue); every earlier row, and
// the position counter, were final before this token's graph began (its first kernel is launched without
// dependent launch). So a warp's first two groups are loaded before the dependency wait, their round trips
// hidden under the qkv matvec's tail, and only the row at pos is read after it. Reads after the wait are
// coherent (ld.global.cg): the read-only path may be scheduled above the wait.
// Output fp16 (it feeds o_proj). head_dim <= kAttnMaxHeadDim; lane l owns dims l, l + 32, ... (ND of them).
constexpr int kAttnThreads = 256, kAttnWarps = kAttnThreads / kWarp, kAttnMaxHeadDim = 256, kAttnGroup = 4;

// exp(m - top), 0 for an empty part (m = -inf), also when every part is empty.
__device__ __forceinline__ float part_weight(float m, float top) { return m == -INFINITY ? 0.f : __expf(m - top); }

// K and V rows of kAttnGroup positions from t0 (zeros past w1), this lane's ND dims of each.
template <int ND> struct AttnRows {
    __half k[kAttnGroup][ND], v[kAttnGroup][ND];
};

// Before the dependency wait (Coherent false) the row at `skip` is left out: the previous kernel writes it.
template <int ND, bool Coherent>
__device__ __forceinline__ void attn_load(AttnRows<ND> &g, const __half *kbase, const __half *vbase, int kv_dim, int t0,
                                          int w1, int skip, int lane, int head_dim)
{
#pragma unroll
    for (int j = 0; j < kAttnGroup; j++) {
        int t = t0 + j;
        bool in = t < w1 && t != skip;
        const __half *k = kbase + (size_t)t * kv_dim, *v = vbase + (size_t)t * kv_dim;
#pragma unroll
        for (int i = 0; i < ND; i++) {
            int d = lane + kWarp * i;
            bool use = in && d < head_dim;
            g.k[j][i] = use ? (Coherent ? __ldcg(k + d) : k[d]) : __float2half(0.f);
            g.v[j][i] = use ? (Coherent ? __ldcg(v + d) : v[d]) : __float2half(0.f);
        }
    }
}

// After the wait: the row at pos, if it falls in the group at t0.
template <int ND>
__device__ __forceinline__ void attn_load_current(AttnRows<ND> &g, const __half *kbase, const __half *vbase, int kv_dim,
                                                  int t0, int w1, int pos, int lane, int head_dim)
{
#pragma unroll
    for (int j = 0; j < kAttnGroup; j++) {
        if (t0 + j != pos || pos >= w1) continue;
        const __half *k = kbase + (size_t)pos * kv_dim, *v = vbase + (size_t)pos * kv_dim;
#pragma unroll
        for (int i = 0; i < ND; i++) {
            int d = lane + kWarp * i;
            if (d < head_dim) { g.k[j][i] = __ldcg(k + d); g.v[j][i] = __ldcg(v + d); }
        }
    }
}

// Consume: the row at pos from shared memory instead (the cache's row may not be written yet).
template <int ND>
__device__ __forceinline__ void attn_take_current(AttnRows<ND> &g, const __half *k_now, const __half *v_now, int t0, int w1,
                                                  int pos, int lane, int head_dim)
{
#pragma unroll
    for (int j = 0; j < kAttnGroup; j++) {
        if (t0 + j != pos || pos >= w1) continue;
#pragma unroll
        for (int i = 0; i < ND; i++) {
            int d = lane + kWarp * i;
            if (d < head_dim) { g.k[j][i] = k_now[d]; g.v[j][i] = v_now[d]; }
        }
    }
}

// Consume (the atomic qkv, cuda_backend.cu): the qkv matvec left raw sums (no bias, no RoPE) in `qkv`, and this kernel does
// what rope_kv would have, without a kernel of its own: each block rotates its head's q and its KV head's k at
// pos (and adds v's bias) into shared memory after the wait, uses that row in place of the cache's, and one
// block per KV head (split 0 of its first q head) writes it to the cache. So no load of this kernel may read
// the row at pos from the cache. The sums are zeroed later (the next rmsnorm), once every block has read them.
struct AttnConsume {
    const float *bias;     // [q | k | v] bias or NULL
    const float2 *rope;    // cos/sin per position and pair
    __half *k_store, *v_store; // the cache again, for the row at pos (never read through these)
};

template <int ND, bool Consume>
__global__ void __launch_bounds__(kAttnThreads) attention(const float *__restrict__ qkv, const __half *__restrict__ k_cache,
                          const __half *__restrict__ v_cache, const int *__restrict__ pos_ptr, __half *__restrict__ out,
                          int heads, int kv_heads, int head_dim, int window, int min_per_block,
                          float *__restrict__ partial, int *__restrict__ done, const AttnConsume cons)
{
    grid_dependents_launch();
    __shared__ float warp_m[kAttnWarps], warp_l[kAttnWarps], warp_acc[kAttnWarps][kAttnMaxHeadDim];
    __shared__ float q_rot[Consume ? kAttnMaxHeadDim : 1];
    __shared__ __half k_now[Consume ? kAttnMaxHeadDim : 1], v_now[Consume ? kAttnMaxHeadDim : 1];
    __shared__ bool last;
    int h = blockIdx.x, split = blockIdx.y, pos = *pos_ptr; // pos: final before this token began
    int kvh = h / (heads / kv_heads), kv_dim = kv_heads * head_dim;
    int start = window > 0 && pos + 1 > window ? pos + 1 - window : 0, len = pos + 1 - start;
    // A short context uses fewer splits (the graph's grid is fixed; the spare blocks leave at once): below
    // min_per_block positions a block would mostly wait for the merge.
    int splits = min((int)gridDim.y, max(1, (len + min_per_block - 1) / min_per_block));
    if (split >= splits) return;
    int per_block = (len + splits - 1) / splits;
    int b0 = start + split * per_block, b1 = min(b0 + per_block, pos + 1);
    int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
    int per_warp = b1 > b0 ? (b1 - b0 + kAttnWarps - 1) / kAttnWarps : 0;
    int w0 = b0 + warp * per_warp, w1 = min(w0 + per_warp, b1);
    const __half *kbase = k_cache + kvh * head_dim, *vbase = v_cache + kvh * head_dim;
    AttnRows<ND> cur, next;
    attn_load<ND, false>(cur, kbase, vbase, kv_dim, w0, w1, pos, lane, head_dim);
    attn_load<ND, false>(next, kbase, vbase, kv_dim, w0 + kAttnGroup, w1, pos, lane, head_dim);
    grid_dependency_wait();
    if constexpr (Consume) {
        // as rope_kv: q stays fp32, k and v are rounded to fp16 as the cache holds them
        int half_dim = head_dim / 2, q_dim = heads * head_dim;
        const float *qs = qkv + h * head_dim, *ks = qkv + q_dim + kvh * head_dim, *vs = ks + kv_dim;
        const float *qb = NULL, *kb = NULL, *vb = NULL;
        if (cons.bias) qb = cons.bias + (qs - qkv), kb = cons.bias + (ks - qkv), vb = cons.bias + (vs - qkv);
        auto sum = [](const float *raw, const float *bias, int i) { return __ldcg(raw + i) + (bias ? bias[i] : 0.f); };
        for (int i = threadIdx.x; i < half_dim; i += blockDim.x) {
            float2 cs = cons.rope[(size_t)pos * half_dim + i];
            float2 q = rope_rotate(sum(qs, qb, i), sum(qs, qb, i + half_dim), cs), k = rope_rotate(sum(ks, kb, i), sum(ks, kb, i + half_dim), cs);
            q_rot[i] = q.x;
            q_rot[i + half_dim] = q.y;
            k_now[i] = __float2half(k.x);
            k_now[i + half_dim] = __float2half(k.y);
        }
        for (int d = threadIdx.x; d < head_dim; d += blockDim.x) v_now[d] = __float2half(sum(vs, vb, d));
        __syncthreads();
        if (split == 0 && h % (heads / kv_heads) == 0)
            for (int d = threadIdx.x; d < head_dim; d += blockDim.x) {
                size_t at = (size_t)pos * kv_dim + kvh * head_dim + d;
                cons.k_store[at] = k_now[d];
                cons.v_store[at] = v_now[d];
            }
        attn_take_current<ND>(cur, k_now, v_now, w0, w1, pos, lane, head_dim);
        attn_take_current<ND>(next, k_now, v_now, w0 + kAttnGroup, w1, pos, lane, head_dim);
    } else {
        attn_load_current<ND>(cur, kbase, vbase, kv_dim, w0, w1, pos, lane, head_dim);
        attn_load_current<ND>(next, kbase, vbase, kv_dim, w0 + kAttnGroup, w1, pos, lane, head_dim);
    }
    const float *q = qkv + h * head_dim;
    float scale = rsqrtf((float)head_dim);
    float qr[ND], acc[ND];
#pragma unroll
    for (int i = 0; i < ND; i++) {
        int d = lane + kWarp * i;
        qr[i] = d < head_dim ? (Consume ? q_rot[d] : __ldcg(q + d)) : 0.f;
        acc[i] = 0.f;
    }
    float m = -INFINITY, l = 0.f;
    for (int t0 = w0; t0 < w1; t0 += kAttnGroup) {
        AttnRows<ND> g = cur;
        cur = next;
        if (t0 + 2 * kAttnGroup < w1) {
            attn_load<ND, true>(next, kbase, vbase, kv_dim, t0 + 2 * kAttnGroup, w1, Consume ? pos : -1, lane, head_dim);
            if constexpr (Consume) attn_take_current<ND>(next, k_now, v_now, t0 + 2 * kAttnGroup, w1, pos, lane, head_dim);
        }
        float sc[kAttnGroup];
#pragma unroll
        for (int j = 0; j < kAttnGroup; j++) {
            sc[j] = 0.f;
#pragma unroll
            for (int i = 0; i < ND; i++) sc[j] = fmaf(qr[i], __half2float(g.k[j][i]), sc[j]);
        }
        float top = m;
#pragma unroll
        for (int j = 0; j < kAttnGroup; j++) {
            sc[j] = warp_sum(sc[j]) * scale;
            if (t0 + j < w1) top = fmaxf(top, sc[j]);
        }
        float keep = part_weight(m, top);
        l *= keep;
#pragma unroll
        for (int i = 0; i < ND; i++) acc[i] *= keep;
#pragma unroll
        for (int j = 0; j < kAttnGroup; j++) {
            float e = t0 + j < w1 ? __expf(sc[j] - top) : 0.f;
            l += e;
#pragma unroll
            for (int i = 0; i < ND; i++) acc[i] = fmaf(e, __half2float(g.v[j][i]), acc[i]);
        }
        m = top;
    }
    if (lane == 0) { warp_m[warp] = m; warp_l[warp] = l; }
#pragma unroll
    for (int i = 0; i < ND; i++) {
        int d = lane + kWarp * i;
        if (d < head_dim) warp_acc[warp][d] = acc[i];
    }
    __syncthreads();
    float bm = -INFINITY, bl = 0.f;
#pragma unroll
    for (int w = 0; w < kAttnWarps; w++) bm = fmaxf(bm, warp_m[w]);
#pragma unroll
    for (int w = 0; w < kAttnWarps; w++) bl += warp_l[w] * part_weight(warp_m[w], bm);
    size_t stride = (size_t)head_dim + 2; // one split's record: acc[head_dim], max, sum
    for (int d = threadIdx.x; d < head_dim; d += blockDim.x) {
        float a = 0.f;
#pragma unroll
        for (int w = 0; w < kAttnWarps; w++) a += warp_acc[w][d] * part_weight(warp_m[w], bm);
        if (splits == 1) out[h * head_dim + d] = __float2half(a / bl);
        else partial[((size_t)h * splits + split) * stride + d] = a;
    }
    if (splits == 1) return;
    if (threadIdx.x == 0) {
        float *rec = partial + ((size_t)h * splits + split) * stride;
        rec[head_dim] = bm;
        rec[head_dim + 1] = bl;
    }
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) last = atomicAdd(done + h, 1) == splits - 1;
    __syncthreads();
    if (!last) return;
    if (threadIdx.x == 0) done[h] = 0;
    const float *rec = partial + (size_t)h * splits * stride;
    float top = -INFINITY, sum = 0.f;
    for (int s = 0; s < splits; s++) top = fmaxf(top, __ldcg(rec + s * stride + head_dim));
    for (int s = 0; s < splits; s++) sum += __ldcg(rec + s * stride + head_dim + 1) * part_weight(__ldcg(rec + s * stride + head_dim), top);
    for (int d = threadIdx.x; d < head_dim; d += blockDim.x) {
        float a = 0.f;
        for (int s = 0; s < splits; s++) a += __ldcg(rec + s * stride + d) * part_weight(__ldcg(rec + s * stride + head_dim), top);
        out[h * head_dim + d] = __float2half(a / sum);
    }
}

// gate_up = [gate | up] (fp32) -> fp16(silu(gate) * up)
__global__ void swiglu(const float *__restrict__ gate_up, __half *__restrict__ out, int inter)
{
    grid_dependents_launch();
    grid_dependency_wait();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < inter; i += gridDim.x * blockDim.x) {
        float g = gate_up[i], u = gate_up[inter + i];
        out[i] = __float2half(silu_times(g, u));
    }
}

// Greedy sampling on the device: index of the largest logit, ties to the lowest index (torch.argmax).
// Two kernels, because one block scanning a 150k vocabulary is latency-bound (~35 us on the H200, ~1%
// of a 7B token): many blocks reduce slices, one block reduces their winners.
__device__ __forceinline__ void better(float &v, int &i, float ov, int oi)
{
    if (ov > v || (ov == v && oi < i)) { v = ov; i = oi; }
}

// Block-wide (value, index) winner of this thread's candidates; valid in thread 0.
__device__ __forceinline__ void block_best(float &v, int &idx)
{
    __shared__ float best_v[32];
    __shared__ int best_i[32];
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) better(v, idx, __shfl_xor_sync(0xffffffffu, v, o), __shfl_xor_sync(0xffffffffu, idx, o));
    if (threadIdx.x % 32 == 0) { best_v[threadIdx.x / 32] = v; best_i[threadIdx.x / 32] = idx; }
    __syncthreads();
    if (threadIdx.x == 0)
        for (int w = 1; w < (int)blockDim.x / 32; w++) better(v, idx, best_v[w], best_i[w]);
}

__global__ void argmax_partial(const float *__restrict__ logits, int n, float *__restrict__ part_v, int *__restrict__ part_i)
{
    grid_dependents_launch();
    grid_dependency_wait();
    float v = -INFINITY;
    int idx = 0x7fffffff;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) better(v, idx, logits[i], i);
    block_best(v, idx);
    if (threadIdx.x == 0) { part_v[blockIdx.x] = v; part_i[blockIdx.x] = idx; }
}

// The winner goes to *next, and it becomes the next step's input: *token = winner, history[*pos] = winner,
// *pos + 1, so a later replay of the token graph decodes the following position without the host
// (eco_cuda greedy_run). A host step overwrites token and pos before its replay.
__global__ void argmax_final(const float *__restrict__ part_v, const int *__restrict__ part_i, int parts,
                             int *__restrict__ next, int *__restrict__ token, int *__restrict__ pos, int *__restrict__ history)
{
    grid_dependents_launch();
    grid_dependency_wait();
    float v = -INFINITY;
    int idx = 0x7fffffff;
    for (int i = threadIdx.x; i < parts; i += blockDim.x) better(v, idx, part_v[i], part_i[i]);
    block_best(v, idx);
    if (threadIdx.x == 0) {
        if (idx == 0x7fffffff) idx = 0; // every logit NaN: index 0, as a strict '>' scan from 0 gives
        int p = *pos;
        *next = idx;
        *token = idx;
        history[p] = idx;
        *pos = p + 1;
    }
}

// A cheap integer hash of (index, seed) for the benchmark fills below.
__device__ __forceinline__ uint32_t fill_hash(size_t i, uint32_t seed)
{
    uint32_t h = (uint32_t)i * 0x9E3779B1u ^ seed;
    h ^= h >> 15;
    h *= 0x2C1B3C6Du;
    return h ^ (h >> 12);
}

// Deterministic pseudo-random bytes (bench_matvec weights); never zeros, which can run faster than data.
__global__ void fill_random(uint8_t *__restrict__ p, size_t n, uint32_t seed)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        p[i] = (uint8_t)(fill_hash(i, seed) | 1u);
}

// Deterministic fp16 activations in [-2, 2): finite, like a normed hidden state (random bits would include
// NaN and infinities, and a decoder with a data-dependent path would then be timed on the wrong path).
__global__ void fill_half(__half *__restrict__ p, size_t n, uint32_t seed)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        p[i] = __float2half((float)(fill_hash(i, seed) & 0xFFFFu) / 16384.f - 2.f);
}

__global__ void fill_float(float *__restrict__ p, size_t n, float v)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) p[i] = v;
}

// Streaming read of n 16-byte words (measured bandwidth for the roofline); the sum defeats dead-code removal.
__global__ void stream_read(const uint4 *__restrict__ p, size_t n, unsigned *__restrict__ sink)
{
    unsigned acc = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        uint4 v = __ldcs(p + i);
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (acc == 0x9e3779b9u) *sink = acc;
}

} // namespace eco_cuda
