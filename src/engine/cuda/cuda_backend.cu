// The CUDA backend (eco_backend_cuda): weights quantized on the host by src/quant (so the formats are the
// CPU reference's, bit for bit), uploaded once; the whole token captured as a CUDA graph with the token
// and position passed through device memory. A "reference-stack" mode replays launches one by one and
// adds the host syncs the reference library does, so a report can separate the cost of a format from the
// cost of a kernel design.
#include <cuda_runtime.h>

#include <iterator>
#include <utility>

#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cuda_kernels.cuh"
#include "cuda_mma.cuh"
#include "cuda_nf4_rows.cuh"
#include "mma_plan.h"

extern "C" {
#include "eco/engine.h"
#include "eco/err.h"
#include "eco/model.h"
#include "eco/quant.h"
#include "eco/cuda.h"
#include "eco/warp_trace.h"
}

using namespace eco_cuda;

namespace {

constexpr int kMaxOutliers = 1024;
constexpr int kLoadThreads = 16; // host threads quantizing and uploading a linear's row slices

struct Linear {
    DeviceLinear d;
    void *buffers[5];
    int n_buffers;
};

struct Layer {
    Linear qkv, o, gate_up, down;
    float *attn_norm, *mlp_norm, *qkv_bias;
    __half *k_cache, *v_cache;
};

// How a matvec kernel is shaped: rows per warp (R), 16-byte loads per row in flight per lane (U), and the
// most column slices (split-K) a residual-add linear may use. Tuned per format with bench/bench_matvec.
struct MatvecShape {
    int rows_per_warp, unroll, max_splits;
};

// How the tensor-core matvec's shapes are scored (mma_plan.h): by the busiest SM for linears that write their
// sums where the blocks are two waves deep (else by waves), by waves of slots for residual adds (auto, the
// default); or one way for all (ECO_CUDA_MMA_FILL=sm|slots).
enum { kMmaFillAuto, kMmaFillSm, kMmaFillSlots };

// The kernel design the environment and eco_cuda_set_reference_stack ask for: read when an engine is
// created, and by eco_cuda_design for the records.
struct Design {
    bool reference_stack, pdl, fused, fp8_hw, nf4_lanes, nf4_rows, i8x_norm;
    bool nf4_ok;           // false: ECO_CUDA_NF4 is none of rows, lanes, table16 (the engine refuses to start)
    int nf4_occ;           // the lane decoder's blocks per SM its registers allow (ECO_CUDA_NF4_OCC 1..3); 0: did not parse
    bool nf4_lanes_any_size; // ECO_CUDA_NF4=lanes: every nf4 linear on it, not only the big ones
    bool nf4_rows_any_size;  // ECO_CUDA_NF4=rows: every nf4 linear a row per lane, not only the big, tall ones
    int nf4_rows_lean;       // that decoder's steps (matvec_nf4_rows, kNf4RowsSteps): 16 pair sums (default), ECO_CUDA_NF4_ROWS_LEAN=0 full, 1 lean, 5 scaled, 9 two a loop, 21 pair sums with a first-pair flag, 22 pair sums traced
    const char *nf4_rows_trace; // ECO_CUDA_NF4_ROWS_TRACE: =22's warp trace file (eco_warp_trace_record), or NULL
    int nf4_rows_trace_records; // ECO_CUDA_NF4_ROWS_TRACE_RECORDS: the ring's records (the last ones are kept); -1: did not parse
    unsigned mma;          // formats (bit per eco_precision) whose linears use the tensor-core matvec
    bool mma_any_size;     // ECO_CUDA_MMA named them: every linear of those formats, not only the big ones
    bool mma_fp16_auto;    // ECO_CUDA_MMA unset: fp16's o, gate_up and down join where eco_mma_fp16_by_default(hidden)
    unsigned mma_roles;    // the linears (role bits) its formats may put there (ECO_CUDA_MMA_ROLES, for A/Bs); 0: did not parse
    int mma_rt, mma_kw, mma_splits; // ECO_CUDA_MMA_SHAPE="RT,KW,S" for experiments; 0: chosen per linear
    bool mma_ok;           // false: ECO_CUDA_MMA or ECO_CUDA_MMA_SHAPE did not parse (the engine refuses to start)
    int mma_fill;          // ECO_CUDA_MMA_FILL: kMmaFillAuto (unset), kMmaFillSm (=sm), kMmaFillSlots (=slots); -1: did not parse
    int l2_prefetch_mb;    // ECO_CUDA_L2_PREFETCH_MB: scalar matvecs up to this size prefetched into L2; -1: did not parse
    bool swiglu_adjacent;  // ECO_CUDA_SWIGLU_ADJACENT=1: row-major gate_up stored with each gate/up pair adjacent
    int qkv_atomic;        // ECO_CUDA_QKV_ATOMIC: qkv summed by atomic adds (fused path only); bias/RoPE/KV write in
                           // attention (kQkvAtomicAttention, "1") or in rope_kv (kQkvAtomicApart, "apart"), or the
                           // former where the nf4 qkv then goes a row per lane (kQkvAtomicAuto, unset); -1: did not parse
    int swiglu_atomic;     // ECO_CUDA_SWIGLU_ATOMIC=1 or unset: gate_up summed by atomic adds, SwiGLU made by down where it applies (0: off); -1: did not parse
};

bool env_is(const char *name, const char *value)
{
    const char *v = getenv(name);
    return v && !strcmp(v, value);
}

// v as a whole number in lo..hi, nothing after it.
bool parse_int_in(const char *v, int lo, int hi, int *out)
{
    char *end;
    long k = strtol(v, &end, 10);
    if (end == v || *end || k < lo || k > hi) return false;
    *out = (int)k;
    return true;
}

// nf4 decoder: per-lane byte-pair tables or the fp32 16-entry table. By default the lane decoder takes the
// linears of at least kNf4LanesMinWeights (2^24) weights and the table the rest; ECO_CUDA_NF4=lanes puts every
// nf4 linear on the lane decoder, =table16 every one on the table. From bench_matvec / bench_engine on the H200
// (data/h200/README.md, session 7): Qwen2.5-7B gate_up 32.2 vs 38.3 us, down 17.3 vs 19.1, but o (12.8M
// weights) 5.6 vs 5.2; whole tokens +12-13% at 7-8B with this rule, -12% at 0.5B with every linear on it. The
// 7B qkv (16.5M, under 2^24) stays on the table although it was faster on the lanes (7.3 vs 9.0 us): a lower
// threshold is untimed. Registers capped for 2 blocks (16 warps) per SM: 46.6% of the bandwidth vs 41.5%
// uncapped at R 4.
constexpr bool kNf4LanesByDefault = true;
// Above both (session 9): nf4 linears interleaved a row per lane (cuda_nf4_rows.cuh), by default the tall ones
// (kNf4RowsMinAspect times more rows than columns: gate_up, many row groups, each split between few warps) of
// at least kNf4RowsMinTall weights, and the residual ones (o, down: split groups add to y atomically) of at
// least kNf4RowsMinResidual. From bench_matvec on the H200, side by side (data/h200/README.md, session 9),
// row per lane vs lanes, us: gate_up Qwen2.5-7B 26.3 vs 32.6, Llama-3.1-8B 24.0 vs 27.6, Qwen2.5-14B 28.1 vs
// 32.6; down 15.1 vs 17.2, 13.6 vs 13.5, 15.7 vs 19.6; o (12.8M-26.2M weights) 5.4 vs 5.5, 6.5 vs 5.8, 8.7
// vs 9.1; qkv slower everywhere (8.2 vs 7.4: its RoPE pairs need the whole sum, and each row group is split
// between ~29 warps whose deposits the last one adds). Tall linears of 1.5B-3B models (27-45M weights) cost
// 3-5% a token against session 8's build. ECO_CUDA_NF4=rows puts every nf4 linear (columns in whole steps of
// 128) on it; =lanes or =table16 none. ECO_CUDA_NF4_LANES_MIN and ECO_CUDA_NF4_ROWS_MIN_RESIDUAL (2^20 weights)
// move the two thresholds, for A/Bs.
constexpr bool kNf4RowsByDefault = true;
// The residual threshold was 2^25 until session 11, when a per-kernel profile of Qwen2.5-7B showed its o
// (12.8M weights, on the fp32 table) taking 11 us of each layer's critical path against 4 us on this
// decoder: 1903.6 vs 2109.1 us a token with the threshold at 2^23 (kernel_profile, side by side).
constexpr long kNf4RowsMinTall = 64l << 20, kNf4RowsMinResidual = 8l << 20;
constexpr int kNf4RowsMinAspect = 4;
constexpr long kNf4LanesMinWeights = 16l << 20;
constexpr int kNf4OccByDefault = 2;
// =22's warp trace ring: 2^21 records of 48 bytes (96 MB) hold the last ~4 tokens of a 7B model's nf4 linears.
constexpr int kRowsTraceRecordsDefault = 1 << 21;

// qkv summed like a residual add into zeroed memory, so no warp waits for a row group's last one and the nf4 qkv
// goes on the row-per-lane decoder (as o does); bias, RoPE and the KV write then run in the attention kernel,
// and the next rmsnorm zeroes the sums. By default where it moves an nf4 qkv onto that decoder (a residual of
// >= ECO_CUDA_NF4_ROWS_MIN_RESIDUAL weights): side by side on the H200 (data/h200/README.md, session 14),
// Qwen2.5-7B nf4 576.4 vs 553.5 / 553.6 tok/s, Llama-3.1-8B 535.0 vs 522.6 / 522.4; but Qwen2.5-0.5B 1614.8 vs
// 1693.7 and 3B 626.5 vs 661.0, whose qkv stays on the other decoders and then only gains atomics. RoPE in a
// kernel of its own (session 13's form, "apart") 571.4 and 532.3. ECO_CUDA_QKV_ATOMIC=0, 1 (every format and
// size) or apart overrides, for A/Bs.
constexpr int kQkvAtomicOff = 0, kQkvAtomicAttention = 1, kQkvAtomicApart = 2, kQkvAtomicAuto = 3;

// A scalar matvec whose weights fit in ECO_CUDA_L2_PREFETCH_MB (0: none) asks L2 for all of them before its
// dependency wait, while the norm or attention before it leaves HBM idle. Side by side on the H200
// (data/h200/README.md, session 8): Qwen2.5-0.5B fp16 1546.9 vs 1436.3 tok/s (every linear under 16 MB); but
// prefetching the first 16 MB spread over the rows of a bigger linear cost Qwen2.5-7B 268.1 vs 277.4 and
// Llama-3.1-8B 229.2 vs 235.0 (32 MB: worse), and so did its leading rows, whole, up to 16 MB (270.0 vs 281.0,
// 229.7 vs 237.0; 8 MB: 277.4, 235.7), so big linears are not prefetched at all.
constexpr int kL2PrefetchMb = 16;

constexpr unsigned fmt_bit(int p) { return 1u << p; }
constexpr unsigned kMmaAll = fmt_bit(ECO_PREC_FP16) | fmt_bit(ECO_PREC_INT8) | fmt_bit(ECO_PREC_INT8_MIXED) | fmt_bit(ECO_PREC_NF4) |
                             fmt_bit(ECO_PREC_NF4_DQ) | fmt_bit(ECO_PREC_FP8);
// Formats on the tensor-core matvec unless ECO_CUDA_MMA says otherwise ("0"/"none", "all", or a comma list
// of precision names; nf4 includes nf4-dq). int8 only, from bench_matvec / bench_engine on the H200
// (data/h200/README.md, session 6): Qwen2.5-7B int8 qkv, o and down 16-17% faster than the scalar kernel and
// Llama-3.1-8B +4% a token; fp16, fp8 and LLM.int8 about even or slower; nf4 much slower (its shared-table
// decode and 64 KB fill per block). fp16 again in session 11 (kernel_profile, side by side): Llama-3.1-8B
// 4067 vs 4214 us a token on it (o, gate_up and down faster, qkv and lm_head slower), but Qwen2.5-7B 3913 vs
// 3558 (every linear slower) and Qwen2.5-1.5B/3B 10-11% slower, so fp16 stays on the scalar kernel.
constexpr unsigned kMmaByDefault = fmt_bit(ECO_PREC_INT8);

// ECO_CUDA_MMA as a set of formats; false when it does not parse.
bool parse_mma_formats(const char *v, unsigned *out)
{
    *out = kMmaByDefault;
    if (!v) return true;
    if (!strcmp(v, "0") || !strcmp(v, "none")) { *out = 0; return true; }
    if (!strcmp(v, "1") || !strcmp(v, "all")) { *out = kMmaAll; return true; }
    unsigned set = 0;
    char buf[128];
    snprintf(buf, sizeof buf, "%s", v);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        eco_precision p;
        if (eco_precision_parse(tok, &p)) return false;
        set |= fmt_bit(p) | (p == ECO_PREC_NF4 ? fmt_bit(ECO_PREC_NF4_DQ) : 0);
    }
    *out = set;
    return set != 0;
}

// The linears of a layer (and the lm_head) by role, for ECO_CUDA_MMA_ROLES. Session 11 found fp16 on the tensor
// cores faster for Llama-3.1-8B's o, gate_up and down but slower for its qkv and lm_head: the A/B takes the roles
// one by one.
enum MmaRole : unsigned { kRoleQkv = 1, kRoleO = 2, kRoleGateUp = 4, kRoleDown = 8, kRoleLmHead = 16 };
constexpr unsigned kMmaRolesAll = kRoleQkv | kRoleO | kRoleGateUp | kRoleDown | kRoleLmHead;
const struct {
    const char *name;
    MmaRole role;
} kMmaRoleNames[] = {{"qkv", kRoleQkv}, {"o", kRoleO}, {"gate_up", kRoleGateUp}, {"down", kRoleDown}, {"lm_head", kRoleLmHead}};

// The roles fp16 takes on the tensor cores by the hidden-size rule (mma_plan.h, eco_mma_fp16_by_default).
constexpr unsigned kFp16AutoRoles = kRoleO | kRoleGateUp | kRoleDown;

// ECO_CUDA_MMA_ROLES as role bits (unset: all); 0 when it does not parse or names none.
unsigned parse_mma_roles(const char *v)
{
    if (!v) return kMmaRolesAll;
    unsigned set = 0;
    char buf[128];
    if (snprintf(buf, sizeof buf, "%s", v) >= (int)sizeof buf) return 0;
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        unsigned bit = 0;
        for (const auto &r : kMmaRoleNames)
            if (!strcmp(tok, r.name)) bit = r.role;
        if (!bit) return 0;
        set |= bit;
    }
    return set;
}

Design requested_design(void)
{
    Design d;
    d.reference_stack = eco_cuda_reference_stack_requested();
    d.pdl = !d.reference_stack && !env_is("ECO_CUDA_PDL", "0");
    d.fused = !d.reference_stack && !env_is("ECO_CUDA_FUSE", "0");
    d.i8x_norm = !d.reference_stack && !env_is("ECO_CUDA_I8X_NORM", "0");
    d.fp8_hw = !env_is("ECO_CUDA_FP8", "bits");
    d.swiglu_adjacent = env_is("ECO_CUDA_SWIGLU_ADJACENT", "1");
    const char *qa = getenv("ECO_CUDA_QKV_ATOMIC");
    d.qkv_atomic = !qa ? kQkvAtomicAuto : !strcmp(qa, "0") ? kQkvAtomicOff : !strcmp(qa, "1") ? kQkvAtomicAttention
                 : !strcmp(qa, "apart") ? kQkvAtomicApart : -1;
    if (!d.fused && d.qkv_atomic > 0) d.qkv_atomic = kQkvAtomicOff;
    const char *sa = getenv("ECO_CUDA_SWIGLU_ATOMIC");
    d.swiglu_atomic = !sa || !strcmp(sa, "1") ? 1 : !strcmp(sa, "0") ? 0 : -1;
    d.nf4_lanes = kNf4LanesByDefault ? !env_is("ECO_CUDA_NF4", "table16") : env_is("ECO_CUDA_NF4", "lanes");
    d.nf4_lanes_any_size = env_is("ECO_CUDA_NF4", "lanes");
    const char *nf4 = getenv("ECO_CUDA_NF4");
    d.nf4_ok = !nf4 || !strcmp(nf4, "rows") || !strcmp(nf4, "lanes") || !strcmp(nf4, "table16");
    d.nf4_rows = !d.reference_stack && (kNf4RowsByDefault ? !nf4 || !strcmp(nf4, "rows") : env_is("ECO_CUDA_NF4", "rows"));
    d.nf4_rows_any_size = env_is("ECO_CUDA_NF4", "rows");
    const char *lean = getenv("ECO_CUDA_NF4_ROWS_LEAN");
    d.nf4_rows_lean = kNf4RowsLeanDefault;
    if (lean && (!parse_int_in(lean, 0, INT_MAX, &d.nf4_rows_lean) || nf4_rows_steps_index(d.nf4_rows_lean) < 0 ||
                 kNf4RowsSteps[nf4_rows_steps_index(d.nf4_rows_lean)].swiglu_x))
        d.nf4_rows_lean = -1;
    d.nf4_rows_trace = getenv("ECO_CUDA_NF4_ROWS_TRACE");
    if (d.nf4_rows_trace && !*d.nf4_rows_trace) d.nf4_rows_trace = NULL;
    const char *ring = getenv("ECO_CUDA_NF4_ROWS_TRACE_RECORDS");
    d.nf4_rows_trace_records = kRowsTraceRecordsDefault;
    if (ring && !parse_int_in(ring, 1024, 1 << 26, &d.nf4_rows_trace_records)) d.nf4_rows_trace_records = -1;
    const char *occ = getenv("ECO_CUDA_NF4_OCC");
    d.nf4_occ = !occ ? kNf4OccByDefault : !strcmp(occ, "1") ? 1 : !strcmp(occ, "2") ? 2 : !strcmp(occ, "3") ? 3 : 0;
    d.mma_ok = parse_mma_formats(getenv("ECO_CUDA_MMA"), &d.mma);
    d.l2_prefetch_mb = kL2PrefetchMb;
    const char *pf = getenv("ECO_CUDA_L2_PREFETCH_MB");
    if (pf && !parse_int_in(pf, 0, 64, &d.l2_prefetch_mb)) d.l2_prefetch_mb = -1;
    if (d.reference_stack) d.l2_prefetch_mb = 0;
    d.mma_any_size = getenv("ECO_CUDA_MMA") != NULL;
    d.mma_fp16_auto = !d.mma_any_size && !d.reference_stack;
    d.mma_roles = parse_mma_roles(getenv("ECO_CUDA_MMA_ROLES"));
    if (d.reference_stack) d.mma = 0; // the reference stack keeps the kernels its figures were measured with
    d.mma_rt = d.mma_kw = d.mma_splits = 0;
    const char *fill = getenv("ECO_CUDA_MMA_FILL");
    d.mma_fill = !fill ? kMmaFillAuto : !strcmp(fill, "sm") ? kMmaFillSm : !strcmp(fill, "slots") ? kMmaFillSlots : -1;
    const char *shape = getenv("ECO_CUDA_MMA_SHAPE");
    if (shape) {
        int rt, kw, sp;
        bool ok = sscanf(shape, "%d,%d,%d", &rt, &kw, &sp) == 3 && (rt == 1 || rt == 2) && kw >= 1 && kw <= kMmaWarps &&
                  !(kw & (kw - 1)) && sp >= 1 && sp <= 16;
        if (ok) d.mma_rt = rt, d.mma_kw = kw, d.mma_splits = sp;
        d.mma_ok = d.mma_ok && ok;
    }
    return d;
}

