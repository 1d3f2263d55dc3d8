/* The nf4 row decoder's warp trace: reading its file and summarizing it per linear (eco/warp_trace.h). */
#include "eco/warp_trace.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SM 1024                  /* an SM id past this is not a GPU's */
#define LAUNCH_GAP_NS 10000.0       /* releases further apart than this are two launches of one shape */
#define CLOCK_SPAN_NS 2000u          /* records this long at least tell the SM clock (globaltimer steps are coarse) */

eco_err eco_warp_trace_read(const char *path, eco_warp_trace_record **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return eco_fail(ECO_EIO, "warp trace %s: cannot open it", path);
    eco_warp_trace_header h;
    eco_err e = ECO_OK;
    if (fread(&h, sizeof h, 1, f) != 1 || memcmp(h.magic, ECO_WARP_TRACE_MAGIC, sizeof h.magic))
        e = eco_fail(ECO_EFORMAT, "warp trace %s: not a warp trace (no %s header)", path, ECO_WARP_TRACE_MAGIC);
    else if (h.version != ECO_WARP_TRACE_VERSION || h.record_bytes != sizeof(eco_warp_trace_record))
        e = eco_fail(ECO_EFORMAT, "warp trace %s: version %u with %u-byte records; this build reads version %u with %zu", path,
                     h.version, h.record_bytes, ECO_WARP_TRACE_VERSION, sizeof(eco_warp_trace_record));
    else if (h.records > h.written || h.records > (1ull << 26))
        e = eco_fail(ECO_EFORMAT, "warp trace %s: %llu records of %llu written is not a ring's content", path,
                     (unsigned long long)h.records, (unsigned long long)h.written);
    eco_warp_trace_record *r = NULL;
    if (!e && h.records && !(r = malloc((size_t)h.records * sizeof *r))) e = eco_fail(ECO_ENOMEM, "out of memory");
    size_t got = !e && h.records ? fread(r, sizeof *r, (size_t)h.records, f) : 0;
    if (!e && got != h.records)
        e = eco_fail(ECO_EFORMAT, "warp trace %s: cut short, %zu of its %llu records", path, got, (unsigned long long)h.records);
    else if (!e && fgetc(f) != EOF)
        e = eco_fail(ECO_EFORMAT, "warp trace %s: bytes after its %llu records", path, (unsigned long long)h.records);
    fclose(f);
    if (e) {
        free(r);
        return e;
    }
    *out = r;
    *n = (size_t)h.records;
    return ECO_OK;
}

static int by_entry(const void *a, const void *b)
{
    const eco_warp_trace_record *x = a, *y = b;
    if (x->ns_entry != y->ns_entry) return x->ns_entry < y->ns_entry ? -1 : 1;
    return x->warp < y->warp ? -1 : x->warp > y->warp;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The q-quantile (nearest rank) of v[0..n), which it sorts. */
static double quantile(double *v, size_t n, double q)
{
    qsort(v, n, sizeof *v, by_value);
    return v[(size_t)(q * (double)(n - 1) + 0.5)];
}

static eco_warp_trace_linear *linear_of(eco_warp_trace_summary *s, uint32_t rows, uint32_t cols)
{
    for (int i = 0; i < s->n_linears; i++)
        if (s->linears[i].rows == rows && s->linears[i].cols == cols) return &s->linears[i];
    if (s->n_linears == ECO_WARP_TRACE_MAX_LINEARS) return NULL;
    eco_warp_trace_linear *l = &s->linears[s->n_linears++];
    l->rows = rows;
    l->cols = cols;
    return l;
}

static eco_err check_records(const eco_warp_trace_record *r, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (r[i].ns_end < r[i].ns_entry || r[i].clk_released > r[i].clk_streamed || r[i].clk_streamed > r[i].clk_end)
            return eco_fail(ECO_EINVAL, "warp trace record %zu: its times run backwards", i);
        if (r[i].sm >= MAX_SM) return eco_fail(ECO_EINVAL, "warp trace record %zu: SM %u", i, r[i].sm);
    }
    return ECO_OK;
}

