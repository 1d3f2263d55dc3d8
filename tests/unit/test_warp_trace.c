/* The nf4 row decoder's warp trace (eco/warp_trace.h): the file reader's refusals and the per-linear summary of
 * records whose times are known, so every figure is checked against its hand-worked value. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "eco/warp_trace.h"

#define CPN 2.0 /* the SM clock of the made-up records: 2 cycles a ns */

/* A warp's record from absolute times in ns: entry, release, last deposit, end. */
static eco_warp_trace_record rec(uint32_t rows, uint32_t sm, uint32_t warp, uint64_t entry, uint64_t released, uint64_t streamed, uint64_t end)
{
    eco_warp_trace_record r = {0};
    r.ns_entry = entry;
    r.ns_end = end;
    r.clk_released = (uint32_t)(CPN * (double)(released - entry));
    r.clk_streamed = (uint32_t)(CPN * (double)(streamed - entry));
    r.clk_end = (uint32_t)(CPN * (double)(end - entry));
    r.sm = sm;
    r.warp = warp;
    r.chunks_per_warp = 16;
    r.rows = rows;
    r.cols = 64;
    return r;
}

/* Launch of shape `rows` at `t0`: four warps on SMs 0, 0, 1, 2 (worked values in test_summary). */
static size_t launch_a(eco_warp_trace_record *r, uint32_t rows, uint64_t t0)
{
    r[0] = rec(rows, 0, 0, t0 + 1000, t0 + 5000, t0 + 9000, t0 + 9500);
    r[1] = rec(rows, 0, 1, t0 + 1100, t0 + 5200, t0 + 9800, t0 + 10000);
    r[2] = rec(rows, 1, 16, t0 + 1200, t0 + 5100, t0 + 11000, t0 + 12000);
    r[3] = rec(rows, 2, 32, t0 + 1300, t0 + 5400, t0 + 9200, t0 + 9600);
    return 4;
}

static void near(double got, double want)
{
    if (fabs(got - want) > 1e-9) fail_msg("got %.12g, want %.12g", got, want);
}

static void test_summary(void **state)
{
    (void)state;
    eco_warp_trace_record r[10];
    size_t n = launch_a(r, 100, 0);
    r[n++] = rec(200, 3, 0, 50000, 53000, 56000, 57000); /* another shape between: its own launch */
    r[n++] = rec(200, 4, 16, 50050, 53500, 55000, 56500);
    n += launch_a(r + n, 100, 100000);
    /* stored out of order, as a ring of warps finishing at different times is */
    eco_warp_trace_record tmp = r[0];
    r[0] = r[9];
    r[9] = tmp;
    eco_warp_trace_summary s;
    assert_int_equal(eco_warp_trace_summarize(r, n, &s), ECO_OK);
    assert_int_equal(s.records, 10);
    assert_int_equal(s.launches, 3);
    near(s.cycles_per_ns, CPN);
    near(s.timer_step_ns, 50);
    assert_int_equal(s.n_linears, 2);
    const eco_warp_trace_linear *a = &s.linears[0], *b = &s.linears[1];
    assert_int_equal(a->rows, 100);
    assert_int_equal(a->launches, 2);
    near(a->warps, 4);
    near(a->entry_spread_us, 0.3);
    near(a->release_p50_us, 0.2); /* releases 0, 0.2, 0.1, 0.4 after the first */
    near(a->release_max_us, 0.4);
    near(a->stream_p50_us, 4.6); /* 4.0, 4.6, 5.9, 3.8 */
    near(a->stream_max_us, 5.9);
    near(a->epilogue_p50_us, 0.5); /* 0.5, 0.2, 1.0, 0.4 */
    near(a->epilogue_max_us, 1.0);
    near(a->end_p50_us, 5.0); /* ends 4.5, 5.0, 7.0, 4.6 after the release */
    near(a->end_p90_us, 7.0);
    near(a->end_max_us, 7.0);
    near(a->sm_end_min_us, 4.6); /* SM 0: 5.0, SM 1: 7.0, SM 2: 4.6 */
    near(a->sm_end_p50_us, 5.0);
    /* by quarter of the grid (warps 0, 1 | 16 | none | 32 of 0..32): medians, the upper of two */
    const double entry[4] = {-3.9, -3.8, NAN, -3.7}, release[4] = {0.2, 0.1, NAN, 0.4}, end[4] = {5.0, 7.0, NAN, 4.6};
    for (int q = 0; q < 4; q++) {
        if (isnan(entry[q])) {
            assert_int_equal(a->quarter_launches[q], 0);
            assert_true(isnan(a->quarter_entry_us[q]) && isnan(a->quarter_release_us[q]) && isnan(a->quarter_end_us[q]));
            continue;
        }
        assert_int_equal(a->quarter_launches[q], 2);
        near(a->quarter_entry_us[q], entry[q]);
        near(a->quarter_release_us[q], release[q]);
        near(a->quarter_end_us[q], end[q]);
    }
    assert_int_equal(b->rows, 200);
    assert_int_equal(b->launches, 1);
    near(b->warps, 2);
    near(b->release_max_us, 0.5);
    near(b->stream_max_us, 3.0);
    near(b->epilogue_max_us, 1.5);
    near(b->end_max_us, 4.0);
    near(b->end_p50_us, 4.0); /* ends 4.0 and 3.5: the nearest rank of the median of two is the upper */
    near(b->sm_end_min_us, 3.5);
}