struct State {
    eco_model_config cfg;
    eco_engine_options opt;
    bool reference_stack;
    bool fp8_hw; /* e4m3 through the hardware conversion (faster on the H200); ECO_CUDA_FP8=bits: by bit moves */
    bool nf4_lanes; /* nf4 through per-lane copies of a byte-pair table (ECO_CUDA_NF4=lanes); else the fp32 16-entry table */
    int nf4_occ;    /* that decoder's register cap, as blocks per SM */
    bool nf4_lanes_any_size; /* all nf4 linears on it; else those of >= kNf4LanesMinWeights */
    bool nf4_rows;  /* nf4 linears interleaved a row per lane (cuda_nf4_rows.cuh), ahead of both decoders above */
    bool nf4_rows_any_size; /* all nf4 linears on it; else the big, tall ones (kNf4RowsMinWeights, kNf4RowsMinAspect) */
    int nf4_rows_lean; /* its steps (kNf4RowsSteps): 16 pair sums, 21 those with a first-pair flag, 22 those traced, 9 scaled two a loop, 5 scaled, 1 lean, 0 full (ECO_CUDA_NF4_ROWS_LEAN) */
    char *rows_trace_path; /* =22: where its warp trace goes when the engine (or standalone linear) closes */
    int rows_trace_cap;    /* the device ring's records */
    eco_warp_trace_record *rows_trace; /* the ring (rows_trace_open), or NULL */
    unsigned *rows_trace_next;
    int nf4_min_steps; /* its least steps per warp (ECO_CUDA_NF4_MIN_STEPS): fewer warps for a small linear */
    int nf4_preload;   /* its steps loaded before the dependency wait (ECO_CUDA_NF4_PRELOAD, 1 or 2) */
    unsigned nf4_fill_roles; /* its residual linears (MmaRole bits) on filled shares, nf4_rows_fill (ECO_CUDA_NF4_FILL) */
    int nf4_fill_skew;       /* and the blocks they skew */
    int rows_shape; /* its warps per block, chunks per step, blocks per SM: kNf4RowsShapes[i] (ECO_CUDA_NF4_ROWS_SHAPE) */
    int rows_small_shape; /* the shape of its linears of at most rows_small_max weights (ECO_CUDA_NF4_ROWS_SMALL) */
    long rows_small_max;  /* 0: every linear takes rows_shape */
    float *rows_partials; /* that matvec's deposits of row groups split between warps, shared by all its linears */
    int *rows_arrivals;
    size_t rows_partials_n, rows_arrivals_n;
    unsigned mma;   /* formats on the tensor-core matvec (cuda_mma.cuh) */
    bool mma_any_size; /* all their linears (ECO_CUDA_MMA given); else only those big enough (tile_linear) */
    bool mma_fp16_auto; /* fp16 joined by the hidden-size rule (eco_mma_fp16_by_default): only kFp16AutoRoles */
    unsigned mma_roles; /* the linears that may be tiled, MmaRole bits (ECO_CUDA_MMA_ROLES) */
    int mma_rt, mma_kw, mma_splits; /* its shape when fixed by ECO_CUDA_MMA_SHAPE; 0: per linear */
    int mma_fill; /* how its shapes are scored (kMmaFill*, ECO_CUDA_MMA_FILL) */
    int nf4_max_blocks; /* that decoder's grid cap; 0: what fits at once (tests set ECO_CUDA_NF4_BLOCKS to loop more) */
    long nf4_lanes_min, nf4_rows_min_residual; /* weights: the lane decoder's and the row-per-lane residual thresholds */
    bool pdl;    /* programmatic dependent launch between the kernels of a token (off: ECO_CUDA_PDL=0) */
    bool i8x_norm; /* LLM.int8(): RMSNorm quantizes the qkv and gate_up inputs itself (off: ECO_CUDA_I8X_NORM=0, reference stack) */
    bool fused;  /* RoPE + KV write and SwiGLU in matvec epilogues (off: ECO_CUDA_FUSE=0, and in reference-stack mode) */
    MatvecShape shape;
    int force_splits; /* bench_matvec: exactly this many column slices */
    int sm_count;
    float2 *rope; /* (cos, sin) [max_seq][head_dim / 2] */
    Layer *layers;
    __half *embed;
    Linear lm_head;
    bool lm_head_is_embed;
    float *final_norm;
    float *x, *qkv, *gate_up, *logits;
    __half *xn, *attn_out, *act;
    int8_t *xq;
    float *x_absmax;
    int *outliers, *n_outliers;
    int *d_token, *d_pos, *d_next;
    int *d_history;  // [max_seq]: the token each position's step produced (greedy_run reads it back)
    float *part_v;   // argmax: per-block winners
    int *part_i, argmax_parts;
    int *h_io;       // pinned: token, pos, next
    int *h_history;  // pinned [max_seq]
    float *h_logits; // pinned
    cudaStream_t stream;
    cudaGraphExec_t graph;
    bool graph_ready;
    uint64_t resident;
    int attn_splits;      /* attention blocks per head (split over positions), at most */
    int attn_min_positions; /* positions per block below which a token uses fewer splits */
    float *attn_partial;  /* [heads][attn_splits][head_dim + 2]: each split's V sum, max and sum */
    int *attn_done;       /* [heads]: splits finished this token (the last one resets it) */
    long l2_prefetch_bytes; /* scalar matvecs this small are prefetched into L2 whole before the wait (0: none) */
    bool swiglu_adjacent; /* row-major gate_up (8-bit and fp16 formats) stored pair by pair (interleave_pairs) */
    int qkv_atomic;  /* qkv summed into qkv_raw by atomic adds (kQkvAtomic*): attention or rope_kv<true> adds bias, rotates and
                        writes KV; the next rmsnorm or rope_kv zeroes it */
    float *qkv_raw;  /* [q_dim + 2 kv_dim], zero between tokens (qkv_atomic only) */
    bool swiglu_atomic; /* gate_up summed into swiglu_sums by atomic adds, down making its x from them (=23); resolved per model */
    float *swiglu_sums; /* [swiglu_buffers()][2 intermediate]: layer l's in swiglu_buffer(l), zeroed by the down before it */
};

// The requested design into an engine's (or a standalone linear's) state.
eco_err apply_design(State *s, const Design &d)
{
    if (!d.mma_ok)
        return eco_fail(ECO_EINVAL, "ECO_CUDA_MMA=\"%s\" / ECO_CUDA_MMA_SHAPE=\"%s\": want 0, none, all or precision names "
                        "(fp16,int8,int8-mixed,nf4,fp8), and \"RT,KW,S\" with RT 1 or 2, KW 1, 2, 4 or 8, S 1..16",
                        getenv("ECO_CUDA_MMA") ? getenv("ECO_CUDA_MMA") : "", getenv("ECO_CUDA_MMA_SHAPE") ? getenv("ECO_CUDA_MMA_SHAPE") : "");
    if (!d.mma_roles)
        return eco_fail(ECO_EINVAL, "ECO_CUDA_MMA_ROLES=\"%s\": want a comma-separated list of qkv, o, gate_up, down, lm_head (unset: all)",
                        getenv("ECO_CUDA_MMA_ROLES"));
    if (d.mma_fill < 0) return eco_fail(ECO_EINVAL, "ECO_CUDA_MMA_FILL=\"%s\": want sm or slots (unset: waves for residual adds and shallow grids, else the busiest SM)", getenv("ECO_CUDA_MMA_FILL"));
    s->mma_fill = d.mma_fill;
    s->reference_stack = d.reference_stack;
    s->fp8_hw = d.fp8_hw;
    if (!d.nf4_ok) return eco_fail(ECO_EINVAL, "ECO_CUDA_NF4=\"%s\": want rows, lanes or table16", getenv("ECO_CUDA_NF4"));
    if (d.qkv_atomic < 0) return eco_fail(ECO_EINVAL, "ECO_CUDA_QKV_ATOMIC=\"%s\": want 0, 1 or apart", getenv("ECO_CUDA_QKV_ATOMIC"));
    if (d.swiglu_atomic < 0) return eco_fail(ECO_EINVAL, "ECO_CUDA_SWIGLU_ATOMIC=\"%s\": want 0 or 1", getenv("ECO_CUDA_SWIGLU_ATOMIC"));
    if (!d.nf4_occ) return eco_fail(ECO_EINVAL, "ECO_CUDA_NF4_OCC=\"%s\": want 1, 2 or 3 (blocks per SM)", getenv("ECO_CUDA_NF4_OCC"));
    if (d.l2_prefetch_mb < 0)
        return eco_fail(ECO_EINVAL, "ECO_CUDA_L2_PREFETCH_MB=\"%s\": want a whole number of MB, 0..64", getenv("ECO_CUDA_L2_PREFETCH_MB"));
    s->l2_prefetch_bytes = (long)d.l2_prefetch_mb << 20;
    s->nf4_lanes = d.nf4_lanes;
    s->nf4_occ = d.nf4_occ;
    s->nf4_lanes_any_size = d.nf4_lanes_any_size;
    s->nf4_rows = d.nf4_rows;
    s->nf4_rows_any_size = d.nf4_rows_any_size;
    if (d.nf4_rows_lean < 0)
        return eco_fail(ECO_EINVAL, "ECO_CUDA_NF4_ROWS_LEAN=\"%s\": want 0 (full steps), 1 (lean steps), 5 (lean scaled-table steps), 9 "
                        "(those two steps a loop), 16 (those with one sum for both, the default), 21 (16 with the first pair "
                        "told by a flag) or 22 (16 with a warp trace); 2-4, 6-8, 10-15, 17-20 and 24 were experiments, removed, "
                        "and 23 is down's under SwiGLU made by down (ECO_CUDA_SWIGLU_ATOMIC)",
                        getenv("ECO_CUDA_NF4_ROWS_LEAN"));
    bool traced = kNf4RowsSteps[nf4_rows_steps_index(d.nf4_rows_lean)].trace;
    if (traced && !d.nf4_rows_trace)
        return eco_fail(ECO_EINVAL, "ECO_CUDA_NF4_ROWS_LEAN=%d traces every warp of the nf4 row decoder: name its file with "
                        "ECO_CUDA_NF4_ROWS_TRACE=FILE", d.nf4_rows_lean);
    if (!traced && d.nf4_rows_trace)
        return eco_fail(ECO_EINVAL, "ECO_CUDA_NF4_ROWS_TRACE=\"%s\": the warp trace is the steps of ECO_CUDA_NF4_ROWS_LEAN=%d "
                        "(now %d)", d.nf4_rows_trace, kNf4StepsTraced, d.nf4_rows_lean);
    if (d.nf4_rows_trace_records < 0)
        return eco_fail(ECO_EINVAL, "ECO_CUDA_NF4_ROWS_TRACE_RECORDS=\"%s\": want a whole number of records, 1024..%d",
                        getenv("ECO_CUDA_NF4_ROWS_TRACE_RECORDS"), 1 << 26);
    s->nf4_rows_lean = d.nf4_rows_lean;
    if (d.nf4_rows_trace && !(s->rows_trace_path = strdup(d.nf4_rows_trace))) return eco_fail(ECO_ENOMEM, "out of memory");
    s->rows_trace_cap = d.nf4_rows_trace_records;
    s->pdl = d.pdl;
    s->fused = d.fused;
    s->swiglu_adjacent = d.swiglu_adjacent;
    s->qkv_atomic = d.qkv_atomic;
    s->swiglu_atomic = d.swiglu_atomic > 0 && d.fused;
    s->i8x_norm = d.i8x_norm;
    s->mma = d.mma;
    s->mma_any_size = d.mma_any_size;
    s->mma_roles = d.mma_roles;
    s->mma_fp16_auto = d.mma_fp16_auto && eco_mma_fp16_by_default(s->cfg.hidden);
    if (s->mma_fp16_auto) s->mma |= fmt_bit(ECO_PREC_FP16);
    s->mma_rt = d.mma_rt;
    s->mma_kw = d.mma_kw;
    s->mma_splits = d.mma_splits;
    return ECO_OK;
}

eco_err cuda_fail(cudaError_t e, const char *what)
{
    return eco_fail(ECO_EDEVICE, "CUDA %s: %s", what, cudaGetErrorString(e));
}

// =22: the device ring the traced kernels write, named to them through g_rows_trace. One traced engine or linear
// at a time: the ring is the process's.
eco_err rows_trace_open(State *s)
{
    if (!s->rows_trace_path) return ECO_OK;
    cudaError_t ce = cudaMalloc(&s->rows_trace, (size_t)s->rows_trace_cap * sizeof *s->rows_trace);
    if (ce == cudaSuccess) ce = cudaMalloc(&s->rows_trace_next, sizeof(unsigned));
    if (ce == cudaSuccess) ce = cudaMemset(s->rows_trace_next, 0, sizeof(unsigned));
    RowsTraceRing ring = {s->rows_trace, s->rows_trace_next, (unsigned)s->rows_trace_cap};
    if (ce == cudaSuccess) ce = cudaMemcpyToSymbol(g_rows_trace, &ring, sizeof ring);
    return ce == cudaSuccess ? ECO_OK : cuda_fail(ce, "warp trace ring (ECO_CUDA_NF4_ROWS_TRACE)");
}

// Writes the ring's records, oldest first, to the trace file (eco/warp_trace.h) and frees it.
eco_err rows_trace_close(State *s)
{
    if (!s->rows_trace) {
        free(s->rows_trace_path);
        s->rows_trace_path = NULL;
        return ECO_OK;
    }
    const RowsTraceRing none = {NULL, NULL, 0};
    unsigned written = 0;
    size_t cap = (size_t)s->rows_trace_cap;
    eco_warp_trace_record *ring = (eco_warp_trace_record *)malloc(cap * sizeof *ring);
    eco_err e = ring ? ECO_OK : eco_fail(ECO_ENOMEM, "out of memory");
    cudaError_t ce = cudaDeviceSynchronize();
    if (ce == cudaSuccess) ce = cudaMemcpy(&written, s->rows_trace_next, sizeof written, cudaMemcpyDeviceToHost);
    if (ce == cudaSuccess && ring) ce = cudaMemcpy(ring, s->rows_trace, cap * sizeof *ring, cudaMemcpyDeviceToHost);
    if (ce == cudaSuccess) ce = cudaMemcpyToSymbol(g_rows_trace, &none, sizeof none);
    if (!e && ce != cudaSuccess) e = cuda_fail(ce, "warp trace ring (ECO_CUDA_NF4_ROWS_TRACE)");
    if (!e) {
        size_t n = written < cap ? written : cap, first = written < cap ? 0 : written % cap;
        eco_warp_trace_header h;
        memcpy(h.magic, ECO_WARP_TRACE_MAGIC, sizeof h.magic);
        h.version = ECO_WARP_TRACE_VERSION;
        h.record_bytes = sizeof(eco_warp_trace_record);
        h.records = n;
        h.written = written;
        FILE *f = fopen(s->rows_trace_path, "wb");
        bool ok = f && fwrite(&h, sizeof h, 1, f) == 1;
        // the ring from its oldest record: [first, n) then [0, first)
        ok = ok && fwrite(ring + first, sizeof *ring, n - first, f) == n - first && fwrite(ring, sizeof *ring, first, f) == first;
        if (f && fclose(f)) ok = false;
        if (!ok) e = eco_fail(ECO_EIO, "warp trace %s: cannot write it", s->rows_trace_path);
    }
    free(ring);
    cudaFree(s->rows_trace);
    cudaFree(s->rows_trace_next);
    s->rows_trace = NULL;
    s->rows_trace_next = NULL;
    free(s->rows_trace_path);
    s->rows_trace_path = NULL;
    return e;
}

