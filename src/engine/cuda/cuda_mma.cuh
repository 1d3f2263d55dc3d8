// The tensor-core matvec: the same linear as the warp-per-row skeleton (cuda_kernels.cuh), with the weights
// as the A operand of mma.sync. At batch 1 a matvec does one multiply-add per weight, and the scalar
// decoders spend most of an SM's issue slots on decode + FMA (bench_matvec, ncu: nf4 at 35% of the HBM
// bandwidth, issue- and latency-bound; int8 at ~65%, near issue-bound). Here a decoder only has to make fp16
// pairs (int8 and e4m3 exactly; nf4 codes rounded to fp16, as bitsandbytes' fp16 dequantization does), and
// one m16n8k16 does 256 multiply-adds per warp with fp32 accumulation; LLM.int8() needs no decode at all
// (m16n8k32, int8 x int8 -> int32, exact as dp4a).
//
// Layout. A warp streams a tile of 16 rows: 8 epilogue units of 2 rows (item_rows<2>: the (gate, up) pair,
// the two RoPE halves, or two consecutive rows), unit g's rows in A rows g and g + 8, so the lane that
// receives row g's sum also receives its partner's. Lane (g = lane / 4, q = lane % 4) loads 16 contiguous
// bytes of rows g and g + 8 per step, at column span q of the step (4 spans per step, 64 bytes a row: whole
// 32-byte sectors). An mma sums over k in a fixed order of its own; any assignment of columns to k works as
// long as A and B use the same one, so the k of lane q are simply its own span: weights and x are read as
// they would lie in a row-major matrix. The weights are stored in that order ("tiled", repacked once at
// load by tile_weights): the 16 bytes every lane loads for a tile and a step are one 512-byte run per half
// tile, and a warp's steps follow each other, so each load instruction reads contiguous memory (row-major,
// a load touched 8 rows x 64 bytes; Qwen2.5-7B fp16 and int8 both stalled at ~60% of HBM bandwidth that way).
//
// nf4: the block absmax changes between spans (blocksize 32 or 64), so B carries x in column q from lane q
// only (zeros elsewhere): output column n is span n's partial sum, and the lanes that receive it scale it by
// that span's absmax. The fp16 pair for a byte comes from a shared table of 256 rows of 256 bytes, lane l's
// copy at byte 4l of each row: the address (byte << 8) | 4l is one byte permute, and lane l always hits bank l.
#pragma once

#include "cuda_kernels.cuh"

namespace eco_cuda {

constexpr int kMmaWarps = 8;         // a block: 8 warps over 8 / k_warps tiles, k_warps warps splitting a tile's columns
constexpr int kTileStepBytes = 2 * kWarp * 16; // one step of an 8-unit tile: two half tiles of 32 lanes x 16 bytes

// Byte offset, in the tiled layout, of byte `c` (0..63) of step s of half h (row g or g + 8) of unit u's tile.
__host__ __device__ __forceinline__ size_t tiled_offset(size_t tile, int steps, int s, int h, int g, int c)
{
    return ((tile * (size_t)steps + (size_t)s) * 2 + (size_t)h) * (kWarp * 16) + (size_t)(g * 4 + c / 16) * 16 + (size_t)(c % 16);
}

// Row-major weights (row_bytes per row, steps x 64 bytes) into the tiled layout: one thread per 16 bytes. The
// row of each half tile comes from the epilogue's unit mapping (item_rows<2>), so p carries that epilogue.
__global__ void tile_weights(const uint8_t *__restrict__ src, uint8_t *__restrict__ dst, const MatvecParams p, size_t row_bytes, int steps, int tiles)
{
    int units = item_units(p, 2);
    size_t n = (size_t)tiles * steps * 2 * kWarp;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        int lane = (int)(i % kWarp), h = (int)(i / kWarp % 2);
        size_t ts = i / (2 * kWarp);
        int s = (int)(ts % steps);
        size_t tile = ts / steps;
        int rows2[2];
        item_rows<2>(p, min((int)(tile * 8) + lane / 4, units - 1), rows2);
        *reinterpret_cast<uint4 *>(dst + i * 16) =
            *reinterpret_cast<const uint4 *>(src + (size_t)rows2[h] * row_bytes + (size_t)s * 64 + (lane % 4) * 16);
    }
}

