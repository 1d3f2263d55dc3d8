/* The tensor-core matvec's launch shape, as plain arithmetic (C and CUDA C alike, so a host unit test checks
 * the choice without a GPU). A block of 8 warps covers 8 / kw row tiles of 16 · rt rows (kw warps splitting a
 * tile's columns), and a residual add may split the columns over `splits` blocks more.
 *
 * How long a grid of B equal blocks takes, two models:
 * - by waves of slots (session 16's rule): every block takes the same time whatever shares its SM, so the grid
 *   takes ceil(B / slots) block times, fill = B / (ceil(B / slots) · slots);
 * - by the busiest SM: the blocks an SM is given share its throughput once they are more than it holds at
 *   once (per_sm), so the grid takes about (W / B) · ceil(B / SMs) for W the whole work, and
 *   fill = B / (SMs · ceil(B / SMs)), where B is at least two waves of slots; below that, by waves.
 * Each fits part of the H200's evidence (data/h200/session17, session18):
 * - Qwen2.5-14B's int8 gate_up (27648 x 5120): waves score 432 blocks and 864 alike (0.818) and take 432:
 *   43.7 us bare; 864 blocks (the busiest SM: 0.935) ran it in 37.2–39.7 us side by side, Llama-3.1-8B's in
 *   33.0 against 38.6 (call 1).
 * - Residual adds (o, down, split over columns): the busiest-SM score gave them more, wider blocks (7B down: 896
 *   blocks of 8 warps a tile and 8 slices for 448 of 2 and 8), and whole tokens lost: Qwen2.5-3B int8 636.8 vs
 *   692.1 tok/s, 7B 416.3 vs 429.1 (call 2).
 * - Whole tokens with the busiest-SM score for linears that write their sums (gate_up, qkv) and waves for
 *   residual adds, against waves for all: Llama-3.1-8B int8 391.7 vs 378.9 tok/s, Qwen2.5-14B 213.0 vs 208.8,
 *   7B 423.7 vs 428.6 (the same shapes: run-to-run spread), and 3B 639.2 vs 694.9 (its gate_up, see
 *   eco_mma_choose: fixed by the steps a warp keeps; call 3).
 * - The busiest SM for every queued grid also took thin second waves, and lost to waves side by side
 *   (session18/call1): Qwen2.5-1.5B's gate_up (560 blocks on 528 slots against 280 on 396) x0.90 on whole
 *   tokens, Phi-3-mini's qkv (576 on 528) and gate_up (512 on 396 against 512 on 528) x0.88; Llama-3.1-8B's
 *   896 blocks on 396 slots won again (x1.038).
 * So the engine scores linears that write their sums by the busiest SM where their blocks are two waves deep or
 * more, by waves below that, and residual adds by waves (ECO_CUDA_MMA_FILL=sm|slots applies one model to all,
 * for A/Bs). */
#ifndef ECO_CUDA_MMA_PLAN_H
#define ECO_CUDA_MMA_PLAN_H