#define CK(call)                                                   \
    do {                                                           \
        cudaError_t ck_ = (call);                                  \
        if (ck_ != cudaSuccess) return cuda_fail(ck_, #call);      \
    } while (0)

template <typename T> eco_err dalloc(State *s, T **p, size_t count)
{
    CK(cudaMalloc((void **)p, count * sizeof(T) + 16));
    s->resident += count * sizeof(T);
    return ECO_OK;
}

// cudaMemcpy from pageable host memory returns once the bytes are staged, before the DMA has landed, and it is
// ordered only with the legacy default stream: a kernel on s->stream (non-blocking) launched next may read the
// buffer's tail before it arrives. eco_cuda_qmatvec's fp16 linear of 202 x 2048 (827 KB), re-laid by
// tile_weights right after its upload, came out with its last rows wrong or zero, differently each run, on
// two H200s (data/h200/README.md, session 13). Every upload waits for its bytes before anything else runs; buffers
// zeroed for kernels are zeroed on s->stream itself (cudaMemsetAsync), which orders them without a wait.
eco_err uploads_landed(void)
{
    CK(cudaDeviceSynchronize());
    return ECO_OK;
}

template <typename T> eco_err upload(State *s, T **p, const void *host, size_t bytes)
{
    CK(cudaMalloc((void **)p, bytes + 16));
    CK(cudaMemcpy(*p, host, bytes, cudaMemcpyHostToDevice));
    s->resident += bytes;
    return uploads_landed();
}

size_t qweight_data_bytes(const eco_qweight *q)
{
    uint64_t n = q->rows * q->cols;
    switch (q->format) {
    case ECO_PREC_FP16: return n * 2;
    case ECO_PREC_NF4:
    case ECO_PREC_NF4_DQ: return (n + 1) / 2;
    default: return n;
    }
}

eco_err upload_qweight(State *s, const eco_qweight *q, Linear *out)
{
    memset(out, 0, sizeof *out);
    DeviceLinear &d = out->d;
    d.format = q->format;
    d.rows = (int)q->rows;
    d.cols = (int)q->cols;
    d.blocksize = q->blocksize;
    d.absmax_offset = q->absmax_offset;
    void *w;
    eco_err e = upload(s, (uint8_t **)&w, q->data, qweight_data_bytes(q));
    if (e) return e;
    d.w = w;
    out->buffers[out->n_buffers++] = w;
    if (q->row_scale) {
        float *p;
        if ((e = upload(s, &p, q->row_scale, q->rows * sizeof(float)))) return e;
        d.row_scale = p;
        out->buffers[out->n_buffers++] = p;
    }
    uint64_t blocks = q->blocksize ? (q->rows * q->cols + q->blocksize - 1) / q->blocksize : 0;
    if (q->absmax) {
        float *p;
        if ((e = upload(s, &p, q->absmax, blocks * sizeof(float)))) return e;
        d.absmax = p;
        out->buffers[out->n_buffers++] = p;
    }
    if (q->absmax_q) {
        uint8_t *p;
        float *qs;
        if ((e = upload(s, &p, q->absmax_q, blocks))) return e;
        d.absmax_q = p;
        out->buffers[out->n_buffers++] = p;
        if ((e = upload(s, &qs, q->absmax_q_scale, ((blocks + 255) / 256) * sizeof(float)))) return e;
        d.absmax_q_scale = qs;
        out->buffers[out->n_buffers++] = qs;
    }
    return ECO_OK;
}

// Loading: every format but nf4-dq is row-local (nf4 blocks never straddle rows for the shapes we accept),
// so a linear is quantized as row slices by a pool of threads, each uploading its slice straight to its
// place on the device. With the weights cache on, tensors are read in place (no serial copy of 30-60 GB).
struct Slice {
    const float *src;   // first row of the slice (fp32)
    uint64_t rows;
    uint64_t row0;      // first row within the stacked linear
};

struct SlicePool {
    eco_precision p;
    const eco_quant_options *o;
    uint64_t cols;
    uint8_t *d_w;
    float *d_row_scale, *d_absmax;
    Slice *slices;
    int n_slices;
    int next;           // taken under lock
    pthread_mutex_t lock;
    eco_err err;
    char msg[512];
};

void *slice_worker(void *arg)
{
    SlicePool *pool = (SlicePool *)arg;
    for (;;) {
        pthread_mutex_lock(&pool->lock);
        int i = pool->err ? pool->n_slices : pool->next++;
        pthread_mutex_unlock(&pool->lock);
        if (i >= pool->n_slices) return NULL;
        const Slice &sl = pool->slices[i];
        eco_qweight q;
        memset(&q, 0, sizeof q);
        eco_err e = eco_quantize(pool->p, sl.src, sl.rows, pool->cols, pool->o, &q);
        const char *why = e ? eco_last_error() : NULL;
        cudaError_t ce = cudaSuccess;
        if (!e) {
            eco_qweight before = q; // the rows ahead of this slice: their bytes are its offset
            before.rows = sl.row0;
            size_t off = qweight_data_bytes(&before);
            ce = cudaMemcpy(pool->d_w + off, q.data, qweight_data_bytes(&q), cudaMemcpyHostToDevice);
            if (ce == cudaSuccess && q.row_scale)
                ce = cudaMemcpy(pool->d_row_scale + sl.row0, q.row_scale, sl.rows * sizeof(float), cudaMemcpyHostToDevice);
            if (ce == cudaSuccess && q.absmax)
                ce = cudaMemcpy(pool->d_absmax + sl.row0 * pool->cols / (uint64_t)q.blocksize, q.absmax,
                                sl.rows * pool->cols / (uint64_t)q.blocksize * sizeof(float), cudaMemcpyHostToDevice);
            if (ce != cudaSuccess) { e = ECO_EDEVICE; why = cudaGetErrorString(ce); }
        }
        if (e) {
            pthread_mutex_lock(&pool->lock);
            if (!pool->err) {
                pool->err = e;
                snprintf(pool->msg, sizeof pool->msg, "%s", why ? why : "quantization failed");
            }
            pthread_mutex_unlock(&pool->lock);
        }
        eco_qweight_free(&q);
    }
}

int loader_threads(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > kLoadThreads ? kLoadThreads : (int)n;
}

eco_err check_shape(eco_precision p, const eco_quant_options *o, uint64_t cols, const char *what)
{
    if (cols % 32)
        return eco_fail(ECO_EUNSUPPORTED, "CUDA backend: %s has %llu input features, not a multiple of 32", what,
                        (unsigned long long)cols);
    if ((p == ECO_PREC_NF4 || p == ECO_PREC_NF4_DQ) && (cols % (uint64_t)o->nf4_blocksize || o->nf4_blocksize % 32))
        return eco_fail(ECO_EUNSUPPORTED, "CUDA backend: nf4 blocks of %d must divide %s's %llu columns and be a multiple of 32",
                        o->nf4_blocksize, what, (unsigned long long)cols);
    return ECO_OK;
}

// Tensors kinds[0..nk) of one layer, fetched as fp32 (borrowed from the cache when it is on).
struct Fetched {
    const float *t[3];
    float *owned[3];
    uint64_t rows[3], total_rows, cols;
};

void fetched_free(Fetched &f)
{
    for (int i = 0; i < 3; i++) free(f.owned[i]);
}

eco_err fetch(State *s, eco_weights *w, const eco_weight_kind *kinds, int nk, int layer, Fetched &f)
{
    memset(&f, 0, sizeof f);
    for (int i = 0; i < nk; i++) {
        uint64_t r, c, n;
        eco_weight_shape(&s->cfg, kinds[i], &r, &c);
        f.rows[i] = r;
        f.total_rows += r;
        f.cols = c;
        eco_err e;
        if (eco_weights_cached(w)) {
            e = eco_weights_borrow(w, kinds[i], layer, &f.t[i], &n);
        } else {
            e = eco_weights_get(w, kinds[i], layer, &f.owned[i], &n);
            f.t[i] = f.owned[i];
        }
        if (e) { fetched_free(f); return e; }
    }
    return ECO_OK;
}

// Stacks the rows of kinds[0..nk) of one layer into one linear, quantized in format p, on the device.
eco_err load_linear(State *s, eco_weights *w, const eco_weight_kind *kinds, int nk, int layer, eco_precision p, Linear *out)
{
    memset(out, 0, sizeof *out);
    Fetched f;
    eco_err e = fetch(s, w, kinds, nk, layer, f);
    if (e) return e;
    if ((e = check_shape(p, &s->opt.quant, f.cols, eco_weight_kind_name(kinds[0])))) { fetched_free(f); return e; }
    uint64_t rows = f.total_rows, cols = f.cols;
    if (p == ECO_PREC_NF4_DQ) {
        // Double quantization groups 256 absmax blocks across rows: quantize the stacked matrix as a whole.
        float *stack = (float *)malloc(rows * cols * sizeof(float));
        if (!stack) { fetched_free(f); return eco_fail(ECO_ENOMEM, "out of memory for layer %d %s", layer, eco_weight_kind_name(kinds[0])); }
        uint64_t off = 0;
        for (int i = 0; i < nk; i++) {
            memcpy(stack + off, f.t[i], f.rows[i] * cols * sizeof(float));
            off += f.rows[i] * cols;
        }
        fetched_free(f);
        eco_quant_options qo = s->opt.quant;
        qo.double_quant = true;
        eco_qweight q;
        memset(&q, 0, sizeof q);
        e = eco_quantize_threads(ECO_PREC_NF4_DQ, stack, rows, cols, &qo, loader_threads(), &q); // one thread: 121.6 s at 7B
        free(stack);
        if (!e) e = upload_qweight(s, &q, out);
        eco_qweight_free(&q);
        return e;
    }
    // Device buffers for the stacked linear, filled slice by slice.
    DeviceLinear &d = out->d;
    d.format = p;
    d.rows = (int)rows;
    d.cols = (int)cols;
    d.blocksize = s->opt.quant.nf4_blocksize;
    eco_qweight shape;
    memset(&shape, 0, sizeof shape);
    shape.format = p;
    shape.rows = rows;
    shape.cols = cols;
    uint8_t *dw = NULL;
    float *drs = NULL, *dam = NULL;
    if ((e = dalloc(s, &dw, qweight_data_bytes(&shape)))) { fetched_free(f); return e; }
    out->buffers[out->n_buffers++] = dw;
    d.w = dw;
    if (p == ECO_PREC_INT8 || p == ECO_PREC_INT8_MIXED || p == ECO_PREC_FP8) {
        if ((e = dalloc(s, &drs, rows))) { fetched_free(f); return e; }
        out->buffers[out->n_buffers++] = drs;
        d.row_scale = drs;
    }
    if (p == ECO_PREC_NF4) {
        if ((e = dalloc(s, &dam, rows * cols / (uint64_t)d.blocksize))) { fetched_free(f); return e; }
        out->buffers[out->n_buffers++] = dam;
        d.absmax = dam;
    }
    SlicePool pool;
    memset(&pool, 0, sizeof pool);
    pool.p = p;
    pool.o = &s->opt.quant;
    pool.cols = cols;
    pool.d_w = dw;
    pool.d_row_scale = drs;
    pool.d_absmax = dam;
    int threads = loader_threads();
    uint64_t per = (rows + (uint64_t)threads * 2 - 1) / ((uint64_t)threads * 2); // about two slices per thread
    if (per < 64) per = 64;
    int cap = nk * (int)((rows + per - 1) / per + 1);
    pool.slices = (Slice *)malloc((size_t)cap * sizeof(Slice));
    if (!pool.slices) { fetched_free(f); return eco_fail(ECO_ENOMEM, "out of memory"); }
    uint64_t row0 = 0;
    for (int i = 0; i < nk; i++) {
        for (uint64_t r = 0; r < f.rows[i]; r += per) {
            uint64_t cnt = f.rows[i] - r < per ? f.rows[i] - r : per;
            pool.slices[pool.n_slices++] = Slice{f.t[i] + r * cols, cnt, row0 + r};
        }
        row0 += f.rows[i];
    }
    pthread_mutex_init(&pool.lock, NULL);
    pthread_t th[kLoadThreads];
    int started = 0;
    for (int t = 0; t < threads && t < pool.n_slices; t++, started++)
        if (pthread_create(&th[t], NULL, slice_worker, &pool)) break;
    if (started == 0) slice_worker(&pool);
    for (int t = 0; t < started; t++) pthread_join(th[t], NULL);
    pthread_mutex_destroy(&pool.lock);
    free(pool.slices);
    fetched_free(f);
    if (pool.err) return eco_fail(pool.err, "layer %d %s (%s): %s", layer, eco_weight_kind_name(kinds[0]), eco_precision_name(p), pool.msg);
    return uploads_landed(); // the slices' copies, before a re-layout kernel reads them
}

eco_err load_vector(State *s, eco_weights *w, eco_weight_kind k, int layer, float **out)
{
    float *t;
    uint64_t n;
    eco_err e = eco_weights_get_fp16(w, k, layer, &t, &n); /* as the CPU reference holds it */
    if (e) return e;
    e = upload(s, out, t, n * sizeof(float));
    free(t);
    return e;
}

eco_err load_half_table(State *s, eco_weights *w, eco_weight_kind k, __half **out)
{
    float *t;
    uint64_t n;
    eco_err e = eco_weights_get_fp16(w, k, -1, &t, &n);
    if (e) return e;
    uint16_t *h = (uint16_t *)malloc(n * sizeof(uint16_t));
    if (!h) { free(t); return eco_fail(ECO_ENOMEM, "out of memory for %s", eco_weight_kind_name(k)); }
    for (uint64_t i = 0; i < n; i++) h[i] = eco_f32_to_f16(t[i]);
    free(t);
    e = upload(s, out, h, n * sizeof(uint16_t));
    free(h);
    return e;
}

// The nf4 codebook for the decoders: fp32 codes, the byte-pair table of fp16 codes, and nf4-dq's dynamic map.
eco_err upload_nf4_tables(void)
{
    unsigned pairs[256];
    for (int b = 0; b < 256; b++)
        pairs[b] = (unsigned)eco_f32_to_f16(eco_nf4_codebook[b >> 4]) | (unsigned)eco_f32_to_f16(eco_nf4_codebook[b & 15]) << 16;
    CK(cudaMemcpyToSymbol(c_nf4, eco_nf4_codebook, sizeof(float) * 16));
    CK(cudaMemcpyToSymbol(g_nf4_pairs, pairs, sizeof pairs));
    CK(cudaMemcpyToSymbol(c_dynamic_map, eco_dynamic_map8(), sizeof(float) * 256));
    return uploads_landed();
}

// ---- Launching ----

// Every kernel after the first of a token may start while its predecessor finishes (see cuda_kernels.cuh).
template <typename... Params, typename... Args>
eco_err launch(State *s, bool dependent, void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem, Args... args)
{
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid;
    cfg.blockDim = block;
    cfg.dynamicSmemBytes = smem;
    cfg.stream = s->stream;
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = attr;
    cfg.numAttrs = dependent && s->pdl ? 1 : 0;
    CK(cudaLaunchKernelEx(&cfg, kernel, args...));
    return ECO_OK;
}

using MatvecFn = void (*)(MatvecParams);

template <int K, bool DQ> MatvecFn pick_shape(int r, int u)
{
    switch (r * 10 + u) {
    case 11: return matvec<K, DQ, 1, 1>;
    case 12: return matvec<K, DQ, 1, 2>;
    case 14: return matvec<K, DQ, 1, 4>;
    case 21: return matvec<K, DQ, 2, 1>;
    case 22: return matvec<K, DQ, 2, 2>;
    case 24: return matvec<K, DQ, 2, 4>;
    case 41: return matvec<K, DQ, 4, 1>;
    case 42: return matvec<K, DQ, 4, 2>;
    case 81: return matvec<K, DQ, 8, 1>; // for nf4: x decoded once for 8 rows (R 1 -> 4 went 27% -> 40% of bandwidth)
    default: return NULL;
    }
}

// The per-lane-table nf4 decoder takes R rows per work item (at least the two of a paired epilogue; rows per
// warp 1 runs as 2) and one load per row in flight beside the one it decodes (the shape's U does not apply).
int lane_rows(int r) { return r <= 2 ? 2 : r <= 4 ? 4 : 8; }

template <bool DQ, int MinBlocks> MatvecFn pick_lanes_rows(int r)
{
    switch (lane_rows(r)) {
    case 2: return matvec_nf4_lanes<DQ, 2, MinBlocks>;
    case 4: return matvec_nf4_lanes<DQ, 4, MinBlocks>;
    default: return matvec_nf4_lanes<DQ, 8, MinBlocks>;
    }
}

// min_blocks: the kernel's register cap as blocks per SM (1: the compiler's choice), ECO_CUDA_NF4_OCC.
template <bool DQ> MatvecFn pick_lanes(int r, int min_blocks)
{
    return min_blocks >= 3 ? pick_lanes_rows<DQ, 3>(r) : min_blocks == 2 ? pick_lanes_rows<DQ, 2>(r) : pick_lanes_rows<DQ, 1>(r);
}

size_t lanes_smem_bytes(bool dq) { return kNf4TableBytes + (dq ? kNf4DmapBytes : 0); }

// The steps a linear on the row-per-lane decoder runs: =23 for down under ECO_CUDA_SWIGLU_ATOMIC, else the design's.
int rows_lean_of(const State *s, const DeviceLinear &d) { return d.rows_swiglu_x ? kNf4StepsSwigluX : s->nf4_rows_lean; }

// Its dynamic shared memory: the pair table (and nf4-dq's map), then x_chunks chunks of =23's x.
size_t rows_smem_bytes(bool dq, long x_chunks) { return lanes_smem_bytes(dq) + (size_t)x_chunks * kSwigluXChunkBytes; }

MatvecFn pick_matvec(int format, bool fp8_hw, bool nf4_lanes, int nf4_occ, int r, int u)
{
    switch (format) {
    case ECO_PREC_FP16: return pick_shape<W_F16, false>(r, u);
    case ECO_PREC_INT8: return pick_shape<W_I8, false>(r, u);
    case ECO_PREC_INT8_MIXED: return pick_shape<W_I8X, false>(r, u);
    case ECO_PREC_FP8: return fp8_hw ? pick_shape<W_FP8_HW, false>(r, u) : pick_shape<W_FP8, false>(r, u);
    case ECO_PREC_NF4: return !pick_shape<W_NF4, false>(r, u) ? NULL : nf4_lanes ? pick_lanes<false>(r, nf4_occ) : pick_shape<W_NF4, false>(r, u);
    case ECO_PREC_NF4_DQ: return !pick_shape<W_NF4, true>(r, u) ? NULL : nf4_lanes ? pick_lanes<true>(r, nf4_occ) : pick_shape<W_NF4, true>(r, u);
    default: return NULL;
    }
}

// Defaults per format, from bench_matvec on the H200 (data/h200/bench_matvec_*.txt). For experiments,
// ECO_CUDA_MATVEC_<FORMAT>="R,U,S" (FP16, INT8, INT8_MIXED, NF4, FP8) overrides one format and
// ECO_CUDA_MATVEC every format.
MatvecShape default_shape(int format)
{
    switch (format) {
    case ECO_PREC_FP16: return MatvecShape{4, 1, 4};
    case ECO_PREC_INT8:
    case ECO_PREC_INT8_MIXED: return MatvecShape{2, 1, 4};
    case ECO_PREC_NF4:
    case ECO_PREC_NF4_DQ: return MatvecShape{4, 1, 4};
    default: return MatvecShape{4, 1, 4}; // fp8, hardware conversion
    }
}

bool shape_valid(const MatvecShape &m)
{
    return pick_matvec(ECO_PREC_FP16, false, false, 1, m.rows_per_warp, m.unroll) && m.max_splits >= 1 && m.max_splits <= 16;
}

const char *shape_env_name(int format)
{
    switch (format) {
    case ECO_PREC_FP16: return "ECO_CUDA_MATVEC_FP16";
    case ECO_PREC_INT8: return "ECO_CUDA_MATVEC_INT8";
    case ECO_PREC_INT8_MIXED: return "ECO_CUDA_MATVEC_INT8_MIXED";
    case ECO_PREC_NF4:
    case ECO_PREC_NF4_DQ: return "ECO_CUDA_MATVEC_NF4";
    default: return "ECO_CUDA_MATVEC_FP8";
    }
}

eco_err shape_for(int format, MatvecShape *out)
{
    *out = default_shape(format);
    const char *name = getenv("ECO_CUDA_MATVEC") ? "ECO_CUDA_MATVEC" : shape_env_name(format), *v = getenv(name);
    if (!v) return ECO_OK;
    MatvecShape m;
    if (sscanf(v, "%d,%d,%d", &m.rows_per_warp, &m.unroll, &m.max_splits) != 3 || !shape_valid(m))
        return eco_fail(ECO_EINVAL, "%s=\"%s\": want \"R,U,S\" with R,U in 11 12 14 21 22 24 41 42 81 and S 1..16", name, v);
    *out = m;
    return ECO_OK;
}

// A whole number in lo..hi from the environment, or `fallback` when unset; anything else is a clear error.
eco_err env_int(const char *name, int lo, int hi, int fallback, const char *what, int *out)
{
    *out = fallback;
    const char *v = getenv(name);
    if (!v || parse_int_in(v, lo, hi, out)) return ECO_OK;
    return eco_fail(ECO_EINVAL, "%s=\"%s\": want a whole number of %s, %d..%d", name, v, what, lo, hi);
}

// Attention blocks per head: at most about two blocks per SM over all heads, and fewer while a block would
// get under kAttnMinPositions positions (the merge then costs more than the split saves). For tests and
// A/Bs: ECO_CUDA_ATTN_SPLITS=N (1..64) fixes N blocks per head at any context (1: no merge), and
// ECO_CUDA_ATTN_MIN=P sets the positions per block.
constexpr int kAttnMaxSplits = 64, kAttnMinPositions = 64;

// The nf4 decoders' grids for tests and A/Bs: ECO_CUDA_NF4_BLOCKS (blocks; 0: what fits) and
// ECO_CUDA_NF4_MIN_STEPS (the row-per-lane decoder's least steps per warp).
// The size rule's two thresholds in 2^20 weights, moved for A/Bs by ECO_CUDA_NF4_LANES_MIN and
// ECO_CUDA_NF4_ROWS_MIN_RESIDUAL.
eco_err nf4_size_rule_env(int *lanes_m, int *residual_m)
{
    eco_err e = env_int("ECO_CUDA_NF4_LANES_MIN", 0, 1 << 20, (int)(kNf4LanesMinWeights >> 20), "2^20 weights", lanes_m);
    return e ? e : env_int("ECO_CUDA_NF4_ROWS_MIN_RESIDUAL", 0, 1 << 20, (int)(kNf4RowsMinResidual >> 20), "2^20 weights", residual_m);
}

// A shape "W,U,B" of kNf4RowsShapes (index in *out); false if it names none.
bool rows_shape_parse(int w, int u, int b, int *out)
{
    for (int i = 0; i < (int)std::size(kNf4RowsShapes); i++)
        if (kNf4RowsShapes[i].warps == w && kNf4RowsShapes[i].u == u && kNf4RowsShapes[i].per_sm == b) {
            *out = i;
            return true;
        }
    return false;
}

// The row-per-lane decoder's shape: kNf4RowsShapes[0] unless ECO_CUDA_NF4_ROWS_SHAPE="W,U,B" names another; and
// for A/Bs a second shape for its small linears, ECO_CUDA_NF4_ROWS_SMALL="W,U,B,M" (those of at most M * 2^20
// weights: o at 7B, down at 1.5B lost a little on the 16-warp default, data/h200/README.md session 13).
eco_err rows_shape_env(int *shape, int *small_shape, long *small_max)
{
    *shape = *small_shape = 0;
    *small_max = 0;
    const char *v = getenv("ECO_CUDA_NF4_ROWS_SHAPE"), *sm = getenv("ECO_CUDA_NF4_ROWS_SMALL");
    int w, u, b, m;
    char end;
    if (v && !(sscanf(v, "%d,%d,%d%c", &w, &u, &b, &end) == 3 && rows_shape_parse(w, u, b, shape)))
        return eco_fail(ECO_EINVAL, "ECO_CUDA_NF4_ROWS_SHAPE=\"%s\": want \"W,U,B\" (warps a block, chunks a step, blocks an SM): 16,1,2, 8,4,2 or 8,2,3 (four rows a lane, 8,1,2,4 and 8,1,3,4, were experiments, removed)", v);
    *small_shape = *shape;
    if (sm && !(sscanf(sm, "%d,%d,%d,%d%c", &w, &u, &b, &m, &end) == 4 && m >= 1 && m <= 4096 && rows_shape_parse(w, u, b, small_shape)))
        return eco_fail(ECO_EINVAL, "ECO_CUDA_NF4_ROWS_SMALL=\"%s\": want \"W,U,B,M\": a shape of ECO_CUDA_NF4_ROWS_SHAPE for linears of at most M (1..4096) x 2^20 weights", sm);
    if (sm) *small_max = (long)m << 20;
    return ECO_OK;
}

// Filled shares (nf4_rows_fill) for the residual linears of these roles, ECO_CUDA_NF4_FILL="ROLES[:K]" (roles as
// ECO_CUDA_MMA_ROLES names them; K blocks skewed, 0..4096); unset or "none": even shares. down is refused under
// ECO_CUDA_SWIGLU_ATOMIC=1, whose steps for it take even shares (matvec_nf4_rows), rather than run them silently.
eco_err nf4_fill_env(unsigned *roles, int *skew)
{
    *roles = 0;
    *skew = 0;
    const char *v = getenv("ECO_CUDA_NF4_FILL");
    if (!v || !strcmp(v, "none")) return ECO_OK;
    char buf[96];
    const char *colon = strchr(v, ':');
    size_t n = colon ? (size_t)(colon - v) : strlen(v);
    unsigned named = 0;
    int k = 0;
    if (n < sizeof buf) {
        memcpy(buf, v, n);
        buf[n] = 0;
        named = parse_mma_roles(buf);
    }
    // lm_head adds to nothing
    if (!named || named & kRoleLmHead || (colon && !parse_int_in(colon + 1, 0, 4096, &k)))
        return eco_fail(ECO_EINVAL, "ECO_CUDA_NF4_FILL=\"%s\": want \"none\" or roles (qkv,o,gate_up,down) and an optional \":K\", K blocks "
                        "skewed (0..4096)", v);
    if (named & kRoleDown && !env_is("ECO_CUDA_SWIGLU_ATOMIC", "0"))
        return eco_fail(ECO_EINVAL, "ECO_CUDA_NF4_FILL=\"%s\": down's steps under SwiGLU made by down (the default) take even shares; "
                        "name the other roles, or set ECO_CUDA_SWIGLU_ATOMIC=0", v);
    *roles = named;
    *skew = k;
    return ECO_OK;
}

eco_err nf4_grid_env(State *s)
{
    int lanes_m, residual_m;
    eco_err e = env_int("ECO_CUDA_NF4_BLOCKS", 1, 1 << 20, 0, "blocks", &s->nf4_max_blocks);
    if (!e) e = env_int("ECO_CUDA_NF4_MIN_STEPS", 1, 64, 1, "steps", &s->nf4_min_steps);
    if (!e) e = env_int("ECO_CUDA_NF4_PRELOAD", 1, 2, kNf4RowsPreload, "steps", &s->nf4_preload);
    if (!e) e = rows_shape_env(&s->rows_shape, &s->rows_small_shape, &s->rows_small_max);
    if (!e) e = nf4_fill_env(&s->nf4_fill_roles, &s->nf4_fill_skew);
    if (!e) e = nf4_size_rule_env(&lanes_m, &residual_m);
    if (!e) s->nf4_lanes_min = (long)lanes_m << 20, s->nf4_rows_min_residual = (long)residual_m << 20;
    return e;
}

eco_err attention_splits(int sm_count, int heads, int *splits, int *min_positions)
{
    int n = (2 * sm_count + heads - 1) / heads;
    n = n < 1 ? 1 : n > 32 ? 32 : n;
    bool fixed = getenv("ECO_CUDA_ATTN_SPLITS") != NULL;
    eco_err e = env_int("ECO_CUDA_ATTN_SPLITS", 1, kAttnMaxSplits, n, "blocks per head", splits);
    if (!e) e = env_int("ECO_CUDA_ATTN_MIN", 1, 1 << 20, fixed ? 1 : kAttnMinPositions, "positions per block", min_positions);
    return e;
}

// Column slices for a residual-add linear: enough warps to cover the chip about twice when the rows alone
// do not, each slice keeping at least 64 chunks per lane group.
int pick_splits(const State *s, int units, int chunks)
{
    if (s->force_splits) return s->force_splits;
    int want = (s->sm_count * 32 + units - 1) / units;
    int most = chunks / (kWarp * 2);
    if (want > s->shape.max_splits) want = s->shape.max_splits;
    if (want > most) want = most;
    return want < 1 ? 1 : want;
}

struct MatvecOut {
    int epilogue;
    bool x_quantized; // LLM.int8(): the norm that wrote x also quantized it (no quantize_activations)
    float *y;
    __half *act;
    const float *bias;
    __half *k_cache, *v_cache;
    const float *swiglu_sums; // down under ECO_CUDA_SWIGLU_ATOMIC: its x from these gate_up sums (x unused) ...
    float *zero;              // ... and the next layer's sums to zero
    int zero_n;
};

int elems_per_load(int format)
{
    switch (format) {
    case ECO_PREC_FP16: return 8;
    case ECO_PREC_NF4:
    case ECO_PREC_NF4_DQ: return 32;
    default: return 16;
    }
}

// Bytes of one weight row (the 8-bit formats one per weight; scales apart).
size_t weight_row_bytes(int format, int cols)
{
    return format == ECO_PREC_FP16 ? (size_t)cols * 2 : format == ECO_PREC_NF4 || format == ECO_PREC_NF4_DQ ? (size_t)cols / 2 : (size_t)cols;
}

// ---- The tensor-core matvec (cuda_mma.cuh) ----

using MmaFn = void (*)(MatvecParams, int);

template <int K, bool DQ> MmaFn mma_kernel(int rt) { return rt == 2 ? matvec_mma<K, DQ, 2> : matvec_mma<K, DQ, 1>; }

MmaFn pick_mma(int format, int rt)
{
    switch (format) {
    case ECO_PREC_FP16: return mma_kernel<W_F16, false>(rt);
    case ECO_PREC_INT8: return mma_kernel<W_I8, false>(rt);
    case ECO_PREC_INT8_MIXED: return mma_kernel<W_I8X, false>(rt);
    case ECO_PREC_NF4: return mma_kernel<W_NF4, false>(rt);
    case ECO_PREC_NF4_DQ: return mma_kernel<W_NF4, true>(rt);
    case ECO_PREC_FP8: return mma_kernel<W_FP8_HW, false>(rt);
    default: return NULL;
    }
}

int mma_weight_kind(int format)
{
    switch (format) {
    case ECO_PREC_FP16: return W_F16;
    case ECO_PREC_INT8: return W_I8;
    case ECO_PREC_INT8_MIXED: return W_I8X;
    case ECO_PREC_NF4:
    case ECO_PREC_NF4_DQ: return W_NF4;
    default: return W_FP8_HW;
    }
}

size_t mma_smem_bytes(int format)
{
    return format == ECO_PREC_NF4 ? kNf4TableBytes : format == ECO_PREC_NF4_DQ ? kNf4TableBytes + kNf4DmapBytes : 0;
}

// The nf4 kernels keep a 64 KB table in dynamic shared memory, beyond the default 48 KB: allowed outside any graph
// capture, before anything plans with their occupancy (resolve_modes for engines and rule queries, standalone_open).
MatvecFn pick_rows(bool dq, int blocksize, int shape, int lean);

eco_err allow_large_shared_memory(void)
{
    for (int occ = 1; occ <= 3; occ++)
        for (int r = 2; r <= 8; r *= 2) {
            CK(cudaFuncSetAttribute(pick_lanes<false>(r, occ), cudaFuncAttributeMaxDynamicSharedMemorySize, (int)lanes_smem_bytes(false)));
            CK(cudaFuncSetAttribute(pick_lanes<true>(r, occ), cudaFuncAttributeMaxDynamicSharedMemorySize, (int)lanes_smem_bytes(true)));
        }
    // nf4-dq's row decoder looks its table up at a fixed offset in the shared window (kNf4TableWindowOffset): the
    // system's reserved bytes and the kernel's static shared memory, which come before the table, must add up to it
    int device = 0, reserved = 0;
    CK(cudaGetDevice(&device));
    CK(cudaDeviceGetAttribute(&reserved, cudaDevAttrReservedSharedMemoryPerBlock, device));
    for (int dq = 0; dq < 2; dq++)
        for (int bs = 32; bs <= 128; bs *= 2)
            for (int shape = 0; shape < (int)std::size(kNf4RowsShapes); shape++)
                for (const RowsSteps &steps : kNf4RowsSteps) {
                    MatvecFn fn = pick_rows(dq, bs, shape, steps.lean);
                    long x_chunks = steps.swiglu_x ? (long)kNf4RowsShapes[shape].warps * kSwigluXMaxChunks : 0;
                    CK(cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)rows_smem_bytes(dq, x_chunks)));
                    if (!dq) continue;
                    cudaFuncAttributes attr;
                    CK(cudaFuncGetAttributes(&attr, fn));
                    if ((size_t)reserved + attr.sharedSizeBytes != kNf4TableWindowOffset)
                        return eco_fail(ECO_EUNSUPPORTED,
                                        "CUDA backend: this GPU puts nf4-dq's table at shared-window offset %zu (%d bytes reserved, "
                                        "%zu static); the kernels were built for %u",
                                        (size_t)reserved + attr.sharedSizeBytes, reserved, attr.sharedSizeBytes, kNf4TableWindowOffset);
                }
    for (int rt = 1; rt <= 2; rt++) {
        CK(cudaFuncSetAttribute(pick_mma(ECO_PREC_NF4, rt), cudaFuncAttributeMaxDynamicSharedMemorySize, (int)mma_smem_bytes(ECO_PREC_NF4)));
        CK(cudaFuncSetAttribute(pick_mma(ECO_PREC_NF4_DQ, rt), cudaFuncAttributeMaxDynamicSharedMemorySize,
                                (int)mma_smem_bytes(ECO_PREC_NF4_DQ)));
    }
    return ECO_OK;
}

