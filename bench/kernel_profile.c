/* Where a decoded token's time goes on the GPU: every kernel of the CUDA backend's token graph, recorded
 * by CUPTI's activity API (device timestamps, graph replays included), grouped by its role in the token
 * (norm, qkv, attention, o, gate_up, down, lm_head, ...). With dependent launch kernels overlap, so
 * besides each role's summed duration it reports its share of the critical path: the time by which a
 * kernel's end extends past the end of everything before it. Those shares add up to the token's time.
 * A development tool, built only where CUPTI is installed (never by CI's tests).
 * With ECO_CUDA_NF4_ROWS_LEAN=22 and ECO_CUDA_NF4_ROWS_TRACE=FILE it also prints the nf4 row decoder's warp trace
 * (eco/warp_trace.h): when its warps were released, streamed and ended, per linear.
 * usage: kernel_profile [--models A,B] [--precisions fp16,...] [--tokens N] */
#include <cupti_activity.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eco/engine.h"
#include "eco/model.h"
#include "eco/warp_trace.h"
#include "model_sweep.h"

typedef struct {
    uint64_t start, end;
    const char *name; /* CUPTI-owned, valid until the buffer is freed: copied into role on arrival */
    char role[24];
} KernelSpan;

static KernelSpan *g_spans;
static size_t g_n, g_cap;

#define CUPTI_OK(call)                                                                  \
    do {                                                                                \
        CUptiResult r_ = (call);                                                        \
        if (r_ != CUPTI_SUCCESS) {                                                      \
            const char *m_ = "?";                                                       \
            cuptiGetResultString(r_, &m_);                                              \
            fprintf(stderr, "kernel_profile: %s: %s\n", #call, m_);                     \
            exit(1);                                                                    \
        }                                                                               \
    } while (0)

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
    *size = (size_t)8 << 20;
    *buffer = aligned_alloc(8, *size);
    *max_records = 0;
}

/* The kernel's family from its (mangled) name; matvecs get their role from their order in the token. */
static const char *family(const char *name)
{
    static const char *known[] = {"quantize_activations", "matvec", "rmsnorm", "attention", "embed", "argmax", "rope_kv", "swiglu"};
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (strstr(name, known[i])) return known[i];
    return "other";
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size, size_t valid)
{
    (void)ctx;
    (void)stream;
    (void)size;
    CUpti_Activity *rec = NULL;
    while (cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) {
        if (rec->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && rec->kind != CUPTI_ACTIVITY_KIND_KERNEL) continue;
        const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)rec;
        if (g_n == g_cap) {
            g_cap = g_cap ? 2 * g_cap : 65536;
            g_spans = realloc(g_spans, g_cap * sizeof *g_spans);
            if (!g_spans) { fprintf(stderr, "kernel_profile: out of memory\n"); exit(1); }
        }
        KernelSpan *s = &g_spans[g_n++];
        s->start = k->start;
        s->end = k->end;
        s->name = NULL;
        snprintf(s->role, sizeof s->role, "%s", family(k->name));
    }
    free(buffer);
}