/* Median cycles a nanosecond over the records long enough for %globaltimer's steps not to matter. */
static eco_err sm_clock(const eco_warp_trace_record *r, size_t n, double *scratch, double *cycles_per_ns)
{
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (r[i].ns_end - r[i].ns_entry >= CLOCK_SPAN_NS) scratch[m++] = (double)r[i].clk_end / (double)(r[i].ns_end - r[i].ns_entry);
    if (!m) return eco_fail(ECO_EINVAL, "warp trace: no record spans %u ns, so the SM clock cannot be told", CLOCK_SPAN_NS);
    *cycles_per_ns = quantile(scratch, m, 0.5);
    return *cycles_per_ns > 0 ? ECO_OK : eco_fail(ECO_EINVAL, "warp trace: the records show no SM clock");
}

/* When record r's warp passed the dependency wait, in %globaltimer ns (its entry plus its cycles to then). */
static double release_ns(const eco_warp_trace_record *r, double cpn) { return (double)r->ns_entry + r->clk_released / cpn; }

/* One launch, records l[0..n): its figures added to `lin`. */
static void add_launch(const eco_warp_trace_record *l, size_t n, double cpn, double *scratch, double *sm_end, eco_warp_trace_linear *lin)
{
    double release = 1e300, *v = scratch;
    for (size_t i = 0; i < n; i++) {
        double at = release_ns(&l[i], cpn);
        if (at < release) release = at;
    }
    for (int s = 0; s < MAX_SM; s++) sm_end[s] = -1;
    lin->launches++;
    lin->warps += (double)n;
    lin->entry_spread_us += (double)(l[n - 1].ns_entry - l[0].ns_entry) / 1e3;
    for (size_t i = 0; i < n; i++) v[i] = (release_ns(&l[i], cpn) - release) / 1e3;
    lin->release_p50_us += quantile(v, n, 0.5);
    lin->release_max_us += v[n - 1];
    for (size_t i = 0; i < n; i++) v[i] = (double)(l[i].clk_streamed - l[i].clk_released) / cpn / 1e3;
    lin->stream_p50_us += quantile(v, n, 0.5);
    lin->stream_max_us += v[n - 1];
    for (size_t i = 0; i < n; i++) v[i] = (double)(l[i].clk_end - l[i].clk_streamed) / cpn / 1e3;
    lin->epilogue_p50_us += quantile(v, n, 0.5);
    lin->epilogue_max_us += v[n - 1];
    for (size_t i = 0; i < n; i++) {
        v[i] = ((double)l[i].ns_entry + l[i].clk_end / cpn - release) / 1e3;
        if (v[i] > sm_end[l[i].sm]) sm_end[l[i].sm] = v[i];
    }
    lin->end_p50_us += quantile(v, n, 0.5);
    lin->end_p90_us += quantile(v, n, 0.9);
    lin->end_max_us += v[n - 1];
    size_t sms = 0;
    for (int s = 0; s < MAX_SM; s++)
        if (sm_end[s] >= 0) v[sms++] = sm_end[s];
    lin->sm_end_min_us += quantile(v, sms, 0.0);
    lin->sm_end_p50_us += quantile(v, sms, 0.5);
    uint32_t top = 0;
    for (size_t i = 0; i < n; i++)
        if (l[i].warp > top) top = l[i].warp;
    for (int q = 0; q < 4; q++) {
        double *out[3] = {&lin->quarter_entry_us[q], &lin->quarter_release_us[q], &lin->quarter_end_us[q]};
        size_t m = 0;
        for (int k = 0; k < 3; k++) {
            m = 0;
            for (size_t i = 0; i < n; i++) {
                if ((uint64_t)l[i].warp * 4 / ((uint64_t)top + 1) != (uint64_t)q) continue;
                double at = k == 0 ? (double)l[i].ns_entry : k == 1 ? release_ns(&l[i], cpn) : (double)l[i].ns_entry + l[i].clk_end / cpn;
                v[m++] = (at - release) / 1e3;
            }
            if (m) *out[k] += quantile(v, m, 0.5);
        }
        if (m) lin->quarter_launches[q]++;
    }
}

/* A record's place in the grouping: its linear (in order of first entry) and its release in ns. */
typedef struct {
    int linear;
    double release_ns;
    size_t record;
} launch_key;