#ifdef __cplusplus
extern "C" {
#endif

enum { ECO_MMA_PLAN_WARPS = 8, ECO_MMA_PLAN_MAX_SPLITS = 8, ECO_MMA_PLAN_SM_MIN_STEPS = 6 };

typedef struct {
    int units;        /* epilogue units (row pairs) of the linear */
    int steps;        /* mma steps along a row */
    int residual;     /* its output is added to the residual (columns may split over blocks) */
    int sm_count;     /* SMs */
    int per_sm[3];    /* blocks an SM holds at once, by row tiles per warp (index 1, 2; 0 unused) */
    int no_rt2;       /* two row tiles per warp not allowed (nf4-dq: 170 registers) */
    int want_rt, want_kw, want_splits; /* fixed by ECO_CUDA_MMA_SHAPE (or forced splits); 0: chosen */
    int by_slots;     /* score by waves of slots (session 16's rule) */
} eco_mma_problem;

typedef struct {
    int rt, kw, splits;
    unsigned blocks;
    double fill; /* the score it won with; negative when no candidate met the overrides */
} eco_mma_plan;

static inline double eco_mma_fill(long blocks, long sm_count, long per_sm, int by_slots)
{
    if (blocks <= 0 || sm_count <= 0) return 0;
    if (per_sm < 1) per_sm = 1;
    long slots = sm_count * per_sm, busiest = (blocks + sm_count - 1) / sm_count;
    /* By the busiest SM only where the blocks are at least two waves deep: a block queued behind others shares
     * its SM's throughput with them, but the few blocks of a thin second wave run alone, each as long as a whole
     * block (session 18). */
    if (by_slots || blocks < 2 * slots) return (double)blocks / (double)(((blocks + slots - 1) / slots) * slots);
    return (double)blocks / (double)(sm_count * busiest);
}

static inline eco_mma_plan eco_mma_plan_of(int rt, int kw, int splits, long blocks, double fill)
{
    eco_mma_plan m;
    m.rt = rt;
    m.kw = kw;
    m.splits = splits;
    m.blocks = (unsigned)blocks;
    m.fill = fill;
    return m;
}

/* The shape with the best fill among those giving every warp at least 2 steps, and min_steps where its blocks
 * are more than the SMs hold at once (they then queue, and a block's fixed costs add up). Ties go to two row
 * tiles per warp (twice the bytes in flight per load batch), then to fewer warps per tile and fewer slices.
 * fill < 0: none qualified. */
static inline eco_mma_plan eco_mma_best(const eco_mma_problem *p, int min_steps)
{
    eco_mma_plan best = eco_mma_plan_of(0, 0, 0, 0, -1);
    for (int rt = 2; rt >= 1; rt--) {
        if (p->want_rt ? rt != p->want_rt : rt == 2 && p->no_rt2) continue;
        long tiles = (p->units + 8L * rt - 1) / (8L * rt);
        for (int kw = 1; kw <= ECO_MMA_PLAN_WARPS; kw *= 2) {
            if (p->want_kw ? kw != p->want_kw : kw > 1 && p->steps / kw < 2) continue;
            for (int sp = 1; sp <= ECO_MMA_PLAN_MAX_SPLITS; sp *= 2) {
                if (!p->residual && sp > 1) break;
                if (p->want_splits ? sp != p->want_splits : sp > 1 && p->steps / (kw * sp) < 2) continue;
                long blocks = (tiles + ECO_MMA_PLAN_WARPS / kw - 1) / (ECO_MMA_PLAN_WARPS / kw) * sp;
                int queued = blocks > (long)p->sm_count * (p->per_sm[rt] > 0 ? p->per_sm[rt] : 1);
                int fixed = p->want_kw || (p->want_splits && sp > 1);
                if (queued && !fixed && kw * sp > 1 && p->steps / (kw * sp) < min_steps) continue;
                double fill = eco_mma_fill(blocks, p->sm_count, p->per_sm[rt], p->by_slots);
                if (fill > best.fill + 1e-9) best = eco_mma_plan_of(rt, kw, sp, blocks, fill);
            }
        }
    }
    return best;
}

/* The launch shape. Waves of slots ask each warp for 2 steps. The busiest-SM score rewards many short blocks,
 * so where they queue it asks for ECO_MMA_PLAN_SM_MIN_STEPS: a block's fixed costs (the pipeline's fill, the
 * shared-memory sum of a tile's warps) then add up. On Qwen2.5-3B's gate_up (22016 x 2048, 32 steps) it took
 * 1376 blocks of 8 warps a tile (4 steps each) over 344 of 4, and whole tokens lost 8% (639.2 vs 694.9 tok/s,
 * session17/call3); asked for 6 steps everywhere, its qkv (160 blocks, one wave, 4 steps) fell to 80 blocks and
 * 3B still lost 4% (665.7 vs 693.0, call 4). 7B's 2,8,1 (7 steps, 1184 blocks) is its fastest gate_up shape.
 * Without any candidate (overrides no shape meets) the overrides are taken as given, fill -1. */
static inline eco_mma_plan eco_mma_choose(const eco_mma_problem *p)
{
    eco_mma_plan best = eco_mma_best(p, p->by_slots ? 2 : ECO_MMA_PLAN_SM_MIN_STEPS);
    if (best.fill < 0) {
        int rt = p->want_rt ? p->want_rt : 1, kw = p->want_kw ? p->want_kw : 1;
        int sp = p->residual && p->want_splits ? p->want_splits : 1;
        long tiles = (p->units + 8L * rt - 1) / (8L * rt);
        best = eco_mma_plan_of(rt, kw, sp, (tiles + ECO_MMA_PLAN_WARPS / kw - 1) / (ECO_MMA_PLAN_WARPS / kw) * sp, -1);
    }
    return best;
}

/* fp16's o, gate_up and down take the tensor-core matvec by default where the hidden size is a multiple of 4096.
 * Side by side on the H200 (session 20, bench_engine --variants, 4 rounds), those three roles there against every
 * linear on the scalar kernel: Llama-3.1-8B 241.3 vs 235.0 tok/s (x1.027, 78.4 -> 80.5% of the roofline),
 * Mistral-7B-v0.3 251.7 vs 244.9 (x1.028); but Qwen2.5-7B (hidden 3584) 255.6 vs 275.9 (x0.926) and Qwen2.5-14B
 * (5120) 125.0 vs 138.0 (x0.906), where the scalar kernel already streams at 86-87%. Every role on the tensor
 * cores (qkv and lm_head too) was x1.019 / x1.022 on the first two. */
static inline int eco_mma_fp16_by_default(int hidden) { return hidden > 0 && hidden % 4096 == 0; }

#ifdef __cplusplus
}
#endif

#endif
