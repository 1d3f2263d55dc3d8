/* The nf4 row decoder's warp trace: its file format, reader and summary. A development tool for where a linear's
 * time goes between its warps (kernel spans, as CUPTI gives them, only show the first start and the last end).
 *
 * The CUDA backend writes it under ECO_CUDA_NF4_ROWS_LEAN=22 (the default steps, each warp with work recording
 * itself into a device ring of ECO_CUDA_NF4_ROWS_TRACE_RECORDS, default 2^21) with ECO_CUDA_NF4_ROWS_TRACE=FILE:
 * when the engine or linear closes, FILE gets an eco_warp_trace_header and the ring's last `records` records,
 * oldest first. Reading and summarizing need no device. */
#ifndef ECO_WARP_TRACE_H
#define ECO_WARP_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "eco/err.h"

#define ECO_WARP_TRACE_MAGIC "ECOWARPS"
#define ECO_WARP_TRACE_VERSION 1u

typedef struct {
    char magic[8];         /* ECO_WARP_TRACE_MAGIC, not terminated */
    uint32_t version;      /* ECO_WARP_TRACE_VERSION */
    uint32_t record_bytes; /* sizeof(eco_warp_trace_record) */
    uint64_t records;      /* in the file */
    uint64_t written;      /* by the kernels: more than records when the ring wrapped */
} eco_warp_trace_header;

typedef struct {
    uint64_t ns_entry, ns_end;           /* %globaltimer (ns, one clock for all SMs) as the warp began and ended */
    uint32_t clk_released, clk_streamed; /* its SM's clock cycles from entry: dependency wait over, last deposit begun */
    uint32_t clk_end, sm;                /* cycles from entry to the end; the SM */
    uint32_t warp, chunks_per_warp;      /* the warp in the grid; the linear's share of 1 KB steps a warp */
    uint32_t rows, cols;                 /* the linear */
} eco_warp_trace_record;

/* Reads a trace file: *out (free() it) holds *n records. ECO_EIO (cannot open), ECO_EFORMAT (not a trace of this
 * version, cut short, or bytes after its records), ECO_ENOMEM. */
eco_err eco_warp_trace_read(const char *path, eco_warp_trace_record **out, size_t *n);

/* One linear shape's launches, each launch's figures averaged over them. Times in microseconds; a launch's
 * release is its first warp's pass of the dependency wait (the kernel before it is done). */
typedef struct {
    uint32_t rows, cols;
    int launches;
    double warps;                           /* warps with work, a launch */
    double entry_spread_us;                 /* the last warp's entry after the first's */
    double release_p50_us, release_max_us;  /* a warp's release after the launch's */
    double stream_p50_us, stream_max_us;    /* a warp's release to its last deposit: its steps */
    double epilogue_p50_us, epilogue_max_us; /* its last deposit to its end (the group's sum for its last warp) */
    double end_p50_us, end_p90_us, end_max_us; /* a warp's end after the launch's release; max: the linear's end */
    double sm_end_min_us, sm_end_p50_us;    /* an SM's last warp's end after the release: the earliest SM, the median */
    /* by quarter of the grid (a warp's index over the launch's highest + 1; blocks are dispatched in index order), the
     * medians of those warps' entry (negative: before the release), release and end, each after the launch's release,
     * averaged over the launches with warps in that quarter (NAN where none had): whether the late warps are the last
     * dispatched, as filled shares skewed by block assume (ECO_CUDA_NF4_FILL) */
    double quarter_entry_us[4], quarter_release_us[4], quarter_end_us[4];
    int quarter_launches[4];
} eco_warp_trace_linear;

#define ECO_WARP_TRACE_MAX_LINEARS 16

typedef struct {
    size_t records, launches;
    double cycles_per_ns;   /* the SM clock the records show (their cycles over their %globaltimer time) */
    double timer_step_ns;   /* the smallest step between %globaltimer readings: the resolution of cross-SM times */
    int n_linears;          /* in order of first appearance */
    eco_warp_trace_linear linears[ECO_WARP_TRACE_MAX_LINEARS];
} eco_warp_trace_summary;

/* Groups each shape's records into launches by release (a new launch where one release follows the one before it
 * by more than 10 us: a launch's warps may enter far apart, but pass the dependency wait together) and summarizes
 * each shape, shapes in order of their first entry. ECO_EINVAL for no records or a record whose times run backwards;
 * ECO_ETOOBIG past ECO_WARP_TRACE_MAX_LINEARS shapes; ECO_ENOMEM. */
eco_err eco_warp_trace_summarize(const eco_warp_trace_record *r, size_t n, eco_warp_trace_summary *out);

#endif