template <int K> struct Mma {
    static constexpr int span = Elems<K>::n;          // columns per lane per 16-byte load
    static constexpr int step = 4 * span;             // columns per step (4 lanes per row)
    static constexpr int tiles = K == W_I8X ? 2 : span / 4; // mma per row tile per step (k16; LLM.int8: k32)
    static constexpr int x_loads = K == W_I8X ? 1 : span / 8; // 16-byte x loads per lane per step
};

__host__ __device__ constexpr int mma_step_cols(int k) { return 4 * (k == W_F16 ? 8 : k == W_NF4 ? 32 : 16); }

__device__ __forceinline__ void mma_f16(float (&d)[4], unsigned a0, unsigned a1, unsigned a2, unsigned a3, unsigned b0, unsigned b1)
{
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

__device__ __forceinline__ void mma_s8(int (&d)[4], unsigned a0, unsigned a1, unsigned a2, unsigned a3, unsigned b0, unsigned b1)
{
    asm("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
        : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

// The fp16 pair of weights i (span columns 2i, 2i + 1; the first in the low half) of one lane's 16-byte load.
template <int K> __device__ __forceinline__ unsigned weight_pair(const uint4 &w, int i, const char *table, unsigned lane4)
{
    const unsigned *u = reinterpret_cast<const unsigned *>(&w);
    if constexpr (K == W_F16) {
        return u[i];
    } else if constexpr (K == W_I8) {
        // 0x64 above an offset byte is the fp16 1024 + (b + 128); subtracting 1152 leaves b, exactly.
        unsigned h = __byte_perm(u[i / 2] ^ 0x80808080u, 0x64646464u, i % 2 ? 0x4342u : 0x4140u);
        __half2 v = __hsub2(*reinterpret_cast<__half2 *>(&h), __half2(__ushort_as_half(0x6480), __ushort_as_half(0x6480)));
        return *reinterpret_cast<unsigned *>(&v);
    } else if constexpr (K == W_FP8_HW) {
        __half2_raw raw = __nv_cvt_fp8x2_to_halfraw2((__nv_fp8x2_storage_t)(u[i / 2] >> (i % 2 ? 16 : 0)), __NV_E4M3);
        return *reinterpret_cast<unsigned *>(&raw);
    } else { // W_NF4: byte i
        return nf4_pair(u[i / 4], i % 4, reinterpret_cast<const unsigned char *>(table), lane4);
    }
}

template <int K, bool DQ, int RT> struct MmaBatch {
    uint4 w[RT][2];               // rows g and g + 8 of each row tile
    uint4 x[Mma<K>::x_loads];     // this lane's x span (LLM.int8: its int8 span)
    float am[RT][2][2];           // nf4: absmax (nf4-dq: group scale) of rows (g, g + 8) x spans (2q, 2q + 1)
    unsigned code[RT][2][2];      // nf4-dq: absmax codes
};

// One warp's share of a block's item: row tiles and the step range of its column slice.
template <int K, int RT> struct MmaWork {
    int unit0, s0, s1;
    const uint8_t *base[RT][2];   // this lane's 16 bytes of step 0 of each half tile; a step is kTileStepBytes on
    size_t rowoff[RT][2];         // row * cols (nf4 block index)
};

template <int K, bool DQ, int RT>
__device__ __forceinline__ void mma_load_weights(const MatvecParams &p, const MmaWork<K, RT> &t, int s, int q, MmaBatch<K, DQ, RT> &b)
{
    if (s >= t.s1) return;
#pragma unroll
    for (int r = 0; r < RT; r++)
#pragma unroll
        for (int h = 0; h < 2; h++) b.w[r][h] = load_stream(t.base[r][h] + (size_t)s * kTileStepBytes);
    if constexpr (K == W_NF4) {
        // Lanes q < 2 scale output columns 2q and 2q + 1: spans 2q, 2q + 1 of the step.
        size_t col = (size_t)s * Mma<K>::step + 2 * q * Mma<K>::span;
#pragma unroll
        for (int r = 0; r < RT; r++)
#pragma unroll
            for (int h = 0; h < 2; h++)
#pragma unroll
                for (int k = 0; k < 2; k++) {
                    size_t block = (t.rowoff[r][h] + col + k * Mma<K>::span) >> p.block_shift;
                    if (q >= 2) {
                        b.am[r][h][k] = 0.f;
                        b.code[r][h][k] = 0;
                    } else if constexpr (DQ) {
                        b.code[r][h][k] = __ldg(p.absmax_q + block);
                        b.am[r][h][k] = __ldg(p.absmax_q_scale + (block >> 8));
                    } else {
                        b.am[r][h][k] = __ldg(p.absmax + block);
                    }
                }
    }
}

// x is the previous kernel's output: read with ld.global.cg, not __ldg. The compiler may treat an __ldg
// (ld.global.nc) as a load of invariant memory and hoist it above griddepcontrol.wait; it did for the
// int8/fp8 kernels with one row tile (whole models went wrong with PDL and right without it).
template <int K, bool DQ, int RT>
__device__ __forceinline__ void mma_load_x(const MatvecParams &p, const MmaWork<K, RT> &t, int s, int g, int q, MmaBatch<K, DQ, RT> &b)
{
    if (s >= t.s1) return;
    if constexpr (K == W_I8X) {
        b.x[0] = __ldcg(reinterpret_cast<const uint4 *>(p.xq + (size_t)s * Mma<K>::step + q * Mma<K>::span));
    } else {
        const uint4 *x = reinterpret_cast<const uint4 *>(p.x + (size_t)s * Mma<K>::step + q * Mma<K>::span);
        bool mine = K != W_NF4 || g == q; // nf4: B column g holds lane g's span only
#pragma unroll
        for (int i = 0; i < Mma<K>::x_loads; i++) b.x[i] = mine ? __ldcg(x + i) : make_uint4(0, 0, 0, 0);
    }
}

// Block items: groups of kMmaWarps / k_warps row tiles (of 8 RT units) x p.splits column slices; warp w takes
// tile w / k_warps of the group and column slice split * k_warps + w % k_warps.
template <int K, bool DQ, int RT>
__global__ void __launch_bounds__(kMmaWarps * kWarp) matvec_mma(const MatvecParams p, int k_warps)
{
    extern __shared__ __align__(16) unsigned char mma_smem[]; // nf4: pair table, then (nf4-dq) the dynamic map
    __shared__ float red[kMmaWarps][RT * 16];
    grid_dependents_launch();
    constexpr int S = Mma<K>::step;
    int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp, g = lane / 4, q = lane % 4;
    int units = item_units(p, 2), tiles_per_block = kMmaWarps / k_warps;
    int group = blockIdx.x / p.splits, split = blockIdx.x % p.splits;
    int tile = group * tiles_per_block + warp / k_warps, slices = p.splits * k_warps, slice = split * k_warps + warp % k_warps;
    int steps = p.cols / S, per = (steps + slices - 1) / slices;

    MmaWork<K, RT> t;
    t.unit0 = tile * 8 * RT;
    t.s0 = min(steps, slice * per);
    t.s1 = min(steps, t.s0 + per);
    if (t.unit0 >= units) t.s1 = t.s0; // a group's last tiles may lie past the end
#pragma unroll
    for (int r = 0; r < RT; r++) {
        int rows2[2];
        item_rows<2>(p, min(t.unit0 + 8 * r + g, units - 1), rows2);
#pragma unroll
        for (int h = 0; h < 2; h++) {
            t.base[r][h] = p.w + tiled_offset((size_t)(tile * RT + r), steps, 0, h, g, q * 16);
            t.rowoff[r][h] = (size_t)rows2[h] * (size_t)p.cols;
        }
    }
    MmaBatch<K, DQ, RT> cur;
    mma_load_weights<K, DQ, RT>(p, t, t.s0, q, cur); // weights never depend on the previous kernel

    const char *table = reinterpret_cast<const char *>(mma_smem);
    const float *dmap = reinterpret_cast<const float *>(mma_smem + kNf4TableBytes);
    if constexpr (K == W_NF4) {
        fill_nf4_pair_table(mma_smem, DQ);
        __syncthreads();
    }
    grid_dependency_wait();
    mma_load_x<K, DQ, RT>(p, t, t.s0, g, q, cur);

    unsigned lane4 = (unsigned)lane * 4u;
    float acc[RT][2];
    int iacc[RT][2];
#pragma unroll
    for (int r = 0; r < RT; r++) acc[r][0] = acc[r][1] = 0.f, iacc[r][0] = iacc[r][1] = 0;
    for (int s = t.s0; s < t.s1; s++) {
        MmaBatch<K, DQ, RT> next;
        mma_load_weights<K, DQ, RT>(p, t, s + 1, q, next);
        mma_load_x<K, DQ, RT>(p, t, s + 1, g, q, next);
        const unsigned *xw = reinterpret_cast<const unsigned *>(cur.x);
        if constexpr (K == W_I8X) {
#pragma unroll
            for (int r = 0; r < RT; r++) {
                int d[4] = {0, 0, 0, 0};
                const unsigned *w0 = reinterpret_cast<const unsigned *>(&cur.w[r][0]), *w1 = reinterpret_cast<const unsigned *>(&cur.w[r][1]);
#pragma unroll
                for (int j = 0; j < Mma<K>::tiles; j++) mma_s8(d, w0[2 * j], w1[2 * j], w0[2 * j + 1], w1[2 * j + 1], xw[2 * j], xw[2 * j + 1]);
                iacc[r][0] += d[0];
                iacc[r][1] += d[2];
            }
        } else {
#pragma unroll
            for (int r = 0; r < RT; r++) {
                float d[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
                for (int j = 0; j < Mma<K>::tiles; j++)
                    mma_f16(d, weight_pair<K>(cur.w[r][0], 2 * j, table, lane4), weight_pair<K>(cur.w[r][1], 2 * j, table, lane4),
                            weight_pair<K>(cur.w[r][0], 2 * j + 1, table, lane4), weight_pair<K>(cur.w[r][1], 2 * j + 1, table, lane4),
                            xw[2 * j], xw[2 * j + 1]);
                if constexpr (K == W_NF4) {
                    float am[2][2];
#pragma unroll
                    for (int h = 0; h < 2; h++)
#pragma unroll
                        for (int k = 0; k < 2; k++)
                            am[h][k] = nf4_block_scale<DQ>(dmap, cur.code[r][h][k], cur.am[r][h][k], p.absmax_offset);
                    acc[r][0] += d[0] * am[0][0] + d[1] * am[0][1];
                    acc[r][1] += d[2] * am[1][0] + d[3] * am[1][1];
                } else { // x in every output column: c0 and c2 are rows g and g + 8
                    acc[r][0] += d[0];
                    acc[r][1] += d[2];
                }
            }
        }
        cur = next;
    }
    // nf4: lanes q = 0, 1 hold spans (0, 1) and (2, 3); otherwise lane q = 0 holds the sums.
#pragma unroll
    for (int r = 0; r < RT; r++)
#pragma unroll
        for (int h = 0; h < 2; h++) {
            if constexpr (K == W_NF4) acc[r][h] += __shfl_xor_sync(0xffffffffu, acc[r][h], 1);
            if (q == 0) red[warp][r * 16 + h * 8 + g] = K == W_I8X ? __int_as_float(iacc[r][h]) : acc[r][h];
        }
    __syncthreads();

    // One thread per unit of the block's tiles adds the k_warps slices and runs the epilogue.
    int units_per_tile = 8 * RT;
    if ((int)threadIdx.x >= tiles_per_block * units_per_tile) return;
    int tt = threadIdx.x / units_per_tile, ut = threadIdx.x % units_per_tile;
    int unit = (group * tiles_per_block + tt) * units_per_tile + ut;
    if (unit >= units) return;
    int r = ut / 8, gg = ut % 8, rows2[2];
    item_rows<2>(p, unit, rows2);
    float v[2];
#pragma unroll
    for (int h = 0; h < 2; h++) {
        float f = 0.f;
        int n = 0;
        for (int w = tt * k_warps; w < (tt + 1) * k_warps; w++) {
            if constexpr (K == W_I8X) n += __float_as_int(red[w][r * 16 + h * 8 + gg]);
            else f += red[w][r * 16 + h * 8 + gg];
        }
        if constexpr (K == W_I8X) {
            float s = p.row_scale[rows2[h]], out = 0.f;
            if (split == 0) { // outlier columns (zeroed in xq), in fp16 dequantized weights as the reference stack does
                int m = *p.n_outliers;
                for (int i = 0; i < m; i++) {
                    int j = p.outliers[i];
                    int8_t wj = (int8_t)p.w[tiled_offset((size_t)(unit / 8), steps, j / 64, h, unit % 8, j % 64)];
                    out = fmaf(__half2float(__float2half((float)wj * s)), __half2float(p.x[j]), out);
                }
            }
            f = (float)n * (*p.x_absmax / 127.f) * s + out;
        } else if constexpr (K == W_I8 || K == W_FP8_HW) {
            f *= p.row_scale[rows2[h]];
        }
        v[h] = f;
    }
    finish_rows<2>(p, unit, rows2, v);
}

} // namespace eco_cuda