// A linear takes the tensor-core path when its format is on it (fp8 with the hardware conversion only) and its
// columns are whole steps (4 lanes x 16 bytes per row); nf4 blocks are whole 32-column spans (checked on load).
bool mma_format_ok(const State *s, int format, int cols)
{
    if (!(s->mma & fmt_bit(format)) || (format == ECO_PREC_FP8 && !s->fp8_hw)) return false;
    return cols % mma_step_cols(mma_weight_kind(format)) == 0;
}

// The epilogue whose unit -> rows mapping a launch needs: residual add and plain stores share consecutive rows.
int tile_map_of(int epilogue) { return paired_epilogue(epilogue) ? epilogue : EP_STORE; }

// The unit -> rows mapping of a linear under `map` (as launch_matvec fills MatvecParams).
MatvecParams mapping_params(const State *s, const DeviceLinear &d, int map)
{
    MatvecParams p;
    memset(&p, 0, sizeof p);
    p.rows = d.rows;
    p.cols = d.cols;
    p.epilogue = map;
    p.pair_offset = d.rows / 2;
    p.heads = s->cfg.heads;
    p.kv_heads = s->cfg.kv_heads;
    p.head_dim = s->cfg.head_dim;
    return p;
}

// Bytes of a tiled linear: 8-unit tiles, rounded up to pairs (a warp may take two), of steps x 1 KB.
size_t tiled_bytes(const State *s, const DeviceLinear &d, int map, int *tiles, int *steps)
{
    MatvecParams p = mapping_params(s, d, map);
    *tiles = 2 * ((item_units(p, 2) + 15) / 16);
    *steps = d.cols / mma_step_cols(mma_weight_kind(d.format));
    return (size_t)*tiles * (size_t)*steps * kTileStepBytes;
}

// A linear's buffer `old` freed and replaced by `fresh` in its list (a re-layout's new copy of the weights or scales).
void replace_buffer(Linear &l, const void *old, void *fresh)
{
    for (int i = 0; i < l.n_buffers; i++)
        if (l.buffers[i] == old) {
            cudaFree(l.buffers[i]);
            l.buffers[i] = fresh;
        }
}

// Puts a row-major linear into the tiled order when its format takes the tensor-core matvec and the linear
// is big enough for it: 16-row tiles give a small linear too few warps (Qwen2.5-0.5B int8 ran 15% slower a
// token with every linear on it), so a linear whose tiles, split over up to 8 warps of >= 2 steps each, cannot
// give 8 warps per SM stays on the warp-per-row kernel (unless ECO_CUDA_MMA names the format: then all do).
// `map` is the epilogue mapping every later launch of it will use (checked in launch_matvec).
eco_err tile_linear(State *s, Linear &l, int map)
{
    DeviceLinear &d = l.d;
    if (!mma_format_ok(s, d.format, d.cols)) return ECO_OK;
    int tiles, steps;
    size_t bytes = tiled_bytes(s, d, map, &tiles, &steps);
    int warps_per_tile = steps / 2 < kMmaWarps ? (steps / 2 > 0 ? steps / 2 : 1) : kMmaWarps;
    if (!s->mma_any_size && (long)tiles * warps_per_tile < (long)s->sm_count * 8) return ECO_OK;
    uint8_t *tiled;
    eco_err e = dalloc(s, &tiled, bytes);
    if (e) return e;
    size_t row_bytes = weight_row_bytes(d.format, d.cols);
    tile_weights<<<1024, 256, 0, s->stream>>>((const uint8_t *)d.w, tiled, mapping_params(s, d, map), row_bytes, steps, tiles);
    CK(cudaGetLastError());
    CK(cudaStreamSynchronize(s->stream));
    replace_buffer(l, d.w, tiled);
    s->resident -= (size_t)d.rows * row_bytes;
    d.w = tiled;
    d.tiled = true;
    d.tile_map = map;
    return ECO_OK;
}

// ---- nf4, a row per lane (cuda_nf4_rows.cuh) ----

// Chunks of a step of u that share one absmax (blocks of 32 columns: none).
int rows_am_every(int blocksize, int u) { return blocksize / 32 < u ? blocksize / 32 : u; }

// am: chunks a step that share one absmax (rows_am_every, at most U).
template <int Warps, int U, int PerSm, int Lean> MatvecFn pick_rows_am(bool dq, int am)
{
    constexpr int A4 = U >= 4 ? 4 : U, A2 = U >= 2 ? 2 : U;
    if (dq) return am >= 4 ? matvec_nf4_rows<true, A4, Warps, U, PerSm, Lean>
                   : am >= 2 ? matvec_nf4_rows<true, A2, Warps, U, PerSm, Lean> : matvec_nf4_rows<true, 1, Warps, U, PerSm, Lean>;
    return am >= 4 ? matvec_nf4_rows<false, A4, Warps, U, PerSm, Lean>
           : am >= 2 ? matvec_nf4_rows<false, A2, Warps, U, PerSm, Lean> : matvec_nf4_rows<false, 1, Warps, U, PerSm, Lean>;
}

// The kernel for kNf4RowsShapes[shape], whose steps share 1, 2 or 4 absmax: one instantiation per entry of the
// table, so a shape added there needs nothing here.
template <int Lean, size_t... I> MatvecFn pick_rows_in(bool dq, int am, int shape, std::index_sequence<I...>)
{
    MatvecFn fn = nullptr;
    ((shape == (int)I ? (void)(fn = pick_rows_am<kNf4RowsShapes[I].warps, kNf4RowsShapes[I].u, kNf4RowsShapes[I].per_sm, Lean>(dq, am)) : (void)0), ...);
    return fn;
}

// The kernel of steps `lean`: one instantiation per entry of kNf4RowsSteps, so that table alone holds the variants
// the parser takes, the shared-memory loop covers and the kernels built.
template <size_t... I, size_t... V>
MatvecFn pick_rows_lean(bool dq, int am, int shape, int lean, std::index_sequence<I...> shapes, std::index_sequence<V...>)
{
    MatvecFn fn = nullptr;
    ((lean == kNf4RowsSteps[V].lean ? (void)(fn = pick_rows_in<kNf4RowsSteps[V].lean>(dq, am, shape, shapes)) : (void)0), ...);
    return fn;
}

// lean: 16 the pair sums (the default), 9 the lean steps with the scaled table two a loop, 5 those one a loop, 1 the lean
// steps, 0 the full steps
// (ECO_CUDA_NF4_ROWS_LEAN, kNf4RowsSteps): the same grid and register cap.
MatvecFn pick_rows(bool dq, int blocksize, int shape, int lean)
{
    int am = rows_am_every(blocksize, kNf4RowsShapes[shape].u);
    lean = nf4_rows_lean_for(lean, blocksize, kNf4RowsShapes[shape].u);
    return pick_rows_lean(dq, am, shape, lean, std::make_index_sequence<std::size(kNf4RowsShapes)>{},
                          std::make_index_sequence<std::size(kNf4RowsSteps)>{});
}

// *p holds at least `need` elements (*n of them now), zeroed when (re)allocated on `stream`, ahead of the kernels
// that read them there; what it held is not kept.
template <typename T> eco_err grow_zeroed(T **p, size_t *n, size_t need, cudaStream_t stream)
{
    if (need <= *n) return ECO_OK;
    cudaFree(*p);
    *p = NULL;
    *n = 0;
    CK(cudaMalloc((void **)p, need * sizeof(T)));
    CK(cudaMemsetAsync(*p, 0, need * sizeof(T), stream));
    *n = need;
    return ECO_OK;
}

// A linear's launch on the row-per-lane decoder, before it is put there: its shape, row groups and each warp's share.
struct RowsLaunch {
    int shape;
    long groups;
    RowsShare share;
    bool filled; // share: filled (nf4_rows_fill), not even
};

// A linear's shape on the decoder (by its size, ECO_CUDA_NF4_ROWS_SMALL), its row groups and each warp's share of the
// flat chunk order under epilogue mapping `map` (of d's format, blocksize, rows, cols and rows_swiglu_x only).
// residual_role: the role (MmaRole) of a linear launched with a residual add, for filled shares; 0 for the others.
eco_err nf4_rows_launch_of(const State *s, const DeviceLinear &d, int map, RowsLaunch *out, unsigned residual_role = 0)
{
    int shape = s->rows_small_max && (long)d.rows * d.cols <= s->rows_small_max ? s->rows_small_shape : s->rows_shape;
    const RowsShape &rs = kNf4RowsShapes[shape];
    bool dq = d.format == ECO_PREC_NF4_DQ;
    long groups = nf4_rows_groups(mapping_params(s, d, map), map, kNf4RowsR);
    int lean = nf4_rows_lean_for(rows_lean_of(s, d), d.blocksize, rs.u);
    if (d.rows_swiglu_x && lean != kNf4StepsSwigluX)
        return eco_fail(ECO_ESTATE, "CUDA backend: ECO_CUDA_SWIGLU_ATOMIC needs down's nf4 on the pair sums (blocks of >= 64 columns, "
                        "steps of one chunk); this one has blocks of %d and steps of %d", d.blocksize, rs.u);
    int per_sm = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, pick_rows(dq, d.blocksize, shape, rows_lean_of(s, d)), rs.warps * kWarp,
                                                     rows_smem_bytes(dq, d.rows_swiglu_x ? rs.warps * kSwigluXMaxChunks : 0)));
    long warps = (long)(s->nf4_max_blocks ? s->nf4_max_blocks : s->sm_count * (per_sm > 0 ? per_sm : 1)) * rs.warps;
    // the pair sums (kNf4StepsPairSums) take whole pairs of steps: each warp's share an even number
    long whole = kNf4RowsSteps[nf4_rows_steps_index(lean)].pair_sums ? 2 * rs.u : rs.u;
    RowsShare sh = nf4_rows_share(groups, d.cols / 32, warps, s->nf4_min_steps, rs.u, whole);
    bool filled = false;
    if (residual_role & s->nf4_fill_roles && !d.rows_swiglu_x) { // =23's steps take even shares (nf4_fill_env)
        RowsShare f;
        long skewed;
        filled = nf4_rows_fill(groups, d.cols / 32, warps / rs.warps, rs.warps, (long)s->nf4_min_steps * rs.u, whole, s->nf4_fill_skew, &f, &skewed);
        if (filled) sh = f;
    }
    if (d.rows_swiglu_x && sh.per > kSwigluXMaxChunks)
        return eco_fail(ECO_ESTATE, "CUDA backend: ECO_CUDA_SWIGLU_ATOMIC: down's warps would take %ld chunks of x each (at most %d fit "
                        "in shared memory)", sh.per, kSwigluXMaxChunks);
    *out = RowsLaunch{shape, groups, sh, filled};
    return ECO_OK;
}

