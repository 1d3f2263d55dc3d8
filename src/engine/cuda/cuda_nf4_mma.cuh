// nf4 on the tensor cores, streamed: the tensor-core matvec's tile layout (cuda_mma.cuh) walked by the row-per-
// lane decoder's grid (cuda_nf4_rows.cuh): every warp the GPU holds at once takes an equal, contiguous share of
// the flat order of (tile, step), so a block fills its 64 KB pair table once per linear, not once per item.
//
// Why: the row-per-lane decoder tops out near 78% of the streaming bandwidth however long it streams, and its
// time follows the SM clock: 210 warp instructions per 2048 weights, of which 32 HFMA2 do the products, 64 make
// the fp16 pairs (byte permute + table lookup) and the rest is bookkeeping a 64-register cap makes the compiler
// redo (data/h200/README.md, session 15). Here one mma.m16n8k16 does 256 products with fp32 accumulation (no
// fp16 overflow check and fallback), 8 of them a step, and the step's absmax are one 16-byte load.
//
// A warp step is one tile (16 rows: 8 epilogue units of 2 rows, as item_rows<2>) x 128 columns = 1 KB, lane
// (g, q) holding 16 bytes (32 columns, span q) of rows g and g + 8. The k of lane q are its own span's columns;
// B column n carries x only from the lanes with g = n whose span lies in absmax block n (blocksize 64: spans
// 0-1 are block 0, spans 2-3 block 1), zeros elsewhere (loaded from a zero buffer, so every lane issues the same
// loads). C column n is then block n's partial sum, and lane (g, 0) holds both blocks of rows g and g + 8: it
// scales them by the four absmax of its 16-byte scale load and keeps the two sums.
//
// Scales (nf4: fp32 absmax; nf4-dq: code bytes), interleaved at load: per flat step f, lane g's four [h][b]
// (row g + 8h, block b of the step) at (f * 8 + g) * 4. nf4-dq's group scales stay row-major (one per 256
// blocks of the row-major order).
//
// Tiles a warp's range only partly covers are finished as the row-per-lane decoder's row groups are: a residual
// add adds its part atomically, any other epilogue deposits in a slot and the tile's last warp adds the slots in
// order and runs it.
#pragma once

#include "cuda_mma.cuh"
#include "cuda_nf4_rows.cuh"

namespace eco_cuda {

constexpr int kNf4MmaWarps = 16, kNf4MmaPerSm = 2; // 32 warps an SM at 64 registers, as the row-per-lane decoder
constexpr int kNf4MmaStepCols = 128;                 // 4 spans of 32 columns
constexpr int kNf4MmaBlocksize = 64;                 // two absmax blocks a step: B columns 0 and 1

__host__ __device__ __forceinline__ int nf4_mma_tiles(const MatvecParams &p) { return (item_units(p, 2) + 7) / 8; }

// Scales into the stream order: one thread per (tile, step, g, h, b); spare units (past the last) get zeros.
__global__ void interleave_nf4_mma_scales(const float *__restrict__ absmax, float *__restrict__ absmax_out, const uint8_t *__restrict__ codes,
                                          uint8_t *__restrict__ codes_out, const MatvecParams p, int tiles, int steps)
{
    int units = item_units(p, 2);
    size_t B = (size_t)p.cols / kNf4MmaBlocksize, n = (size_t)tiles * steps * 32;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        int b = (int)(i % 2), h = (int)(i / 2 % 2), g = (int)(i / 4 % 8);
        size_t f = i / 32;
        int s = (int)(f % steps), unit = (int)(f / steps) * 8 + g;
        size_t at = 0;
        if (unit < units) {
            int rows2[2];
            item_rows<2>(p, unit, rows2);
            at = (size_t)rows2[h] * B + 2 * (size_t)s + b;
        }
        if (absmax) absmax_out[i] = unit < units ? absmax[at] : 0.f;
        else codes_out[i] = unit < units ? codes[at] : 0;
    }
}

struct Nf4MmaStep {
    uint4 w[2];    // this lane's span of rows g and g + 8
    float4 am;     // nf4: the absmax of rows g, g + 8 x blocks 0, 1; nf4-dq: their group scales
    unsigned code; // nf4-dq: the four absmax codes, same order from the low byte
};