static void test_launch_split_by_release_gap(void **state)
{
    (void)state;
    eco_warp_trace_record r[8];
    size_t n = launch_a(r, 100, 0);
    n += launch_a(r + n, 100, 10401); /* its first release 10001 ns after the other's last (5400) */
    eco_warp_trace_summary s;
    assert_int_equal(eco_warp_trace_summarize(r, n, &s), ECO_OK);
    assert_int_equal(s.launches, 2);
    assert_int_equal(s.linears[0].launches, 2);
    near(s.linears[0].warps, 4);
    n = launch_a(r, 100, 0);
    n += launch_a(r + n, 100, 10399); /* 9999 ns: one launch of eight warps */
    assert_int_equal(eco_warp_trace_summarize(r, n, &s), ECO_OK);
    assert_int_equal(s.launches, 1);
    near(s.linears[0].warps, 8);
}

/* A launch under programmatic dependent launch: two warps enter while the kernel before it runs and wait, two enter
 * 15 us later as that kernel's blocks leave and pass the wait at once. Their entries are further apart than the
 * launch gap; their releases are not, so they are one launch. */
static void test_launch_entered_in_two_waves(void **state)
{
    (void)state;
    eco_warp_trace_record r[4];
    r[0] = rec(100, 0, 0, 0, 15000, 20000, 20500);
    r[1] = rec(100, 1, 16, 100, 15100, 19000, 19200);
    r[2] = rec(100, 2, 32, 14900, 15050, 18050, 18550);
    r[3] = rec(100, 3, 48, 15300, 15400, 21400, 21600);
    eco_warp_trace_summary s;
    assert_int_equal(eco_warp_trace_summarize(r, 4, &s), ECO_OK);
    assert_int_equal(s.launches, 1);
    near(s.linears[0].warps, 4);
    near(s.linears[0].entry_spread_us, 15.3);
    near(s.linears[0].release_max_us, 0.4); /* releases 0, 0.1, 0.05, 0.4 */
    near(s.linears[0].stream_max_us, 6.0);  /* 5.0, 3.9, 3.0, 6.0 */
    near(s.linears[0].end_max_us, 6.6);     /* ends 5.5, 4.2, 3.55, 6.6 after the release */
}

static void test_summary_refusals(void **state)
{
    (void)state;
    eco_warp_trace_record r[17];
    memset(r, 0, sizeof r);
    eco_warp_trace_summary s;
    assert_int_equal(eco_warp_trace_summarize(r, 0, &s), ECO_EINVAL);
    assert_int_equal(eco_warp_trace_summarize(NULL, 4, &s), ECO_EINVAL);
    size_t n = launch_a(r, 100, 0);
    r[2].clk_streamed = r[2].clk_end + 1;
    assert_int_equal(eco_warp_trace_summarize(r, n, &s), ECO_EINVAL);
    assert_non_null(strstr(eco_last_error(), "record 2"));
    launch_a(r, 100, 0);
    r[1].sm = 5000;
    assert_int_equal(eco_warp_trace_summarize(r, n, &s), ECO_EINVAL);
    r[0] = rec(100, 0, 0, 1000, 1100, 1200, 1500); /* all under 2 us: no clock */
    assert_int_equal(eco_warp_trace_summarize(r, 1, &s), ECO_EINVAL);
    assert_non_null(strstr(eco_last_error(), "SM clock"));
    for (int i = 0; i < 17; i++) r[i] = rec(100 + (uint32_t)i, 0, 0, 1000 + 50000 * (uint64_t)i, 3000 + 50000 * (uint64_t)i,
                                            5000 + 50000 * (uint64_t)i, 6000 + 50000 * (uint64_t)i);
    assert_int_equal(eco_warp_trace_summarize(r, 17, &s), ECO_ETOOBIG);
    assert_int_equal(eco_warp_trace_summarize(r, 16, &s), ECO_OK);
    assert_int_equal(s.n_linears, 16);
}