// Puts a linear laid out for the row-per-lane decoder under epilogue mapping `map` on it, and plans its launch
// (nf4_rows_launch_of): every warp the GPU holds at once (or ECO_CUDA_NF4_BLOCKS blocks, for tests) takes an equal
// share of the flat chunk order, whole steps (or filled shares, for a residual role ECO_CUDA_NF4_FILL names);
// rows_slots is the most warps any row group is split between. The deposits and arrival counters are shared by
// every linear on the decoder (one runs at a time).
eco_err nf4_rows_plan(State *s, DeviceLinear &d, int map, unsigned residual_role = 0)
{
    d.nf4_rows = true;
    d.tile_map = map;
    RowsLaunch rl;
    eco_err e = nf4_rows_launch_of(s, d, map, &rl, residual_role);
    if (e) return e;
    const RowsShare &sh = rl.share;
    const int warps = kNf4RowsShapes[rl.shape].warps;
    d.rows_shape = rl.shape;
    d.rows_chunks_per_warp = (int)sh.per;
    d.rows_filled = rl.filled;
    d.rows_share_n1 = (int)sh.n1;
    d.rows_share_s2 = (int)sh.s2;
    d.rows_share_n2 = (int)sh.n2;
    d.rows_share_s3 = (int)sh.s3;
    d.rows_blocks = (int)((sh.used + warps - 1) / warps);
    d.rows_slots = sh.slots;
    size_t need = sh.slots > 1 ? (size_t)rl.groups * (size_t)sh.slots * kNf4RowsR * kWarp : 1;
    e = grow_zeroed(&s->rows_partials, &s->rows_partials_n, need, s->stream);
    return e ? e : grow_zeroed(&s->rows_arrivals, &s->rows_arrivals_n, (size_t)rl.groups, s->stream);
}

// A row-major nf4 linear's weights and scales (absmax, or nf4-dq's codes) replaced by copies in another order:
// `relayout(w, absmax, codes)` fills copies of wbytes bytes and `scales` entries on s->stream from l.d's buffers,
// which are replaced only after it ran and worked (and with them their share of the resident bytes).
template <typename Relayout> eco_err relayout_nf4(State *s, Linear &l, size_t wbytes, size_t scales, const char *what, Relayout relayout)
{
    DeviceLinear &d = l.d;
    bool dq = d.format == ECO_PREC_NF4_DQ;
    uint8_t *w = NULL, *codes = NULL;
    float *am = NULL;
    eco_err e = dalloc(s, &w, wbytes);
    if (!e) e = dq ? dalloc(s, &codes, scales) : dalloc(s, &am, scales);
    if (!e) {
        relayout(w, am, codes);
        cudaError_t ce = cudaGetLastError();
        if (ce == cudaSuccess) ce = cudaStreamSynchronize(s->stream);
        if (ce != cudaSuccess) e = cuda_fail(ce, what);
    }
    if (e) {
        cudaFree(w);
        cudaFree(codes);
        cudaFree(am);
        return e;
    }
    const void *old_scale = dq ? (const void *)d.absmax_q : (const void *)d.absmax;
    replace_buffer(l, d.w, w);
    replace_buffer(l, old_scale, dq ? (void *)codes : (void *)am);
    size_t old_blocks = (size_t)d.rows * (d.cols / d.blocksize);
    s->resident -= (size_t)d.rows * (d.cols / 2) + old_blocks * (dq ? 1 : sizeof(float));
    d.w = w;
    if (dq) d.absmax_q = codes;
    else d.absmax = am;
    return ECO_OK;
}

// The default rule (kNf4RowsMinTall, kNf4RowsMinResidual, kNf4RowsMinAspect): big linears that are tall, or
// whose output is a residual add (o, down: their split row groups add to y atomically, nothing waits for them).
bool nf4_rows_by_default(const State *s, long rows, long cols, bool residual)
{
    return (rows >= kNf4RowsMinAspect * cols && rows * cols >= kNf4RowsMinTall) || (residual && rows * cols >= s->nf4_rows_min_residual);
}

// Whether a linear of `format`, rows x cols goes a row per lane unless it is tiled for the tensor cores: nf4 with
// that decoder on, columns in whole steps (128), and every linear asked for or the default rule's size.
bool nf4_rows_takes(const State *s, int format, long rows, long cols, bool residual)
{
    bool nf4 = format == ECO_PREC_NF4 || format == ECO_PREC_NF4_DQ;
    return nf4 && s->nf4_rows && cols % (32 * kNf4RowsU) == 0 && (s->nf4_rows_any_size || nf4_rows_by_default(s, rows, cols, residual));
}

// kQkvAtomicAuto: the atomic qkv where it puts an nf4 qkv on the row-per-lane decoder (as a residual).
bool qkv_atomic_by_default(const State *s, int format)
{
    const eco_model_config &c = s->cfg;
    long rows = (long)(c.heads + 2 * c.kv_heads) * c.head_dim, cols = c.hidden;
    return !mma_format_ok(s, format, (int)cols) && nf4_rows_takes(s, format, rows, cols, true);
}

// The design's kQkvAtomicAuto made concrete for this model (s->cfg) at `format`.
void resolve_qkv_atomic(State *s, int format)
{
    if (s->qkv_atomic == kQkvAtomicAuto) s->qkv_atomic = qkv_atomic_by_default(s, format) ? kQkvAtomicAttention : kQkvAtomicOff;
}

// SwiGLU made by down (session 41; the default since session 46, ECO_CUDA_SWIGLU_ATOMIC=0 turns it off): gate_up's
// sums added atomically into zeroed memory like a residual, so no warp waits for a row group's last one (the H200 warp
// trace of Qwen2.5-7B nf4 had gate_up's last warps end 4.8 us after their last deposit, the median 1.3), and down
// makes its x = fp16(silu(gate) * up) from them once a warp (=23). Only where both are nf4 on the row-per-lane
// decoder (a row per lane as residuals) and not tiled; off for this model otherwise. Side by side on four H100 units
// (data/h200/README.md, sessions 41, 44, 45): Qwen2.5-7B nf4 x1.005-1.008, Llama-3.1-8B x1.018-1.029, 14B x1.009.
void resolve_swiglu_atomic(State *s, int format)
{
    const eco_model_config &c = s->cfg;
    long inter = c.intermediate, hidden = c.hidden;
    // (and two layers at least: a single layer's down would zero the sums it is reading, for the next token)
    s->swiglu_atomic = s->swiglu_atomic && c.layers >= 2 && !mma_format_ok(s, format, (int)hidden) && !mma_format_ok(s, format, (int)inter) &&
                       nf4_rows_takes(s, format, 2 * inter, hidden, true) && nf4_rows_takes(s, format, hidden, inter, true);
    if (!s->swiglu_atomic) return;
    // and down's share of x fits its shared memory (kSwigluXMaxChunks: Qwen2.5-72B's would not on 132 SMs)
    DeviceLinear down;
    memset(&down, 0, sizeof down);
    down.format = format;
    down.rows = (int)hidden;
    down.cols = (int)inter;
    down.blocksize = s->opt.quant.nf4_blocksize;
    down.rows_swiglu_x = true;
    RowsLaunch rl;
    s->swiglu_atomic = nf4_rows_launch_of(s, down, EP_STORE, &rl) == ECO_OK;
    // the probe's refusal (a share of x that does not fit, or blocks too small for =23's steps) only turns the mode
    // off: its message is no failure of this open, so none is left
    if (!s->swiglu_atomic) eco_clear_error();
}

// The per-model modes for `format`, as engine creation and the rule queries both resolve them. The decoders' large
// shared memory is allowed first (for the engine's launches too): resolve_swiglu_atomic plans down with the occupancy, which reads one block an SM for a
// kernel not yet allowed its shared memory. Before session 47 the engine resolved first, so a process's first engine
// and every rule query planned with half the warps (ECO_CUDA_NORM_X, an experiment then, came out off there and on in a
// later engine; SwiGLU made by down would have for a Qwen2.5-32B shape).
eco_err resolve_modes(State *s, int format)
{
    eco_err e = allow_large_shared_memory();
    if (e) return e;
    resolve_qkv_atomic(s, format);
    resolve_swiglu_atomic(s, format);
    return ECO_OK;
}

// Its buffers of gate_up sums: two taking turns by layer, a third for an odd count's last layer (down(l) zeroes layer
// l + 1's, mod layers).
int swiglu_buffers(const State *s) { return s->cfg.layers % 2 ? 3 : 2; }

// Layer l's gate_up sums under ECO_CUDA_SWIGLU_ATOMIC: never the buffer of the layer before or after (cyclically).
float *swiglu_buffer(const State *s, int l)
{
    int b = s->cfg.layers % 2 && l == s->cfg.layers - 1 ? 2 : l % 2;
    return s->swiglu_sums + (size_t)b * 2 * s->cfg.intermediate;
}

// Moves a row-major nf4 linear (weights, and absmax or its codes) into the row-per-lane order, for the
// epilogue mapping `map` every later launch of it will use (checked in launch_matvec; `residual_role`: the role of
// a linear launched with a residual add, 0 for the others). Not in reference-stack mode, not on the tensor-core
// path, and only for columns in whole steps (128).
eco_err interleave_nf4(State *s, Linear &l, int map, unsigned residual_role)
{
    DeviceLinear &d = l.d;
    if (d.tiled || !nf4_rows_takes(s, d.format, d.rows, d.cols, residual_role != 0)) return ECO_OK;
    MatvecParams p = mapping_params(s, d, map);
    int groups = nf4_rows_groups(p, map, kNf4RowsR);
    size_t slots = (size_t)kWarp * kNf4RowsR, wbytes = (size_t)groups * (d.cols / 32) * slots * 16;
    size_t blocks = (size_t)groups * (d.cols / d.blocksize) * slots;
    eco_err e = relayout_nf4(s, l, wbytes, blocks, "interleaving an nf4 linear", [&](uint8_t *w, float *am, uint8_t *codes) {
        interleave_nf4_rows<<<1024, 256, 0, s->stream>>>((const uint8_t *)d.w, w, d.absmax, am, d.absmax_q, codes, p, map, kNf4RowsR,
                                                         groups, d.blocksize);
    });
    return e ? e : nf4_rows_plan(s, d, map, residual_role);
}

// The nf4 lane decoder takes this (row-major) nf4 linear.
bool on_nf4_lanes(const State *s, const DeviceLinear &d)
{
    return s->nf4_lanes && (d.format == ECO_PREC_NF4 || d.format == ECO_PREC_NF4_DQ) &&
           (s->nf4_lanes_any_size || (long)d.rows * d.cols >= s->nf4_lanes_min);
}

// Experiment (ECO_CUDA_SWIGLU_ADJACENT=1, off by default): a row-major gate_up whose warps read gate row u and up
// row u + intermediate together stored as gate 0, up 0, gate 1, up 1, ..., so a warp's two rows are adjacent
// instead of intermediate x row bytes apart (112 MiB for Llama-3.1-8B fp16). The lead: Llama-3.1-8B's gate_up
// took 60.3 us in the token (session 11) against 53.8 us for a bare 28672 x 4096 matvec of consecutive rows
// (session 12). Timed in session 13 (fp16, default / pairs / default): Llama-3.1-8B 234.9 / 237.1 / 235.0 tok/s,
// Qwen2.5-7B 277.3 / 277.7 / 277.3; under 1%, below the unit-to-unit spread, and every energy row was measured
// without it, so it stays off. nf4 (absmax per block) is not reordered: at 7B and up its gate_up is interleaved
// a row per lane anyway.
eco_err interleave_pairs(State *s, Linear &l)
{
    DeviceLinear &d = l.d;
    if (d.tiled || d.nf4_rows || d.rows % 2 || d.format == ECO_PREC_NF4 || d.format == ECO_PREC_NF4_DQ) return ECO_OK;
    size_t rb = weight_row_bytes(d.format, d.cols), half = (size_t)d.rows / 2;
    uint8_t *w = NULL;
    float *scale = NULL;
    eco_err e = dalloc(s, &w, rb * (size_t)d.rows);
    if (!e && d.row_scale) e = dalloc(s, &scale, (size_t)d.rows);
    if (!e) {
        // each half (gate rows, then up rows) into every other row; the row scales alike
        const uint8_t *src = (const uint8_t *)d.w;
        cudaError_t ce = cudaSuccess;
        for (size_t h = 0; h < 2 && ce == cudaSuccess; h++) {
            ce = cudaMemcpy2DAsync(w + h * rb, 2 * rb, src + h * half * rb, rb, rb, half, cudaMemcpyDeviceToDevice, s->stream);
            if (ce == cudaSuccess && scale)
                ce = cudaMemcpy2DAsync(scale + h, 2 * sizeof(float), d.row_scale + h * half, sizeof(float), sizeof(float), half,
                                       cudaMemcpyDeviceToDevice, s->stream);
        }
        if (ce == cudaSuccess) ce = cudaStreamSynchronize(s->stream);
        if (ce != cudaSuccess) e = cuda_fail(ce, "storing a gate_up pair by pair");
    }
    if (e) {
        cudaFree(w);
        cudaFree(scale);
        return e;
    }
    replace_buffer(l, d.w, w);
    d.w = w;
    if (scale) {
        replace_buffer(l, d.row_scale, scale);
        d.row_scale = scale;
    }
    s->resident -= rb * (size_t)d.rows + (scale ? (size_t)d.rows * sizeof(float) : 0);
    d.pairs_adjacent = true;
    return ECO_OK;
}

// Whether a linear of this role may take the tensor-core matvec (its format and size decide the rest).
bool may_tile_role(const State *s, const Linear &l, unsigned role)
{
    unsigned roles = s->mma_roles & (l.d.format == ECO_PREC_FP16 && s->mma_fp16_auto ? kFp16AutoRoles : kMmaRolesAll);
    return (roles & role) != 0;
}

// A loaded linear into the order of the kernel that will run it: tensor-core tiles, nf4 rows per lane, or
// row-major as loaded (gate_up pair by pair under the experiment above). residual_role: for a linear whose output is
// added to y (o and down to the residual stream; qkv and gate_up summed atomically), its role (MmaRole); else 0.
// may_tile: false keeps it off the tensor-core matvec.
eco_err arrange_linear(State *s, Linear &l, int map, unsigned residual_role = 0, bool may_tile = true)
{
    eco_err e = may_tile ? tile_linear(s, l, map) : ECO_OK;
    if (!e && !l.d.tiled) e = interleave_nf4(s, l, map, residual_role);
    if (!e && map == EP_SWIGLU && s->swiglu_adjacent) e = interleave_pairs(s, l);
    return e;
}

// Shape: eco_mma_choose (mma_plan.h) over the occupancy of each row-tile count.
static_assert(kMmaWarps == ECO_MMA_PLAN_WARPS, "mma_plan.h plans the kernel's block of warps");

struct MmaShape {
    int rt, kw, splits;
    unsigned blocks;
};

eco_err mma_shape(const State *s, const DeviceLinear &d, const MatvecParams &p, MmaShape *out)
{
    eco_mma_problem q;
    memset(&q, 0, sizeof q);
    q.units = item_units(p, 2);
    q.steps = d.cols / mma_step_cols(mma_weight_kind(d.format));
    q.residual = p.epilogue == EP_ADD;
    q.sm_count = s->sm_count;
    q.no_rt2 = d.format == ECO_PREC_NF4_DQ;
    q.want_rt = s->mma_rt;
    q.want_kw = s->mma_kw;
    q.want_splits = s->force_splits ? s->force_splits : s->mma_splits;
    q.by_slots = s->mma_fill == kMmaFillSlots || (s->mma_fill == kMmaFillAuto && q.residual);
    for (int rt = 1; rt <= 2; rt++) {
        int per_sm = 0;
        CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, pick_mma(d.format, rt), kMmaWarps * kWarp, mma_smem_bytes(d.format)));
        q.per_sm[rt] = per_sm > 0 ? per_sm : 1;
    }
    eco_mma_plan m = eco_mma_choose(&q);
    *out = MmaShape{m.rt, m.kw, m.splits, m.blocks};
    return ECO_OK;
}

eco_err launch_matvec_mma(State *s, const DeviceLinear &d, MatvecParams p)
{
    MmaShape m;
    eco_err e = mma_shape(s, d, p, &m);
    if (e) return e;
    if (m.splits > 1) p.epilogue = EP_ATOMIC_ADD;
    p.splits = m.splits;
    return launch(s, true, pick_mma(d.format, m.rt), dim3(m.blocks), dim3(kMmaWarps * kWarp), mma_smem_bytes(d.format), p, m.kw);
}