// nf4-dq: row-major block index of block 0 of rows g and g + 8 of a tile (the group scale's index, times 256).
__device__ __forceinline__ void nf4_mma_rowB(const MatvecParams &p, int tile, int g, int (&rowB)[2])
{
    int rows2[2];
    item_rows<2>(p, min(tile * 8 + g, item_units(p, 2) - 1), rows2);
    int B = p.cols / kNf4MmaBlocksize;
    rowB[0] = rows2[0] * B;
    rowB[1] = rows2[1] * B;
}

template <bool DQ>
__device__ __forceinline__ void nf4_mma_load(const MatvecParams &p, int f, int lane, int g, const int (&rowB)[2], int s, Nf4MmaStep &st)
{
    const uint8_t *w = p.w + (size_t)f * kTileStepBytes + lane * 16;
    st.w[0] = load_stream(w);
    st.w[1] = load_stream(w + kWarp * 16);
    if constexpr (DQ) {
        st.code = __ldg(reinterpret_cast<const unsigned *>(p.absmax_q) + (size_t)f * 8 + g);
        st.am.x = __ldg(p.absmax_q_scale + ((rowB[0] + 2 * s) >> 8));
        st.am.y = __ldg(p.absmax_q_scale + ((rowB[0] + 2 * s + 1) >> 8));
        st.am.z = __ldg(p.absmax_q_scale + ((rowB[1] + 2 * s) >> 8));
        st.am.w = __ldg(p.absmax_q_scale + ((rowB[1] + 2 * s + 1) >> 8));
    } else {
        st.am = __ldg(reinterpret_cast<const float4 *>(p.absmax) + (size_t)f * 8 + g);
    }
}

// The sums of rows g and g + 8 of `tile` from this warp's part of it (lanes q = 0 hold them).
__device__ __forceinline__ void nf4_mma_deposit(const MatvecParams &p, int tile, int warp_id, int lane, float a0, float a1)
{
    long first, last;
    rows_group_warps(tile, p.cols / kNf4MmaStepCols, p.chunks_per_warp, &first, &last);
    int g = lane / 4, units = item_units(p, 2), unit = tile * 8 + g, rows2[2];
    item_rows<2>(p, min(unit, units - 1), rows2);
    bool live = lane % 4 == 0 && unit < units;
    if (first == last) {
        const float v[2] = {a0, a1};
        if (live) finish_rows<2>(p, unit, rows2, v);
        return;
    }
    if (p.epilogue == EP_ADD || p.epilogue == EP_ATOMIC_ADD) { // linear: each warp adds its part itself
        // consecutive rows 2·unit, 2·unit + 1; an odd last one's partner is a copy of it (item_rows clamps)
        if (live) atomicAdd(p.y + rows2[0], a0);
        if (live && 2 * unit + 1 < p.rows) atomicAdd(p.y + rows2[1], a1);
        return;
    }
    int n = (int)(last - first + 1);
    float *slot = p.partials + ((size_t)tile * p.slots + (warp_id - first)) * 16;
    if (lane % 4 == 0) {
        __stcg(slot + g, a0);
        __stcg(slot + 8 + g, a1);
    }
    if (!last_to_arrive(p.arrivals + tile, n, lane)) return;
    float v[2] = {0.f, 0.f};
    const float *all = p.partials + (size_t)tile * p.slots * 16;
    for (int k = 0; k < n; k++) { // in slot order: the same sum whichever warp arrives last
        v[0] += __ldcg(all + k * 16 + g);
        v[1] += __ldcg(all + k * 16 + 8 + g);
    }
    if (lane == 0) p.arrivals[tile] = 0; // for the next launch (read only after this grid completes)
    if (live) finish_rows<2>(p, unit, rows2, v);
}