/* A trace file as the CUDA backend writes one: header, then `n` records; `extra` bytes of junk after them. */
static void write_trace(const char *path, const eco_warp_trace_header *h, const eco_warp_trace_record *r, size_t n, size_t extra)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(h, sizeof *h, 1, f), 1);
    if (n) assert_int_equal(fwrite(r, sizeof *r, n, f), n);
    for (size_t i = 0; i < extra; i++) fputc(0, f);
    assert_int_equal(fclose(f), 0);
}

static eco_warp_trace_header header(uint64_t records)
{
    eco_warp_trace_header h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, ECO_WARP_TRACE_MAGIC, sizeof h.magic);
    h.version = ECO_WARP_TRACE_VERSION;
    h.record_bytes = sizeof(eco_warp_trace_record);
    h.records = records;
    h.written = records + 7;
    return h;
}

static void test_read(void **state)
{
    (void)state;
    char path[] = "/tmp/eco_warp_trace_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    eco_warp_trace_record r[4], *got;
    size_t n;
    launch_a(r, 100, 0);
    eco_warp_trace_header h = header(4);
    write_trace(path, &h, r, 4, 0);
    assert_int_equal(eco_warp_trace_read(path, &got, &n), ECO_OK);
    assert_int_equal(n, 4);
    assert_memory_equal(got, r, sizeof r);
    free(got);

    write_trace(path, &h, r, 3, 0); /* cut short */
    assert_int_equal(eco_warp_trace_read(path, &got, &n), ECO_EFORMAT);
    assert_non_null(strstr(eco_last_error(), "cut short, 3 of its 4"));
    assert_null(got);
    assert_int_equal(n, 0);
    write_trace(path, &h, r, 4, 5); /* trailing bytes */
    assert_int_equal(eco_warp_trace_read(path, &got, &n), ECO_EFORMAT);
    eco_warp_trace_header bad = h;
    bad.magic[0] = 'X';
    write_trace(path, &bad, r, 4, 0);
    assert_int_equal(eco_warp_trace_read(path, &got, &n), ECO_EFORMAT);
    assert_non_null(strstr(eco_last_error(), "not a warp trace"));
    bad = h;
    bad.version = 2;
    write_trace(path, &bad, r, 4, 0);
    assert_int_equal(eco_warp_trace_read(path, &got, &n), ECO_EFORMAT);
    bad = h;
    bad.record_bytes = 40;
    write_trace(path, &bad, r, 4, 0);
    assert_int_equal(eco_warp_trace_read(path, &got, &n), ECO_EFORMAT);
    bad = h;
    bad.written = 3; /* more records than the kernels wrote */
    write_trace(path, &bad, r, 4, 0);
    assert_int_equal(eco_warp_trace_read(path, &got, &n), ECO_EFORMAT);
    FILE *f = fopen(path, "wb"); /* shorter than a header */
    assert_non_null(f);
    fputs("ECOW", f);
    fclose(f);
    assert_int_equal(eco_warp_trace_read(path, &got, &n), ECO_EFORMAT);
    eco_warp_trace_header empty = header(0);
    write_trace(path, &empty, r, 0, 0);
    assert_int_equal(eco_warp_trace_read(path, &got, &n), ECO_OK);
    assert_int_equal(n, 0);
    unlink(path);
    assert_int_equal(eco_warp_trace_read(path, &got, &n), ECO_EIO);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_summary),
        cmocka_unit_test(test_launch_split_by_release_gap),
        cmocka_unit_test(test_launch_entered_in_two_waves),
        cmocka_unit_test(test_summary_refusals),
        cmocka_unit_test(test_read),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