static int by_start(const void *a, const void *b)
{
    const KernelSpan *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

#define MAX_ROLES 16
typedef struct {
    char name[24];
    double sum_us, critical_us;
    long count;
} Role;

static Role *role_of(Role *roles, int *n, const char *name)
{
    for (int i = 0; i < *n; i++)
        if (!strcmp(roles[i].name, name)) return &roles[i];
    if (*n == MAX_ROLES) return &roles[MAX_ROLES - 1];
    Role *r = &roles[(*n)++];
    memset(r, 0, sizeof *r);
    snprintf(r->name, sizeof r->name, "%s", name);
    return r;
}

/* Roles within one token: the i-th matvec of a layer is qkv, o, gate_up, down; the last one is lm_head. A
 * norm is named by the matvec after it (qkv: attn, gate_up: mlp, lm_head: final), so the names hold for a
 * design with fewer norm kernels than matvecs (the fused-norm build of session 11 had none before some). */
static void assign_roles(KernelSpan *s, size_t n, int layers)
{
    int mv = 0;
    static const char *mv_roles[] = {"qkv", "o", "gate_up", "down"};
    for (size_t i = 0; i < n; i++) {
        if (!strcmp(s[i].role, "embed")) { mv = 0; continue; }
        if (!strcmp(s[i].role, "matvec")) {
            snprintf(s[i].role, sizeof s[i].role, "%s", mv / 4 >= layers ? "lm_head" : mv_roles[mv % 4]);
            mv++;
        } else if (!strcmp(s[i].role, "rmsnorm")) {
            snprintf(s[i].role, sizeof s[i].role, "%s", mv / 4 >= layers ? "final_norm" : mv % 4 == 2 ? "mlp_norm" : "attn_norm");
        }
    }
}

/* The role of an nf4 linear of rows x cols in model c (the row decoder's SwiGLU linear counts both halves). */
static const char *linear_role(const eco_model_config *c, uint32_t rows, uint32_t cols, char *buf, size_t cap)
{
    uint32_t hidden = (uint32_t)c->hidden, q = (uint32_t)(c->heads * c->head_dim), inter = (uint32_t)c->intermediate;
    uint32_t qkv = (uint32_t)((c->heads + 2 * c->kv_heads) * c->head_dim);
    if (rows == qkv && cols == hidden) return "qkv";
    if (rows == hidden && cols == q) return "o";
    if (rows == 2 * inter && cols == hidden) return "gate_up";
    if (rows == hidden && cols == inter) return "down";
    snprintf(buf, cap, "%ux%u", rows, cols);
    return buf;
}

/* The warp trace the engine wrote as it closed (ECO_CUDA_NF4_ROWS_TRACE), summarized per linear. */
static void print_warp_trace(const eco_model_config *c, const char *path)
{
    eco_warp_trace_record *r;
    size_t n;
    eco_warp_trace_summary s;
    if (eco_warp_trace_read(path, &r, &n) || eco_warp_trace_summarize(r, n, &s)) {
        printf("  warp trace: %s\n", eco_last_error());
        return;
    }
    free(r);
    printf("  warp trace (%s): %zu warps of %zu launches; SM clock %.3f GHz; globaltimer step %.0f ns\n"
           "  us after each launch's release (its first warp past the dependency wait), averaged over launches;\n"
           "  stream: a warp's release to its last deposit; epilogue: to its end; SM end: its last warp's\n",
           path, s.records, s.launches, s.cycles_per_ns, s.timer_step_ns);
    printf("  %-8s %6s %6s %7s %13s %13s %13s %19s %13s\n", "linear", "launch", "warps", "entry", "release p50/mx",
           "stream p50/mx", "epilog p50/mx", "end p50/p90/max", "SM end min/50");
    for (int i = 0; i < s.n_linears; i++) {
        const eco_warp_trace_linear *l = &s.linears[i];
        char buf[32];
        printf("  %-8s %6d %6.0f %7.2f %6.2f %6.2f %6.2f %6.2f %6.2f %6.2f %6.2f %6.2f %6.2f %6.2f %6.2f\n",
               linear_role(c, l->rows, l->cols, buf, sizeof buf), l->launches, l->warps, l->entry_spread_us, l->release_p50_us,
               l->release_max_us, l->stream_p50_us, l->stream_max_us, l->epilogue_p50_us, l->epilogue_max_us, l->end_p50_us,
               l->end_p90_us, l->end_max_us, l->sm_end_min_us, l->sm_end_p50_us);
    }
    printf("  by quarter of the grid (warp index; blocks are dispatched in index order), medians after the release:\n"
           "  %-8s %28s %28s %28s\n", "linear", "entry q1/q2/q3/q4", "release q1/q2/q3/q4", "end q1/q2/q3/q4");
    for (int i = 0; i < s.n_linears; i++) {
        const eco_warp_trace_linear *l = &s.linears[i];
        char buf[32];
        printf("  %-8s", linear_role(c, l->rows, l->cols, buf, sizeof buf));
        const double *rows[3] = {l->quarter_entry_us, l->quarter_release_us, l->quarter_end_us};
        for (int k = 0; k < 3; k++) {
            printf(" ");
            for (int q = 0; q < 4; q++) {
                if (isnan(rows[k][q])) printf(" %6s", "-");
                else printf(" %6.2f", rows[k][q]);
            }
        }
        printf("\n");
    }
}

#define WARMUP_TOKENS 16 /* decoded untraced first: graph captured, clocks up */

struct profile_run {
    int prompt, tokens;
};

/* One model x precision: decode `tokens` tokens with tracing on and print the per-role table. */
static int profile_one(const eco_model_config *c, eco_weights *w, eco_precision p, const char *pname, void *ctx)
{
    const struct profile_run *run = ctx;
    int prompt = run->prompt, tokens = run->tokens;
    int most = tokens > WARMUP_TOKENS ? tokens : WARMUP_TOKENS;
    eco_engine_options o;
    eco_engine_options_default(&o);
    o.precision = p;
    o.max_seq = prompt + most + 8;
    eco_engine *e;
    if (eco_engine_create("cuda", w, &o, &e)) { printf("%s %s failed: %s\n", c->name, pname, eco_last_error()); return 0; }
    int32_t in[8] = {1, 2, 3, 4, 5, 6, 7, 8}, *out = malloc(sizeof(int32_t) * (size_t)most);
    eco_decode_timing t;
    eco_engine_generate(e, in, prompt, WARMUP_TOKENS, out, &t); /* graph built, clocks up: traced, then dropped */
    CUPTI_OK(cuptiActivityFlushAll(1));
    g_n = 0;
    eco_err err = eco_engine_generate(e, in, prompt, tokens, out, &t);
    CUPTI_OK(cuptiActivityFlushAll(1));
    free(out);
    eco_engine_free(e);
    if (err) { printf("%s %s failed: %s\n", c->name, pname, eco_last_error()); return 0; }
    qsort(g_spans, g_n, sizeof *g_spans, by_start);
    /* Decode tokens only: from the first embed after the prompt's. */
    size_t first = 0;
    int embeds = 0;
    for (size_t i = 0; i < g_n; i++)
        if (!strcmp(g_spans[i].role, "embed") && ++embeds == prompt + 1) first = i;
    if (embeds <= prompt) { printf("%s %s: %d token starts traced, too few\n", c->name, pname, embeds); return 0; }
    KernelSpan *s = g_spans + first;
    size_t n = g_n - first;
    assign_roles(s, n, c->layers);
    Role roles[MAX_ROLES];
    int nr = 0;
    uint64_t horizon = s[0].start;
    for (size_t i = 0; i < n; i++) {
        Role *r = role_of(roles, &nr, s[i].role);
        r->count++;
        r->sum_us += (double)(s[i].end - s[i].start) / 1e3;
        uint64_t from = s[i].start > horizon ? s[i].start : horizon;
        if (s[i].end > from) r->critical_us += (double)(s[i].end - from) / 1e3;
        if (s[i].end > horizon) horizon = s[i].end;
    }
    int decoded = embeds - prompt; /* tokens whose kernels were traced after the prompt */
    double wall_us = (double)(horizon - s[0].start) / 1e3 / decoded;
    double busy = 0;
    for (int i = 0; i < nr; i++) busy += roles[i].critical_us;
    printf("\n%s %s: %.1f us a token (%d tokens), kernels busy %.1f us, idle gaps %.1f us\n", c->name, pname, wall_us,
           decoded, busy / decoded, wall_us - busy / decoded);
    printf("  %-14s %8s %10s %10s %12s %7s\n", "role", "per tok", "us each", "sum us", "critical us", "share");
    for (int i = 0; i < nr; i++)
        printf("  %-14s %8.1f %10.2f %10.1f %12.1f %6.1f%%\n", roles[i].name, (double)roles[i].count / decoded,
               roles[i].sum_us / roles[i].count, roles[i].sum_us / decoded, roles[i].critical_us / decoded,
               100.0 * roles[i].critical_us / decoded / wall_us);
    const char *trace = getenv("ECO_CUDA_NF4_ROWS_TRACE");
    if (trace && *trace) print_warp_trace(c, trace);
    fflush(stdout);
    return 0;
}

int main(int argc, char **argv)
{
    const char *models = "Qwen2.5-7B", *precs = "fp16,int8,int8-mixed,nf4,fp8";
    int tokens = 64, prompt = 8;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--models") && i + 1 < argc) models = argv[++i];
        else if (!strcmp(argv[i], "--precisions") && i + 1 < argc) precs = argv[++i];
        else if (!strcmp(argv[i], "--tokens") && i + 1 < argc) tokens = atoi(argv[++i]);
        else { fprintf(stderr, "kernel_profile: unknown argument %s\n", argv[i]); return 2; }
    }
    if (tokens < 4) tokens = 4;
    CUPTI_OK(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed));
    /* On before any graph exists: kernels of graphs instantiated while tracing was off may go unrecorded. */
    CUPTI_OK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
    printf("per decoded token (batch 1, greedy, %d-token prompt, %d tokens traced after %d untraced); us = microseconds\n"
           "sum: the role's kernel durations added; critical: its share of the token's time (overlap removed)\n", prompt, tokens, WARMUP_TOKENS);
    struct profile_run run = {.prompt = prompt, .tokens = tokens};
    int rc = eco_model_sweep("kernel_profile", models, precs, profile_one, &run);
    CUPTI_OK(cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
    free(g_spans);
    return rc;
}