eco_err launch_matvec(State *s, const Linear &l, const __half *x, const MatvecOut &out)
{
    const DeviceLinear &d = l.d;
    const eco_model_config &c = s->cfg;
    MatvecParams p;
    memset(&p, 0, sizeof p);
    p.w = (const uint8_t *)d.w;
    p.row_scale = d.row_scale;
    p.absmax = d.absmax;
    p.absmax_q = d.absmax_q;
    p.absmax_q_scale = d.absmax_q_scale;
    p.absmax_offset = d.absmax_offset;
    p.block_shift = d.blocksize > 0 ? __builtin_ctz((unsigned)d.blocksize) : 0;
    p.x = x;
    p.xq = s->xq;
    p.x_absmax = s->x_absmax;
    p.outliers = s->outliers;
    p.n_outliers = s->n_outliers;
    p.rows = d.rows;
    p.cols = d.cols;
    p.splits = 1;
    p.epilogue = out.epilogue;
    p.y = out.y;
    p.act = out.act;
    p.pair_offset = d.rows / 2;
    p.pairs_adjacent = d.pairs_adjacent;
    p.bias = out.bias;
    p.rope = s->rope;
    p.pos = s->d_pos;
    p.k_cache = out.k_cache;
    p.v_cache = out.v_cache;
    p.heads = c.heads;
    p.kv_heads = c.kv_heads;
    p.head_dim = c.head_dim;
    bool paired = paired_epilogue(out.epilogue);
    bool lanes = on_nf4_lanes(s, d);
    int r = lanes ? lane_rows(s->shape.rows_per_warp) : paired ? 2 : s->shape.rows_per_warp, u = s->shape.unroll;
    int units = lanes ? lane_items(p, r) : item_units(p, r);
    if (out.epilogue == EP_ADD) {
        p.splits = pick_splits(s, units, d.cols / elems_per_load(d.format));
        if (p.splits > 1) p.epilogue = EP_ATOMIC_ADD;
    }
    MatvecFn fn = pick_matvec(d.format, s->fp8_hw, lanes, s->nf4_occ, lanes ? s->shape.rows_per_warp : r, u);
    if (!fn) return eco_fail(ECO_EUNSUPPORTED, "CUDA backend: no matvec for format %d with %d rows per warp x %d loads", d.format, r, u);
    if (d.format == ECO_PREC_INT8_MIXED && !out.x_quantized) {
        eco_err e = launch(s, true, quantize_activations, dim3(1), dim3(1024), 0, x, d.cols, s->opt.quant.int8_threshold, s->xq,
                           s->x_absmax, s->outliers, s->n_outliers, kMaxOutliers);
        if (e) return e;
        if (s->reference_stack) {
            // bitsandbytes finds outlier columns with a data-dependent op that syncs with the host.
            int n_out;
            CK(cudaMemcpyAsync(&n_out, s->n_outliers, sizeof n_out, cudaMemcpyDeviceToHost, s->stream));
            CK(cudaStreamSynchronize(s->stream));
        }
    }
    if (d.tiled) {
        if (tile_map_of(out.epilogue) != d.tile_map)
            return eco_fail(ECO_ESTATE, "CUDA backend: a linear tiled for epilogue %d launched with epilogue %d", d.tile_map, out.epilogue);
        p.epilogue = out.epilogue;
        p.splits = 1;
        return launch_matvec_mma(s, d, p);
    }
    if (d.nf4_rows) { // the row-per-lane decoder, stream-K: a re-laid linear, each warp an equal share of its steps
        if (tile_map_of(out.epilogue) != d.tile_map)
            return eco_fail(ECO_ESTATE, "CUDA backend: an nf4 linear re-laid for epilogue %d launched with epilogue %d", d.tile_map,
                            out.epilogue);
        bool dq = d.format == ECO_PREC_NF4_DQ;
        p.epilogue = out.epilogue;
        p.splits = 1;
        if (d.rows_filled && out.epilogue != EP_ADD)
            return eco_fail(ECO_ESTATE, "CUDA backend: an nf4 linear planned on filled shares launched without a residual add");
        p.chunks_per_warp = d.rows_chunks_per_warp;
        p.share_n1 = d.rows_share_n1;
        p.share_s2 = d.rows_share_s2;
        p.share_n2 = d.rows_share_n2;
        p.share_s3 = d.rows_share_s3;
        p.slots = d.rows_slots;
        p.preload = s->nf4_preload;
        p.partials = s->rows_partials;
        p.arrivals = s->rows_arrivals;
        p.chunk_shift = __builtin_ctz((unsigned)(d.blocksize / 32));
        const RowsShape &rs = kNf4RowsShapes[d.rows_shape];
        if (d.rows_swiglu_x != (out.swiglu_sums != NULL))
            return eco_fail(ECO_ESTATE, "CUDA backend: down planned %s gate_up's sums launched %s them", d.rows_swiglu_x ? "on" : "without",
                            out.swiglu_sums ? "on" : "without");
        p.swiglu_sums = out.swiglu_sums;
        p.zero = out.zero;
        p.zero_n = out.zero_n;
        return launch(s, true, pick_rows(dq, d.blocksize, d.rows_shape, rows_lean_of(s, d)), dim3(d.rows_blocks), dim3(rs.warps * kWarp),
                      rows_smem_bytes(dq, d.rows_swiglu_x ? (long)rs.warps * d.rows_chunks_per_warp : 0), p);
    }
    if (lanes) { // blocks loop over work items: no more than fit at once, each filling its table once
        size_t smem = lanes_smem_bytes(d.format == ECO_PREC_NF4_DQ);
        unsigned blocks = (unsigned)(((long)units * p.splits + kNf4LaneWarps - 1) / kNf4LaneWarps);
        int per_sm = 0;
        CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, fn, kNf4LaneWarps * kWarp, smem));
        unsigned most = s->nf4_max_blocks ? (unsigned)s->nf4_max_blocks : (unsigned)(s->sm_count * (per_sm > 0 ? per_sm : 1));
        if (blocks > most) blocks = most;
        return launch(s, true, fn, dim3(blocks), dim3(kNf4LaneWarps * kWarp), smem, p);
    }
    size_t row_bytes = weight_row_bytes(d.format, d.cols);
    if (s->pdl && row_bytes * d.rows <= (size_t)s->l2_prefetch_bytes) p.l2_prefetch = (unsigned)row_bytes; // all of each row slice
    unsigned blocks = (unsigned)(((long)units * p.splits + kWarpsPerBlock - 1) / kWarpsPerBlock);
    return launch(s, true, fn, dim3(blocks), dim3(kWarpsPerBlock * kWarp), 0, p);
}

MatvecOut plain(int epilogue, float *y)
{
    MatvecOut o;
    memset(&o, 0, sizeof o);
    o.epilogue = epilogue;
    o.y = y;
    return o;
}

// The launches of one token. Token and position are read from device memory, so a captured graph replays.
// Fused: rmsnorm, qkv (+bias, RoPE, KV write), attention, o (+residual), rmsnorm, gate_up (+SwiGLU),
// down (+residual): 7 kernels a layer; with the atomic qkv, bias, RoPE and the KV write move into attention.
// Unfused (reference-stack mode): 9, as separate steps.
// zero: floats for the norm to zero after its wait (the qkv sums attention consumed), or NULL.
eco_err launch_norm(State *s, const float *weight, bool quantize, float *zero = NULL)
{
    const eco_model_config &c = s->cfg;
    int zero_n = zero ? (c.heads + 2 * c.kv_heads) * c.head_dim : 0;
    if (quantize)
        return launch(s, true, rmsnorm<true>, dim3(1), dim3(kNormThreads), 0, (const float *)s->x, weight, s->xn, c.hidden,
                      (float)c.rms_eps, s->opt.quant.int8_threshold, s->xq, s->x_absmax, s->outliers, s->n_outliers, kMaxOutliers,
                      zero, zero_n);
    return launch(s, true, rmsnorm<false>, dim3(1), dim3(kNormThreads), 0, (const float *)s->x, weight, s->xn, c.hidden,
                  (float)c.rms_eps, 0.f, (int8_t *)NULL, (float *)NULL, (int *)NULL, (int *)NULL, 0, zero, zero_n);
}

// Dims per lane: head_dim / 32 rounded up to 2, 4 or 8 (fewer registers and loads for the common 64 and 128).
// consume: from the raw atomic qkv sums (bias, RoPE and the KV write in the kernel: kQkvAtomicAttention).
eco_err launch_attention(State *s, const Layer &L, int window, bool consume)
{
    const eco_model_config &c = s->cfg;
    auto kernel = c.head_dim <= 2 * kWarp ? (consume ? attention<2, true> : attention<2, false>)
                : c.head_dim <= 4 * kWarp ? (consume ? attention<4, true> : attention<4, false>)
                                          : (consume ? attention<8, true> : attention<8, false>);
    AttnConsume cons = {(const float *)L.qkv_bias, (const float2 *)s->rope, L.k_cache, L.v_cache};
    return launch(s, true, kernel, dim3(c.heads, s->attn_splits), dim3(kAttnThreads), 0, (const float *)(consume ? s->qkv_raw : s->qkv),
                  (const __half *)L.k_cache, (const __half *)L.v_cache, (const int *)s->d_pos, s->attn_out, c.heads,
                  c.kv_heads, c.head_dim, window, s->attn_min_positions, s->attn_partial, s->attn_done, cons);
}

// qkv's bias, RoPE and KV write as a kernel of their own: in place on s->qkv (unfused), or from the atomic sums in
// s->qkv_raw, which it zeroes (consume: ECO_CUDA_QKV_ATOMIC).
eco_err launch_rope_kv(State *s, const Layer &L, bool consume)
{
    const eco_model_config &c = s->cfg;
    return launch(s, true, consume ? rope_kv<true> : rope_kv<false>, dim3(((c.heads + c.kv_heads) * c.head_dim / 2 + 255) / 256),
                  dim3(256), 0, consume ? s->qkv_raw : s->qkv, s->qkv, (const float *)L.qkv_bias, (const float2 *)s->rope,
                  (const int *)s->d_pos, L.k_cache, L.v_cache, c.heads, c.kv_heads, c.head_dim);
}

eco_err enqueue_token(State *s)
{
    const eco_model_config &c = s->cfg;
    int window = c.sliding_window; // 0: none (the config loader zeroes it where the family ignores it, as the CPU does)
    bool quantize_in_norm = s->i8x_norm && s->layers[0].qkv.d.format == ECO_PREC_INT8_MIXED;
    eco_err e;
    // Not a dependent launch: the token starts after the previous one has finished, which is what lets the
    // attention kernel read the KV cache's earlier rows and the position before its dependency wait.
    if ((e = launch(s, false, embed, dim3((c.hidden + 255) / 256), dim3(256), 0, (const __half *)s->embed,
                    (const int *)s->d_token, s->x, c.hidden)))
        return e;
    for (int l = 0; l < c.layers; l++) {
        Layer &L = s->layers[l];
        if ((e = launch_norm(s, L.attn_norm, quantize_in_norm))) return e;
        if (s->qkv_atomic) {
            // The sums as a residual add into zeroed memory (column slices and row groups split between warps add
            // atomically, nothing waits for a group's last warp); bias, RoPE and the KV write in attention, or apart.
            MatvecOut o = plain(EP_ADD, s->qkv_raw);
            o.x_quantized = quantize_in_norm;
            if ((e = launch_matvec(s, L.qkv, s->xn, o))) return e;
            if (s->qkv_atomic == kQkvAtomicApart && (e = launch_rope_kv(s, L, true))) return e;
        } else if (s->fused) {
            MatvecOut o = plain(EP_ROPE_KV, s->qkv);
            o.x_quantized = quantize_in_norm;
            o.bias = L.qkv_bias;
            o.k_cache = L.k_cache;
            o.v_cache = L.v_cache;
            if ((e = launch_matvec(s, L.qkv, s->xn, o))) return e;
        } else {
            MatvecOut o = plain(EP_STORE, s->qkv);
            o.x_quantized = quantize_in_norm;
            if ((e = launch_matvec(s, L.qkv, s->xn, o))) return e;
            if ((e = launch_rope_kv(s, L, false))) return e;
        }
        bool rope_in_attention = s->qkv_atomic == kQkvAtomicAttention;
        if ((e = launch_attention(s, L, window, rope_in_attention))) return e;
        if ((e = launch_matvec(s, L.o, s->attn_out, plain(EP_ADD, s->x)))) return e;
        if ((e = launch_norm(s, L.mlp_norm, quantize_in_norm, rope_in_attention ? s->qkv_raw : NULL))) return e;
        if (s->swiglu_atomic) {
            // the sums into zeroed memory; down makes SwiGLU from them and zeroes the next layer's
            float *sums = swiglu_buffer(s, l);
            if ((e = launch_matvec(s, L.gate_up, s->xn, plain(EP_ADD, sums)))) return e;
            MatvecOut o = plain(EP_ADD, s->x);
            o.swiglu_sums = sums;
            o.zero = swiglu_buffer(s, (l + 1) % c.layers);
            o.zero_n = 2 * c.intermediate;
            if ((e = launch_matvec(s, L.down, NULL, o))) return e;
            continue;
        }
        if (s->fused) {
            MatvecOut o = plain(EP_SWIGLU, NULL);
            o.x_quantized = quantize_in_norm;
            o.act = s->act;
            if ((e = launch_matvec(s, L.gate_up, s->xn, o))) return e;
        } else {
            MatvecOut o = plain(EP_STORE, s->gate_up);
            o.x_quantized = quantize_in_norm;
            if ((e = launch_matvec(s, L.gate_up, s->xn, o))) return e;
            if ((e = launch(s, true, swiglu, dim3((c.intermediate + 255) / 256), dim3(256), 0, (const float *)s->gate_up,
                            s->act, c.intermediate)))
                return e;
        }
        if ((e = launch_matvec(s, L.down, s->act, plain(EP_ADD, s->x)))) return e;
    }
    if ((e = launch_norm(s, s->final_norm, false))) return e;
    if ((e = launch_matvec(s, s->lm_head, s->xn, plain(EP_STORE, s->logits)))) return e;
    if ((e = launch(s, true, argmax_partial, dim3(s->argmax_parts), dim3(256), 0, (const float *)s->logits, c.vocab,
                    s->part_v, s->part_i)))
        return e;
    return launch(s, true, argmax_final, dim3(1), dim3(256), 0, (const float *)s->part_v, (const int *)s->part_i,
                  s->argmax_parts, s->d_next, s->d_token, s->d_pos, s->d_history);
}

eco_err replay_token(State *s);

eco_err run_token(State *s, int32_t token, int pos)
{
    if (token < 0 || token >= s->cfg.vocab)
        return eco_fail(ECO_EINVAL, "token %d is outside the vocabulary (0..%d)", token, s->cfg.vocab - 1);
    if (pos >= s->opt.max_seq) return eco_fail(ECO_ETOOBIG, "KV cache full (%d positions)", s->opt.max_seq);
    s->h_io[0] = token;
    s->h_io[1] = pos;
    CK(cudaMemcpyAsync(s->d_token, s->h_io, 2 * sizeof(int), cudaMemcpyHostToDevice, s->stream));
    return replay_token(s);
}

// One more token from the device's own token and position (the previous step's argmax advanced them).
eco_err replay_token(State *s)
{
    if (s->reference_stack) return enqueue_token(s);
    while (!s->graph_ready) {
        cudaGraph_t g = NULL;
        CK(cudaStreamBeginCapture(s->stream, cudaStreamCaptureModeThreadLocal));
        eco_err e = enqueue_token(s);
        cudaError_t ce = cudaStreamEndCapture(s->stream, &g);
        if (!e && ce == cudaSuccess) ce = cudaGraphInstantiate(&s->graph, g, 0);
        if (g) cudaGraphDestroy(g);
        if (!e && ce == cudaSuccess) {
            s->graph_ready = true;
        } else if (s->pdl) {
            // A driver without dependent-launch edges in graphs: same kernels, plain edges (slower, same numbers).
            (void)cudaGetLastError();
            fprintf(stderr, "eco: CUDA graph with programmatic dependent launch failed (%s); capturing without it\n",
                    e ? eco_last_error() : cudaGetErrorString(ce));
            s->pdl = false;
        } else {
            return e ? e : cuda_fail(ce, "capturing the token graph");
        }
    }
    CK(cudaGraphLaunch(s->graph, s->stream));
    return ECO_OK;
}

eco_err cuda_create(const eco_model_config *c, eco_weights *w, const eco_engine_options *o, void **state)
{
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0)
        return eco_fail(ECO_EDEVICE, "CUDA backend: no CUDA device is available");
    State *s = (State *)calloc(1, sizeof(State));
    if (!s) return eco_fail(ECO_ENOMEM, "out of memory");
    s->cfg = *c;
    s->opt = *o;
    eco_err e = apply_design(s, requested_design());
    if (e) return e;
    if (s->opt.max_seq <= 0) s->opt.max_seq = c->max_pos < 4096 ? c->max_pos : 4096;
    eco_precision p = o->precision;
    if (p == ECO_PREC_NF4 && o->quant.double_quant) p = ECO_PREC_NF4_DQ;
    *state = s;
    if (shape_for(p, &s->shape)) return ECO_EINVAL;
    if (c->head_dim > kAttnMaxHeadDim || c->heads % c->kv_heads)
        return eco_fail(ECO_EUNSUPPORTED, "CUDA backend: head_dim %d (at most %d) with %d heads over %d KV heads", c->head_dim,
                        kAttnMaxHeadDim, c->heads, c->kv_heads);
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    s->sm_count = prop.multiProcessorCount;
    if ((e = attention_splits(s->sm_count, c->heads, &s->attn_splits, &s->attn_min_positions))) return e;
    if ((e = nf4_grid_env(s))) return e;
    if ((e = resolve_modes(s, p))) return e;
    CK(cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking));
    if ((e = upload_nf4_tables())) return e;
    if ((e = rows_trace_open(s))) return e;
    s->layers = (Layer *)calloc((size_t)c->layers, sizeof(Layer));
    if (!s->layers) return eco_fail(ECO_ENOMEM, "out of memory");
    int kv_dim = c->kv_heads * c->head_dim, q_dim = c->heads * c->head_dim;
    const eco_weight_kind qkv[3] = {ECO_W_Q, ECO_W_K, ECO_W_V}, gate_up[2] = {ECO_W_GATE, ECO_W_UP};
    const eco_weight_kind o_kind = ECO_W_O, down_kind = ECO_W_DOWN;
    for (int l = 0; l < c->layers; l++) {
        Layer &L = s->layers[l];
        if ((e = load_linear(s, w, qkv, 3, l, p, &L.qkv)) || (e = arrange_linear(s, L.qkv, s->fused && !s->qkv_atomic ? EP_ROPE_KV : EP_STORE, s->qkv_atomic ? kRoleQkv : 0u, may_tile_role(s, L.qkv, kRoleQkv))))
            return e;
        if ((e = load_linear(s, w, &o_kind, 1, l, p, &L.o)) || (e = arrange_linear(s, L.o, EP_STORE, kRoleO, may_tile_role(s, L.o, kRoleO)))) return e;
        if ((e = load_linear(s, w, gate_up, 2, l, p, &L.gate_up)) ||
            (e = arrange_linear(s, L.gate_up, s->fused && !s->swiglu_atomic ? EP_SWIGLU : EP_STORE, s->swiglu_atomic ? kRoleGateUp : 0u, may_tile_role(s, L.gate_up, kRoleGateUp))))
            return e;
        if ((e = load_linear(s, w, &down_kind, 1, l, p, &L.down))) return e;
        L.down.d.rows_swiglu_x = s->swiglu_atomic;
        if ((e = arrange_linear(s, L.down, EP_STORE, kRoleDown, may_tile_role(s, L.down, kRoleDown)))) return e;
        if (s->swiglu_atomic && !(L.gate_up.d.nf4_rows && L.down.d.nf4_rows))
            return eco_fail(ECO_ESTATE, "CUDA backend: ECO_CUDA_SWIGLU_ATOMIC: layer %d's gate_up or down is not on the nf4 row decoder", l);
        if ((e = load_vector(s, w, ECO_W_ATTN_NORM, l, &L.attn_norm))) return e;
        if ((e = load_vector(s, w, ECO_W_MLP_NORM, l, &L.mlp_norm))) return e;
        if (c->qkv_bias) {
            float *bias = (float *)malloc((size_t)(q_dim + 2 * kv_dim) * sizeof(float));
            if (!bias) return eco_fail(ECO_ENOMEM, "out of memory");
            const eco_weight_kind bk[3] = {ECO_W_Q_BIAS, ECO_W_K_BIAS, ECO_W_V_BIAS};
            size_t off = 0;
            for (int i = 0; i < 3 && !e; i++) {
                float *t;
                uint64_t n;
                if (!(e = eco_weights_get_fp16(w, bk[i], l, &t, &n))) { /* as the CPU reference holds them */
                    memcpy(bias + off, t, n * sizeof(float));
                    off += n;
                    free(t);
                }
            }
            if (!e) e = upload(s, &L.qkv_bias, bias, off * sizeof(float));
            free(bias);
            if (e) return e;
        }
        if ((e = dalloc(s, &L.k_cache, (size_t)s->opt.max_seq * kv_dim))) return e;
        if ((e = dalloc(s, &L.v_cache, (size_t)s->opt.max_seq * kv_dim))) return e;
    }
    if ((e = load_half_table(s, w, ECO_W_EMBED, &s->embed))) return e;
    if ((e = load_vector(s, w, ECO_W_FINAL_NORM, -1, &s->final_norm))) return e;
    if (!o->quantize_lm_head && c->tie_embeddings) {
        s->lm_head_is_embed = true;
        s->lm_head.d.format = ECO_PREC_FP16;
        s->lm_head.d.rows = c->vocab;
        s->lm_head.d.cols = c->hidden;
        s->lm_head.d.w = s->embed;
    } else {
        const eco_weight_kind head = ECO_W_LM_HEAD;
        if ((e = load_linear(s, w, &head, 1, -1, o->quantize_lm_head ? p : ECO_PREC_FP16, &s->lm_head)) ||
            (e = arrange_linear(s, s->lm_head, EP_STORE, 0u, may_tile_role(s, s->lm_head, kRoleLmHead))))
            return e;
    }
    // RoPE angles in double, as the CPU reference computes them, once per position.
    int half = c->head_dim / 2;
    double *inv = (double *)malloc(sizeof(double) * (size_t)half);
    float2 *table = (float2 *)malloc(sizeof(float2) * (size_t)half * (size_t)s->opt.max_seq);
    if (!inv || !table) { free(inv); free(table); return eco_fail(ECO_ENOMEM, "out of memory"); }
    eco_rope_inv_freq(c, inv);
    for (int pos = 0; pos < s->opt.max_seq; pos++)
        for (int i = 0; i < half; i++) {
            double ang = (double)pos * inv[i];
            table[(size_t)pos * half + i] = make_float2((float)cos(ang), (float)sin(ang));
        }
    e = upload(s, &s->rope, table, sizeof(float2) * (size_t)half * (size_t)s->opt.max_seq);
    free(inv);
    free(table);
    if (e) return e;
    int widest = c->hidden > c->intermediate ? c->hidden : c->intermediate;
    if (q_dim > widest) widest = q_dim;
    if ((e = dalloc(s, &s->x, (size_t)c->hidden)) || (e = dalloc(s, &s->qkv, (size_t)(q_dim + 2 * kv_dim))) ||
        (e = dalloc(s, &s->gate_up, (size_t)2 * c->intermediate)) || (e = dalloc(s, &s->logits, (size_t)c->vocab)) ||
        (e = dalloc(s, &s->xn, (size_t)widest)) || (e = dalloc(s, &s->attn_out, (size_t)q_dim)) ||
        (e = dalloc(s, &s->act, (size_t)c->intermediate)) || (e = dalloc(s, &s->xq, (size_t)widest)) ||
        (e = dalloc(s, &s->x_absmax, 1)) || (e = dalloc(s, &s->outliers, kMaxOutliers)) ||
        (e = dalloc(s, &s->n_outliers, 1)) || (e = dalloc(s, &s->d_token, 3)) ||
        (e = dalloc(s, &s->d_history, (size_t)s->opt.max_seq)))
        return e;
    if (s->qkv_atomic) {
        if ((e = dalloc(s, &s->qkv_raw, (size_t)(q_dim + 2 * kv_dim)))) return e;
        CK(cudaMemsetAsync(s->qkv_raw, 0, sizeof(float) * (size_t)(q_dim + 2 * kv_dim), s->stream));
    }
    if (s->swiglu_atomic) {
        size_t n = (size_t)swiglu_buffers(s) * 2 * c->intermediate;
        if ((e = dalloc(s, &s->swiglu_sums, n))) return e;
        CK(cudaMemsetAsync(s->swiglu_sums, 0, sizeof(float) * n, s->stream));
    }
    s->argmax_parts = (c->vocab + 255) / 256 < 2 * s->sm_count ? (c->vocab + 255) / 256 : 2 * s->sm_count;
    if ((e = dalloc(s, &s->part_v, (size_t)s->argmax_parts)) || (e = dalloc(s, &s->part_i, (size_t)s->argmax_parts))) return e;
    s->d_pos = s->d_token + 1;
    s->d_next = s->d_token + 2;
    CK(cudaMallocHost((void **)&s->h_io, 4 * sizeof(int)));
    CK(cudaMallocHost((void **)&s->h_history, (size_t)s->opt.max_seq * sizeof(int)));
    CK(cudaMallocHost((void **)&s->h_logits, (size_t)c->vocab * sizeof(float)));
    if ((e = dalloc(s, &s->attn_partial, (size_t)c->heads * s->attn_splits * (c->head_dim + 2))) ||
        (e = dalloc(s, &s->attn_done, (size_t)c->heads)))
        return e;
    CK(cudaMemsetAsync(s->attn_done, 0, sizeof(int) * (size_t)c->heads, s->stream));
    CK(cudaStreamSynchronize(s->stream));
    return ECO_OK;
}