static int by_linear_then_release(const void *a, const void *b)
{
    const launch_key *x = a, *y = b;
    if (x->linear != y->linear) return x->linear < y->linear ? -1 : 1;
    if (x->release_ns != y->release_ns) return x->release_ns < y->release_ns ? -1 : 1;
    return x->record < y->record ? -1 : x->record > y->record;
}

/* Launches are told apart by release, not entry: under programmatic dependent launch a kernel's early blocks enter
 * while the one before it still runs and its later blocks as that one's leave, so a launch's entries can lie far
 * apart, but all its warps pass the dependency wait together. */
eco_err eco_warp_trace_summarize(const eco_warp_trace_record *r, size_t n, eco_warp_trace_summary *out)
{
    memset(out, 0, sizeof *out);
    if (!r || !n) return eco_fail(ECO_EINVAL, "warp trace: no records");
    eco_err e = check_records(r, n);
    if (e) return e;
    eco_warp_trace_record *sorted = malloc(n * sizeof *sorted), *launch = malloc(n * sizeof *launch);
    launch_key *keys = malloc(n * sizeof *keys);
    double *scratch = malloc(n * sizeof *scratch), *sm_end = malloc(MAX_SM * sizeof *sm_end);
    if (!sorted || !launch || !keys || !scratch || !sm_end) e = eco_fail(ECO_ENOMEM, "out of memory");
    if (!e) e = sm_clock(r, n, scratch, &out->cycles_per_ns);
    if (!e) {
        memcpy(sorted, r, n * sizeof *sorted);
        qsort(sorted, n, sizeof *sorted, by_entry);
        out->records = n;
        out->timer_step_ns = 0;
        for (size_t i = 1; i < n; i++) {
            uint64_t step = sorted[i].ns_entry - sorted[i - 1].ns_entry;
            if (step && (out->timer_step_ns == 0 || (double)step < out->timer_step_ns)) out->timer_step_ns = (double)step;
        }
    }
    for (size_t i = 0; !e && i < n; i++) {
        eco_warp_trace_linear *lin = linear_of(out, sorted[i].rows, sorted[i].cols);
        if (!lin) e = eco_fail(ECO_ETOOBIG, "warp trace: more than %d linear shapes", ECO_WARP_TRACE_MAX_LINEARS);
        else keys[i] = (launch_key){(int)(lin - out->linears), release_ns(&sorted[i], out->cycles_per_ns), i};
    }
    if (!e) qsort(keys, n, sizeof *keys, by_linear_then_release);
    for (size_t a = 0; !e && a < n;) {
        size_t b = a + 1;
        while (b < n && keys[b].linear == keys[a].linear && keys[b].release_ns - keys[b - 1].release_ns <= LAUNCH_GAP_NS) b++;
        for (size_t i = a; i < b; i++) launch[i - a] = sorted[keys[i].record];
        qsort(launch, b - a, sizeof *launch, by_entry);
        add_launch(launch, b - a, out->cycles_per_ns, scratch, sm_end, &out->linears[keys[a].linear]);
        out->launches++;
        a = b;
    }
    for (int i = 0; !e && i < out->n_linears; i++) {
        eco_warp_trace_linear *l = &out->linears[i];
        double k = 1.0 / l->launches;
        double *fields[] = {&l->warps, &l->entry_spread_us, &l->release_p50_us, &l->release_max_us, &l->stream_p50_us,
                            &l->stream_max_us, &l->epilogue_p50_us, &l->epilogue_max_us, &l->end_p50_us, &l->end_p90_us,
                            &l->end_max_us, &l->sm_end_min_us, &l->sm_end_p50_us};
        for (size_t f = 0; f < sizeof fields / sizeof fields[0]; f++) *fields[f] *= k;
        for (int q = 0; q < 4; q++) {
            double kq = l->quarter_launches[q] ? 1.0 / l->quarter_launches[q] : NAN;
            l->quarter_entry_us[q] *= kq;
            l->quarter_release_us[q] *= kq;
            l->quarter_end_us[q] *= kq;
        }
    }
    free(sorted);
    free(launch);
    free(keys);
    free(scratch);
    free(sm_end);
    if (e) memset(out, 0, sizeof *out);
    return e;
}