// p.chunks_per_warp: each warp's share of the flat steps; p.preload: steps loaded before the wait (1 or 2); p.partials / p.slots / p.arrivals: the deposits of
// split tiles; p.zeros: 64 zero bytes; dynamic shared memory: the pair table and (nf4-dq) the dynamic map.
template <bool DQ>
__global__ void __launch_bounds__(kNf4MmaWarps * kWarp, kNf4MmaPerSm) matvec_nf4_mma(const MatvecParams p)
{
    extern __shared__ __align__(16) unsigned char nf4_smem[];
    grid_dependents_launch();
    const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp, g = lane / 4, q = lane % 4;
    const int warp_id = blockIdx.x * kNf4MmaWarps + warp;
    const int steps = p.cols / kNf4MmaStepCols, total = nf4_mma_tiles(p) * steps;
    const int f0 = warp_id * p.chunks_per_warp, f1 = min(total, f0 + p.chunks_per_warp);
    int tile = f0 / steps, s = f0 % steps;
    int rowB[2] = {0, 0};
    if constexpr (DQ) nf4_mma_rowB(p, tile, g, rowB);
    // Weights never depend on the previous kernel: the first step, and with p.preload 2 the second, are under
    // way before the dependency wait (a warp of qkv or o has about two steps in all, as on the row-per-lane decoder).
    Nf4MmaStep cur, next;
    if (f0 < f1) nf4_mma_load<DQ>(p, f0, lane, g, rowB, s, cur);
    fill_nf4_pair_table(nf4_smem, DQ);
    const bool preloaded = p.preload > 1 && f0 + 1 < f1;
    if (preloaded) {
        int ns = s + 1, nt = tile;
        if (ns == steps) ns = 0, nt++;
        if constexpr (DQ)
            if (ns == 0) nf4_mma_rowB(p, nt, g, rowB); // rowB follows the last step loaded
        nf4_mma_load<DQ>(p, f0 + 1, lane, g, rowB, ns, next);
    }
    __syncthreads();
    grid_dependency_wait();
    if (f0 >= f1) return;
    const float *dmap = reinterpret_cast<const float *>(nf4_smem + kNf4TableBytes);
    const unsigned lane4 = (unsigned)lane * 4u;
    // B column g from span q where span q lies in block g; the other lanes read zeros at a fixed address
    const bool mine = g == q / 2;
    const uint4 *xp = mine ? reinterpret_cast<const uint4 *>(p.x) + q * 4 : p.zeros;
    const int xstride = mine ? kNf4MmaStepCols / 8 : 0; // uint4 a step
    float acc0 = 0.f, acc1 = 0.f;
    for (int f = f0; f < f1; f++) {
        int ns = s + 1, nt = tile;
        if (ns == steps) ns = 0, nt++;
        if (f + 1 < f1 && !(preloaded && f == f0)) { // with preloaded, the first step's successor is under way
            if constexpr (DQ)
                if (ns == 0) nf4_mma_rowB(p, nt, g, rowB);
            nf4_mma_load<DQ>(p, f + 1, lane, g, rowB, ns, next);
        }
        // x was written by the previous kernel: coherent loads (ld.global.ca), never ld.global.nc
        uint4 xv[4];
#pragma unroll
        for (int i = 0; i < 4; i++) xv[i] = __ldca(xp + (size_t)s * xstride + i);
        const unsigned *xw = reinterpret_cast<const unsigned *>(xv);
        const unsigned *w0 = reinterpret_cast<const unsigned *>(&cur.w[0]), *w1 = reinterpret_cast<const unsigned *>(&cur.w[1]);
        const unsigned char *table = nf4_smem;
        float d[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
        for (int j = 0; j < 8; j++) // mma j: span columns 4j .. 4j + 3 (bytes 2j, 2j + 1)
            mma_f16(d, nf4_pair(w0[j / 2], (2 * j) % 4, table, lane4), nf4_pair(w1[j / 2], (2 * j) % 4, table, lane4),
                    nf4_pair(w0[j / 2], (2 * j + 1) % 4, table, lane4), nf4_pair(w1[j / 2], (2 * j + 1) % 4, table, lane4), xw[2 * j],
                    xw[2 * j + 1]);
        float4 am = cur.am;
        if constexpr (DQ) {
            am.x = dmap[cur.code & 0xff] * am.x + p.absmax_offset;
            am.y = dmap[(cur.code >> 8) & 0xff] * am.y + p.absmax_offset;
            am.z = dmap[(cur.code >> 16) & 0xff] * am.z + p.absmax_offset;
            am.w = dmap[cur.code >> 24] * am.w + p.absmax_offset;
        }
        acc0 = fmaf(d[0], am.x, fmaf(d[1], am.y, acc0));
        acc1 = fmaf(d[2], am.z, fmaf(d[3], am.w, acc1));
        if (ns == 0 || f + 1 >= f1) { // the end of a tile, or of this warp's range
            nf4_mma_deposit(p, tile, warp_id, lane, acc0, acc1);
            acc0 = acc1 = 0.f;
        }
        s = ns;
        tile = nt;
        cur = next;
    }
}

} // namespace eco_cuda