eco_err cuda_forward(void *state, int32_t token, int pos, float *logits)
{
    State *s = (State *)state;
    eco_err e = run_token(s, token, pos);
    if (e) return e;
    CK(cudaMemcpyAsync(s->h_logits, s->logits, (size_t)s->cfg.vocab * sizeof(float), cudaMemcpyDeviceToHost, s->stream));
    CK(cudaStreamSynchronize(s->stream));
    memcpy(logits, s->h_logits, (size_t)s->cfg.vocab * sizeof(float));
    return ECO_OK;
}

// The token the last replay's argmax chose, on the host (waits for the stream).
eco_err read_next(State *s, int32_t *next)
{
    CK(cudaMemcpyAsync(&s->h_io[2], s->d_next, sizeof(int), cudaMemcpyDeviceToHost, s->stream));
    CK(cudaStreamSynchronize(s->stream));
    *next = s->h_io[2];
    return ECO_OK;
}

// Greedy decoding of n tokens without the host between them: the token graph is replayed n times on the
// stream and only the history of produced tokens is copied back. (The reference stack, like HF generate,
// returns to the host every token, so that mode steps through the host.)
eco_err cuda_greedy_run(void *state, int32_t token, int pos, int n, int32_t *out)
{
    State *s = (State *)state;
    if (n <= 0) return ECO_OK;
    if (pos < 0 || pos + n > s->opt.max_seq)
        return eco_fail(ECO_ETOOBIG, "KV cache full: positions %d..%d asked, %d held", pos, pos + n - 1, s->opt.max_seq);
    eco_err e = run_token(s, token, pos);
    for (int i = 1; i < n && !e; i++) {
        if (s->reference_stack) {
            int32_t next = 0;
            if (!(e = read_next(s, &next))) e = run_token(s, next, pos + i);
        } else {
            e = replay_token(s);
        }
    }
    if (e) return e;
    CK(cudaMemcpyAsync(s->h_history, s->d_history + pos, (size_t)n * sizeof(int), cudaMemcpyDeviceToHost, s->stream));
    CK(cudaStreamSynchronize(s->stream));
    memcpy(out, s->h_history, (size_t)n * sizeof(int));
    return ECO_OK;
}

void cuda_reset(void *state) { (void)state; /* positions restart at 0 and overwrite the cache */ }

void free_linear(Linear &l)
{
    for (int i = 0; i < l.n_buffers; i++) cudaFree(l.buffers[i]);
}

void cuda_destroy(void *state)
{
    State *s = (State *)state;
    if (!s) return;
    if (s->stream) cudaStreamSynchronize(s->stream);
    if (rows_trace_close(s)) fprintf(stderr, "cuda backend: %s\n", eco_last_error()); // destroy has no error to return
    if (s->graph_ready) cudaGraphExecDestroy(s->graph);
    for (int l = 0; s->layers && l < s->cfg.layers; l++) {
        Layer &L = s->layers[l];
        free_linear(L.qkv);
        free_linear(L.o);
        free_linear(L.gate_up);
        free_linear(L.down);
        cudaFree(L.attn_norm);
        cudaFree(L.mlp_norm);
        cudaFree(L.qkv_bias);
        cudaFree(L.k_cache);
        cudaFree(L.v_cache);
    }
    free(s->layers);
    if (!s->lm_head_is_embed) free_linear(s->lm_head);
    void *bufs[] = {s->embed, s->final_norm, s->rope, s->x, s->qkv, s->qkv_raw, s->swiglu_sums, s->gate_up, s->logits, s->xn, s->attn_out,
                    s->act, s->xq, s->x_absmax, s->outliers, s->n_outliers, s->d_token, s->d_history, s->part_v, s->part_i,
                    s->attn_partial, s->attn_done, s->rows_partials, s->rows_arrivals};
    for (void *b : bufs) cudaFree(b);
    cudaFreeHost(s->h_io);
    cudaFreeHost(s->h_history);
    cudaFreeHost(s->h_logits);
    if (s->stream) cudaStreamDestroy(s->stream);
    free(s);
}

uint64_t cuda_resident_bytes(const void *state) { return ((const State *)state)->resident; }

} // namespace

extern "C" {

const eco_backend eco_backend_cuda = {"cuda", cuda_create, cuda_forward, cuda_reset, cuda_destroy, cuda_resident_bytes,
                                      eco_cuda_greedy_step, cuda_greedy_run};

static bool reference_stack_flag;
void eco_cuda_set_reference_stack(bool on) { reference_stack_flag = on; }
bool eco_cuda_reference_stack_requested(void) { return reference_stack_flag; }

eco_err eco_cuda_greedy_step(void *state, int32_t token, int pos, int32_t *next)
{
    State *s = (State *)state;
    eco_err e = run_token(s, token, pos);
    return e ? e : read_next(s, next);
}

eco_err eco_cuda_sync(void *state)
{
    CK(cudaStreamSynchronize(((State *)state)->stream));
    return ECO_OK;
}

eco_err eco_cuda_stream_bandwidth(double seconds, double *gb_per_s)
{
    size_t bytes = (size_t)8 << 30;
    uint4 *buf;
    unsigned *sink;
    CK(cudaMalloc((void **)&buf, bytes));
    CK(cudaMalloc((void **)&sink, sizeof(unsigned)));
    CK(cudaMemset(buf, 1, bytes));
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    unsigned grid = (unsigned)prop.multiProcessorCount * 8;
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    stream_read<<<grid, 512>>>(buf, bytes / 16, sink); // warm
    CK(cudaDeviceSynchronize());
    int reps = 0;
    float ms_total = 0;
    while (ms_total < seconds * 1000.0f) {
        CK(cudaEventRecord(a));
        stream_read<<<grid, 512>>>(buf, bytes / 16, sink);
        CK(cudaEventRecord(b));
        CK(cudaEventSynchronize(b));
        float ms;
        CK(cudaEventElapsedTime(&ms, a, b));
        ms_total += ms;
        reps++;
    }
    *gb_per_s = (double)bytes * reps / (ms_total / 1000.0) / 1e9;
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    cudaFree(buf);
    cudaFree(sink);
    return ECO_OK;
}

// A State for one linear outside an engine (bench_matvec, eco_cuda_qmatvec): the device's SM count, the
// codebooks, a stream, and the LLM.int8 scratch for inputs of up to `cols` features. standalone_close frees
// what it made, also after a failure part way.
eco_err standalone_open(State &s, size_t cols)
{
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    s.sm_count = prop.multiProcessorCount;
    eco_err e = upload_nf4_tables();
    if (!e) e = allow_large_shared_memory();
    if (e) return e;
    CK(cudaStreamCreateWithFlags(&s.stream, cudaStreamNonBlocking));
    if ((e = dalloc(&s, &s.xq, cols)) || (e = dalloc(&s, &s.x_absmax, 1)) || (e = dalloc(&s, &s.outliers, kMaxOutliers)) ||
        (e = dalloc(&s, &s.n_outliers, 1)))
        return e;
    return rows_trace_open(&s);
}

// Also writes =22's warp trace: its error, if any (the first of a failed call is kept).
eco_err standalone_close(State &s)
{
    eco_err e = rows_trace_close(&s);
    void *bufs[] = {s.xq, s.x_absmax, s.outliers, s.n_outliers, s.rows_partials, s.rows_arrivals};
    for (void *p : bufs) cudaFree(p);
    if (s.stream) cudaStreamDestroy(s.stream);
    return e;
}

// The best of 5 replays of a graph in ms, after warming it for >= 100 ms, not one replay: on the H200 the first
// shape a process timed after its setup read ~10% slow in all 5 replays whatever the shape (28672 x 3584 first:
// 85.9% of the bandwidth, 28672 x 4096 after it: 97.1%; session 12), as if the clocks were still coming up; with
// the warm-up, 97.3% first (session 13). The caller owns the graph and events (freed on any error).
static eco_err time_graph(cudaStream_t st, cudaGraphExec_t ge, cudaEvent_t a, cudaEvent_t b, float *best_ms)
{
    CK(cudaEventRecord(a, st));
    for (float warm_ms = 0.f; warm_ms < 100.f;) {
        CK(cudaGraphLaunch(ge, st));
        CK(cudaEventRecord(b, st));
        CK(cudaEventSynchronize(b));
        CK(cudaEventElapsedTime(&warm_ms, a, b));
    }
    float best = 1e30f;
    for (int rep = 0; rep < 5; rep++) {
        CK(cudaEventRecord(a, st));
        CK(cudaGraphLaunch(ge, st));
        CK(cudaEventRecord(b, st));
        CK(cudaEventSynchronize(b));
        float ms;
        CK(cudaEventElapsedTime(&ms, a, b));
        if (ms < best) best = ms;
    }
    CK(cudaGetLastError());
    *best_ms = best;
    return ECO_OK;
}

eco_err eco_cuda_matvec_bench(int precision, int rows, int cols, int rows_per_warp, int unroll, int splits, bool fp8_hw,
                              double *us_per_call, double *gb_per_s)
{
    MatvecShape m{rows_per_warp, unroll, splits};
    Design design = requested_design();
    if (!shape_valid(m) || !pick_matvec(precision, fp8_hw, design.nf4_lanes, design.nf4_occ ? design.nf4_occ : 1, rows_per_warp, unroll) || rows < 2 || rows % 2 || cols % 64)
        return eco_fail(ECO_EINVAL, "matvec bench: unsupported shape (format %d, %d x %d, R=%d U=%d S=%d)", precision, rows,
                        cols, rows_per_warp, unroll, splits);
    State s;
    memset(&s, 0, sizeof s);
    eco_err err = apply_design(&s, design);
    if (err) return err;
    s.reference_stack = false;
    s.pdl = true;
    s.fp8_hw = fp8_hw;
    s.shape = m;
    s.force_splits = splits;
    err = nf4_grid_env(&s);
    s.nf4_max_blocks = 0; // the bench times the grid that fits
    if (!err) err = standalone_open(s, (size_t)cols);
    if (err) {
        standalone_close(s);
        return err;
    }
    eco_qweight shape_q;
    memset(&shape_q, 0, sizeof shape_q);
    shape_q.format = (eco_precision)precision;
    shape_q.rows = (uint64_t)rows;
    shape_q.cols = (uint64_t)cols;
    // nf4 a row per lane: random bytes taken as already interleaved, rows padded to whole row groups
    bool nf4_rows = s.nf4_rows && (precision == ECO_PREC_NF4 || precision == ECO_PREC_NF4_DQ) && !mma_format_ok(&s, precision, cols) &&
                    cols % (32 * kNf4RowsU) == 0 && (s.nf4_rows_any_size || nf4_rows_by_default(&s, rows, cols, splits > 1));
    if (nf4_rows) shape_q.rows = (uint64_t)((rows + kWarp * kNf4RowsR - 1) / (kWarp * kNf4RowsR) * (kWarp * kNf4RowsR));
    size_t wbytes = qweight_data_bytes(&shape_q), blocks = (size_t)shape_q.rows * cols / 64;
    size_t scale_bytes = precision == ECO_PREC_NF4 ? blocks * 4
                       : precision == ECO_PREC_NF4_DQ ? blocks + (blocks / 256 + 1) * 4
                       : precision == ECO_PREC_FP16 ? 0 : (size_t)rows * 4;
    size_t per_copy = wbytes + scale_bytes;
    int copies = (int)((size_t)(1u << 30) / per_copy) + 1; // rotate through > 1 GiB: far beyond the 50 MB L2
    if (copies > 64) copies = 64;
    Linear lin[64];
    __half *x = NULL;
    float *y = NULL;
    for (int i = 0; i < copies && !err; i++) {
        memset(&lin[i], 0, sizeof lin[i]);
        DeviceLinear &d = lin[i].d;
        d.format = precision;
        d.rows = rows;
        d.cols = cols;
        d.blocksize = 64;
        // Random bytes: on the tensor-core path they are taken as already tiled (the order of noise is noise).
        size_t bytes = wbytes;
        if (mma_format_ok(&s, precision, cols)) {
            int tiles, steps;
            bytes = tiled_bytes(&s, d, EP_STORE, &tiles, &steps);
            d.tiled = true;
            d.tile_map = EP_STORE;
        }
        if (nf4_rows && (err = nf4_rows_plan(&s, d, EP_STORE))) break;
        uint8_t *w;
        if ((err = dalloc(&s, &w, bytes))) break;
        lin[i].buffers[lin[i].n_buffers++] = w;
        d.w = w;
        fill_random<<<1024, 256, 0, s.stream>>>(w, bytes, 0x1234u + (uint32_t)i);
        float *f;
        uint8_t *codes;
        if (precision == ECO_PREC_NF4 || precision == ECO_PREC_NF4_DQ) {
            if (precision == ECO_PREC_NF4) {
                if ((err = dalloc(&s, &f, blocks))) break;
                fill_float<<<256, 256, 0, s.stream>>>(f, blocks, 0.05f);
                d.absmax = f;
            } else {
                if ((err = dalloc(&s, &codes, blocks)) || (err = dalloc(&s, &f, blocks / 256 + 1))) break;
                fill_random<<<256, 256, 0, s.stream>>>(codes, blocks, 99u);
                fill_float<<<1, 256, 0, s.stream>>>(f, blocks / 256 + 1, 0.05f);
                d.absmax_q = codes;
                d.absmax_q_scale = f;
                lin[i].buffers[lin[i].n_buffers++] = codes;
            }
        } else {
            if ((err = dalloc(&s, &f, (size_t)rows))) break;
            fill_float<<<64, 256, 0, s.stream>>>(f, (size_t)rows, 0.01f);
            d.row_scale = f;
        }
        lin[i].buffers[lin[i].n_buffers++] = f;
    }
    if (!err && !(err = dalloc(&s, &x, (size_t)cols))) err = dalloc(&s, &y, (size_t)rows);
    cudaGraph_t g = NULL;
    cudaGraphExec_t ge = NULL;
    cudaEvent_t a = NULL, b = NULL;
    const int per_graph = copies < 16 ? 32 : 2 * copies;
    if (!err) {
        fill_half<<<64, 256, 0, s.stream>>>(x, (size_t)cols, 7u);
        cudaMemsetAsync(s.n_outliers, 0, sizeof(int), s.stream);
        fill_random<<<64, 256, 0, s.stream>>>((uint8_t *)s.xq, (size_t)cols, 5u);
        fill_float<<<1, 32, 0, s.stream>>>(s.x_absmax, 1, 3.f);
        if (cudaStreamSynchronize(s.stream) != cudaSuccess) err = eco_fail(ECO_EDEVICE, "matvec bench: fill failed");
    }
    if (!err) {
        cudaError_t ce = cudaStreamBeginCapture(s.stream, cudaStreamCaptureModeThreadLocal);
        if (ce != cudaSuccess) err = cuda_fail(ce, "cudaStreamBeginCapture");
        for (int i = 0; i < per_graph && !err; i++)
            err = launch_matvec(&s, lin[i % copies], x, plain(splits > 1 ? EP_ADD : EP_STORE, y));
        if (ce == cudaSuccess) {
            ce = cudaStreamEndCapture(s.stream, &g);
            if (!err && ce != cudaSuccess) err = cuda_fail(ce, "cudaStreamEndCapture");
        }
        if (!err && cudaGraphInstantiate(&ge, g, 0) != cudaSuccess) err = eco_fail(ECO_EDEVICE, "matvec bench: graph instantiate");
    }
    if (!err && (cudaEventCreate(&a) != cudaSuccess || cudaEventCreate(&b) != cudaSuccess))
        err = eco_fail(ECO_EDEVICE, "matvec bench: cudaEventCreate");
    float best_ms = 0.f;
    if (!err) err = time_graph(s.stream, ge, a, b, &best_ms);
    if (!err) {
        *us_per_call = best_ms * 1000.0 / per_graph;
        *gb_per_s = (double)per_copy / (*us_per_call * 1e-6) / 1e9;
    }
    if (a) cudaEventDestroy(a);
    if (b) cudaEventDestroy(b);
    if (ge) cudaGraphExecDestroy(ge);
    if (g) cudaGraphDestroy(g);
    for (int i = 0; i < copies; i++) free_linear(lin[i]);
    cudaFree(x);
    cudaFree(y);
    standalone_close(s);
    return err;
}

eco_err eco_cuda_qmatvec(const eco_qweight *q, const float *x, float *y)
{
    if (!q || !x || !y || q->rows < 1 || q->cols < 1 || q->rows > (1u << 24) || q->cols > (1u << 20))
        return eco_fail(ECO_EINVAL, "eco_cuda_qmatvec: no weight, input or output, or a shape out of range");
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0)
        return eco_fail(ECO_EDEVICE, "CUDA backend: no CUDA device is available");
    eco_quant_options qo;
    eco_quant_options_default(&qo);
    qo.nf4_blocksize = q->blocksize > 0 ? q->blocksize : qo.nf4_blocksize;
    eco_err e = check_shape(q->format, &qo, q->cols, "eco_cuda_qmatvec's weight");
    if (e) return e;
    State s;
    memset(&s, 0, sizeof s);
    if ((e = apply_design(&s, requested_design()))) return e;
    s.opt.quant = qo;
    s.opt.quant.int8_threshold = q->int8_threshold;
    if ((e = shape_for(q->format, &s.shape))) return e;
    if ((e = nf4_grid_env(&s))) return e;
    Linear lin;
    memset(&lin, 0, sizeof lin);
    uint16_t *xh = (uint16_t *)malloc(q->cols * sizeof(uint16_t));
    __half *dx = NULL;
    float *dy = NULL;
    e = standalone_open(s, q->cols);
    if (!e && !xh) e = eco_fail(ECO_ENOMEM, "out of memory");
    for (uint64_t i = 0; !e && i < q->cols; i++) xh[i] = eco_f32_to_f16(x[i]);
    if (!e) e = upload_qweight(&s, q, &lin);
    if (!e) e = arrange_linear(&s, lin, EP_STORE, kRoleDown); // a residual add, down's shares (ECO_CUDA_NF4_FILL)
    if (!e) e = upload(&s, (uint16_t **)&dx, xh, q->cols * sizeof(uint16_t));
    if (!e && !(e = dalloc(&s, &dy, q->rows))) {
        // A residual-add epilogue may split the columns: y starts at zero and gets W x added.
        cudaError_t ce = cudaMemsetAsync(dy, 0, q->rows * sizeof(float), s.stream);
        if (ce != cudaSuccess) e = cuda_fail(ce, "cudaMemsetAsync");
        if (!e) e = launch_matvec(&s, lin, dx, plain(EP_ADD, dy));
        if (!e && (ce = cudaMemcpyAsync(y, dy, q->rows * sizeof(float), cudaMemcpyDeviceToHost, s.stream)) == cudaSuccess)
            ce = cudaStreamSynchronize(s.stream);
        if (!e && ce != cudaSuccess) e = cuda_fail(ce, "eco_cuda_qmatvec");
    }
    free(xh);
    free_linear(lin);
    cudaFree(dx);
    cudaFree(dy);
    eco_err closed = standalone_close(s);
    return e ? e : closed;
}

static void free_rules_state(State *s)
{
    free(s->rows_trace_path);
    free(s);
}

// A State with only the design and grid settings the environment gives (no device memory, no model): the host side
// of the per-model rules. Free it with free_rules_state.
static eco_err rules_state(const eco_model_config *c, State **out)
{
    State *s = (State *)calloc(1, sizeof(State));
    if (!s) return eco_fail(ECO_ENOMEM, "out of memory");
    s->cfg = *c;
    eco_err e = apply_design(s, requested_design());
    if (!e) e = nf4_grid_env(s);
    if (e) {
        free_rules_state(s);
        return e;
    }
    *out = s;
    return ECO_OK;
}

eco_err eco_cuda_qkv_summing(const eco_model_config *c, eco_precision precision, int *atomic)
{
    State *s;
    eco_err e = rules_state(c, &s);
    if (e) return e;
    resolve_qkv_atomic(s, precision);
    *atomic = s->qkv_atomic;
    free_rules_state(s);
    return ECO_OK;
}

eco_err eco_cuda_swiglu_by_down(const eco_model_config *c, eco_precision precision, int nf4_blocksize, int *on)
{
    if ((precision == ECO_PREC_NF4 || precision == ECO_PREC_NF4_DQ) && (nf4_blocksize < 32 || nf4_blocksize % 32))
        return eco_fail(ECO_EINVAL, "nf4 blocksize %d: want a multiple of 32", nf4_blocksize);
    cudaDeviceProp prop;
    if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) return eco_fail(ECO_EUNSUPPORTED, "CUDA backend: no device");
    State *s;
    eco_err e = rules_state(c, &s);
    if (e) return e;
    s->opt.quant.nf4_blocksize = nf4_blocksize;
    s->sm_count = prop.multiProcessorCount;
    if (!(e = resolve_modes(s, precision))) *on = s->swiglu_atomic;
    free_rules_state(s);
    return e;
}

eco_err eco_cuda_nf4_rows_layout_check(int rows, int cols, int pairing, int head_dim, long warps, int min_steps)
{
    if (rows < 1 || cols < 32 * kNf4RowsU || cols % (32 * kNf4RowsU) || pairing < 0 || pairing > 2 || (pairing && rows % 2) ||
        (pairing == 2 && (head_dim < 2 || head_dim % 2 || rows % head_dim)) || warps < 1 || min_steps < 1)
        return eco_fail(ECO_EINVAL, "nf4 rows layout check: bad shape");
    const int R = kNf4RowsR, per_group = kWarp * R, map = pairing == 1 ? EP_SWIGLU : pairing == 2 ? EP_ROPE_KV : EP_STORE;
    MatvecParams p;
    memset(&p, 0, sizeof p);
    p.rows = rows;
    p.cols = cols;
    p.pair_offset = rows / 2;
    p.head_dim = head_dim;
    int groups = nf4_rows_groups(p, map, R);
    unsigned char *seen = (unsigned char *)calloc((size_t)rows, 1);
    if (!seen) return eco_fail(ECO_ENOMEM, "out of memory");
    eco_err e = ECO_OK;
    for (int g = 0; g < groups && !e; g++)
        for (int j = 0; j < per_group && !e; j++) {
            int row = nf4_rows_slot_row(p, map, R, g, j);
            if (row < -1 || row >= rows) e = eco_fail(ECO_ESTATE, "group %d slot %d: row %d of %d", g, j, row, rows);
            else if (row >= 0 && seen[row]++) e = eco_fail(ECO_ESTATE, "row %d in two slots (group %d slot %d)", row, g, j);
            else if (map != EP_STORE && row >= 0 && j % kWarp < 16) {
                int other = nf4_rows_slot_row(p, map, R, g, j + 16);
                int want = map == EP_SWIGLU ? row + rows / 2 : row + head_dim / 2;
                if (other != want || (map == EP_ROPE_KV && row % head_dim >= head_dim / 2))
                    e = eco_fail(ECO_ESTATE, "group %d slot %d: row %d paired with %d, not %d", g, j, row, other, want);
            }
        }
    for (int r = 0; r < rows && !e; r++)
        if (!seen[r]) e = eco_fail(ECO_ESTATE, "row %d in no slot", r);
    free(seen);
    if (e) return e;
    long chunks = cols / 32, total = (long)groups * chunks;
    // steps of one, two and four chunks, and the pair sums' shares of two steps of one
    const long units[][2] = {{1, 1}, {1, 2}, {2, 2}, {kNf4RowsU, kNf4RowsU}};
    for (const auto &uw : units) {
        const long u = uw[0], whole = uw[1];
        RowsShare sh = nf4_rows_share(groups, chunks, warps, min_steps, u, whole);
        if (sh.per % whole || sh.per < (long)min_steps * u || sh.used > warps || (sh.used - 1) * sh.per >= total || sh.used * sh.per < total)
            return eco_fail(ECO_ESTATE, "steps of %ld in wholes of %ld: shares of %ld chunks over %ld of %ld warps for %ld chunks", u, whole,
                            sh.per, sh.used, warps, total);
        for (long g = 0; g < groups; g++) {
            long first, last, covering = 0;
            rows_group_warps(g, chunks, sh.per, &first, &last);
            for (long w = 0; w < sh.used; w++) // the warps whose share overlaps the group, counted directly
                covering += w * sh.per < (g + 1) * chunks && (w + 1) * sh.per > g * chunks;
            if (covering != last - first + 1 || covering > sh.slots || first > last)
                return eco_fail(ECO_ESTATE, "steps of %ld, group %ld: %ld warps overlap it, warps %ld..%ld by formula, %d slots", u, g,
                                covering, first, last, sh.slots);
        }
        // filled shares (residual linears): every block's warps a share of whole steps, larger ones first, the chunks
        // covered with less than one block's worth to spare; refused only where some warp would get less than the least
        const long skews[] = {0, 1, 5, 4096}, block_warps[] = {1, 16};
        for (long bw : block_warps)
            for (long skew : skews) {
                RowsShare f;
                long blocks = warps / bw > 0 ? warps / bw : 1, skewed = -1, least = ((long)min_steps * u + whole - 1) / whole * whole;
                if (least < whole) least = whole;
                if (!nf4_rows_fill(groups, chunks, blocks, bw, (long)min_steps * u, whole, skew, &f, &skewed)) {
                    if (total / (blocks * bw) >= least || skewed != 0)
                        return eco_fail(ECO_ESTATE, "filled shares refused for %ld chunks over %ld warps (least %ld)", total, blocks * bw, least);
                    continue;
                }
                const long sizes[3] = {f.per, f.s2, f.s3}, counts[3] = {f.n1, f.n2, blocks - f.n1 - f.n2};
                const long covered = rows_share_start(blocks, bw, f.per, f.n1, f.s2, f.n2, f.s3);
                bool bad = f.used != blocks * bw || f.n1 < 0 || f.n2 < 0 || counts[2] < 0 || skewed < 0 || skewed > skew || covered < total ||
                           covered - total > (bw - 1) * whole || f.per > f.s2 + whole || f.s2 < f.s3 ||
                           (skewed > 0 && (f.s3 != f.s2 - whole || counts[2] != skewed || f.n1 < skewed));
                for (int t = 0; t < 3 && !bad; t++)
                    bad = counts[t] > 0 && (sizes[t] % whole || sizes[t] < least || (t && sizes[t] > sizes[t - 1]));
                for (long b = 0; b < blocks && !bad; b++) // the starts run block by block, each block's warps its share apart
                    bad = rows_share_start(b + 1, bw, f.per, f.n1, f.s2, f.n2, f.s3) - rows_share_start(b, bw, f.per, f.n1, f.s2, f.n2, f.s3) !=
                          bw * rows_share_of(b, f.per, f.n1, f.s2, f.n2, f.s3);
                if (bad)
                    return eco_fail(ECO_ESTATE, "steps of %ld in wholes of %ld, %ld skewed of %ld: filled shares %ld x %ld, %ld x %ld, %ld x %ld "
                                    "blocks of %ld warps for %ld chunks", u, whole, skewed, skew, counts[0], sizes[0], counts[1], sizes[1], counts[2],
                                    sizes[2], bw, total);
            }
    }
    return ECO_OK;
}

eco_err eco_cuda_nf4_rows_fill_plan(int rows, int cols, int blocks, int skew, int *filled, long counts[3], long sizes[3])
{
    if (rows < 1 || cols < 32 * kNf4RowsU || cols % (32 * kNf4RowsU) || blocks < 1 || skew < 0 || !filled || !counts || !sizes)
        return eco_fail(ECO_EINVAL, "nf4 rows fill plan: bad shape");
    const RowsShape &rs = kNf4RowsShapes[0];
    MatvecParams p;
    memset(&p, 0, sizeof p);
    p.rows = rows;
    p.cols = cols;
    long groups = nf4_rows_groups(p, EP_STORE, kNf4RowsR), chunks = cols / 32, whole = 2 * rs.u, skewed;
    RowsShare f;
    *filled = nf4_rows_fill(groups, chunks, blocks, rs.warps, rs.u, whole, skew, &f, &skewed);
    if (!*filled) f = nf4_rows_share(groups, chunks, (long)blocks * rs.warps, 1, rs.u, whole), f.n1 = (f.used + rs.warps - 1) / rs.warps, f.n2 = 0;
    counts[0] = f.n1;
    counts[1] = f.n2;
    counts[2] = *filled ? blocks - f.n1 - f.n2 : 0;
    sizes[0] = f.per;
    sizes[1] = f.s2;
    sizes[2] = f.s3;
    return ECO_OK;
}

// The names of `roles` (MmaRole bits) in the engine's order after buf[at]: a space before the first, `sep` before
// each other. Returns the new length (at most cap - 1 written, as snprintf counts).
static size_t append_role_names(char *buf, size_t cap, size_t at, unsigned roles, char sep)
{
    bool first = true;
    for (const auto &r : kMmaRoleNames)
        if (roles & r.role && at < cap) {
            at += (size_t)snprintf(buf + at, cap - at, "%c%s", first ? ' ' : sep, r.name);
            first = false;
        }
    return at;
}

void eco_cuda_design(char *buf, size_t cap)
{
    Design d = requested_design();
    if (d.reference_stack) {
        snprintf(buf, cap, "reference-stack: launches one by one, host sync per LLM.int8() linear and per token, unfused");
        return;
    }
    char shapes[96] = "";
    const struct { int format; const char *tag; } f[] = {{ECO_PREC_FP16, "f16"}, {ECO_PREC_INT8, "i8"},
                                                          {ECO_PREC_INT8_MIXED, "i8x"}, {ECO_PREC_NF4, "nf4"}, {ECO_PREC_FP8, "fp8"}};
    size_t at = 0;
    for (const auto &x : f) {
        MatvecShape m;
        if (shape_for(x.format, &m)) m = default_shape(x.format);
        at += (size_t)snprintf(shapes + at, sizeof shapes - at, "%s%s %d.%d.%d", at ? " " : "", x.tag, m.rows_per_warp, m.unroll,
                               m.max_splits);
        if (at >= sizeof shapes) break;
    }
    const char *splits = getenv("ECO_CUDA_ATTN_SPLITS"), *min_positions = getenv("ECO_CUDA_ATTN_MIN");
    char attn[64], least[16];
    if (min_positions) snprintf(least, sizeof least, "%.8s", min_positions);
    else snprintf(least, sizeof least, "%d", splits ? 1 : kAttnMinPositions);
    snprintf(attn, sizeof attn, "split attention (%.8s%s, >= %s positions)", splits ? splits : "2/SM", splits ? "/head" : "", least);
    char nf4[512] = "fp32 table"; // the longest today is 410 characters (the LEAN=16 default); session 36's LEAN=20 name passed 478
    // the size rule's thresholds as set (a value that does not parse fails the engine, and shows as the default here)
    int lanes_m, residual_m;
    if (nf4_size_rule_env(&lanes_m, &residual_m)) lanes_m = (int)(kNf4LanesMinWeights >> 20), residual_m = (int)(kNf4RowsMinResidual >> 20);
    if (d.nf4_lanes && d.nf4_lanes_any_size)
        snprintf(nf4, sizeof nf4, "fp16 pairs from per-lane tables (%d blocks/SM) everywhere", d.nf4_occ);
    else if (d.nf4_lanes)
        snprintf(nf4, sizeof nf4, "fp16 pairs from per-lane tables (%d blocks/SM) for linears >= %dM weights, fp32 table below",
                 d.nf4_occ, lanes_m);
    if (d.nf4_rows) {
        char rest[sizeof nf4];
        memcpy(rest, nf4, sizeof rest);
        char rule[96];
        snprintf(rule, sizeof rule, "for tall (rows >= 4x columns, >= %ldM weights) and residual (>= %dM) linears", kNf4RowsMinTall >> 20,
                 residual_m);
        int si, ssi;
        long smax;
        if (rows_shape_env(&si, &ssi, &smax)) si = ssi = 0, smax = 0;
        const RowsShape &rs = kNf4RowsShapes[si], &ss = kNf4RowsShapes[ssi];
        char small[64] = "";
        if (smax) snprintf(small, sizeof small, "; <= %ldM weights %d x %d x %d", smax >> 20, ss.warps, ss.u, ss.per_sm);
        int preload;
        if (env_int("ECO_CUDA_NF4_PRELOAD", 1, 2, kNf4RowsPreload, "steps", &preload)) preload = kNf4RowsPreload;
        unsigned fill_roles;
        int skew;
        char fill[96] = "";
        if (!nf4_fill_env(&fill_roles, &skew) && fill_roles) { // ", shares filled for o,down (4 blocks skewed)"
            size_t at = append_role_names(fill, sizeof fill, (size_t)snprintf(fill, sizeof fill, ", shares filled for"), fill_roles, ',');
            if (skew && at < sizeof fill) snprintf(fill + at, sizeof fill - at, " (%d blocks skewed)", skew);
        }
        snprintf(nf4, sizeof nf4, "a row per lane (weights interleaved, register prefetch, %d steps before the wait, stream-K%s%s, %d warps x %d chunks x %d/SM%s) %s, else %.100s",
                 preload, fill, kNf4RowsSteps[nf4_rows_steps_index(d.nf4_rows_lean < 0 ? kNf4RowsLeanDefault : d.nf4_rows_lean)].name, rs.warps, rs.u, rs.per_sm, small, d.nf4_rows_any_size ? "everywhere" : rule, rest);
    }
    char mma[192] = "";
    size_t m_at = 0;
    for (const auto &x : f)
        if (d.mma & fmt_bit(x.format))
            m_at += (size_t)snprintf(mma + m_at, m_at < sizeof mma ? sizeof mma - m_at : 0, "%s%s", m_at ? "," : "", x.tag);
    if (!m_at && !d.mma_fp16_auto) snprintf(mma, sizeof mma, "none");
    else if (!d.mma_any_size && m_at < sizeof mma) m_at += (size_t)snprintf(mma + m_at, sizeof mma - m_at, " (linears with >= 8 warps/SM)");
    if (d.mma_fp16_auto && m_at < sizeof mma) /* where the model's hidden size qualifies (mma_plan.h) */
        m_at += (size_t)snprintf(mma + m_at, sizeof mma - m_at, "%sf16 o/gate_up/down at hidden %% 4096 = 0", m_at ? " + " : "");
    if ((d.mma || d.mma_fp16_auto) && d.mma_roles != kMmaRolesAll && m_at < sizeof mma) {
        m_at += (size_t)snprintf(mma + m_at, sizeof mma - m_at, ", only");
        m_at = append_role_names(mma, sizeof mma, m_at, d.mma_roles, ' ');
    }
    if ((d.mma || d.mma_fp16_auto) && m_at < sizeof mma)
        snprintf(mma + m_at, sizeof mma - m_at, d.mma_fill == kMmaFillSlots ? ", shaped by waves of slots" : d.mma_fill == kMmaFillSm ? ", shaped by the busiest SM (>= 2 waves)"
                                                                                                                    : ", shaped by the busiest SM (>= 2 waves; residual: waves)");
    snprintf(buf, cap, "graph%s, greedy loop on device, %s, %s, e4m3 %s, nf4 %s, LLM.int8 inputs quantized %s; tensor-core matvec: %s; "
             "matvec R.U.S %s; scalar matvecs <= %d MB prefetched into L2 before the wait%s%s%s",
             d.pdl ? "+PDL" : "", attn, d.fused ? "fused RoPE/SwiGLU" : "unfused",
             d.fp8_hw ? "cvt" : "bit-move",
             nf4, d.i8x_norm ? "in RMSNorm" : "apart", mma, shapes,
             d.pdl ? d.l2_prefetch_mb : 0,
             d.swiglu_adjacent ? "; row-major gate_up stored pair by pair" : "", d.qkv_atomic == kQkvAtomicApart       ? "; qkv summed by atomics, RoPE apart"
             : d.qkv_atomic == kQkvAtomicAttention ? "; qkv summed by atomics, RoPE in attention"
             : d.qkv_atomic == kQkvAtomicAuto      ? "; nf4 qkv a row per lane: summed by atomics, RoPE in attention"
                                                   : "",
             d.swiglu_atomic > 0 && d.fused ? "; where nf4 gate_up and down go a row per lane: gate_up summed by atomics, SwiGLU made by down" : "");
}

eco_err eco_cuda_device_name(char *buf, size_t cap)
{
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    int rt = 0;
    cudaRuntimeGetVersion(&rt);
    snprintf(buf, cap, "%s (sm_%d%d, %d SMs, CUDA runtime %d)", prop.name, prop.major, prop.minor,
             prop.multiProcessorCount, rt);
    return ECO_OK;
}

} // extern "C"
