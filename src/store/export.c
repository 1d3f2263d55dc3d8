/* CSV and JSON export of records with their delta, protocol, flags and perplexity. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/internal.h"

static const char ATTRIBUTION[] =
    "Reference rows: Hongping Zhang, \"EcoCompute: Energy Efficiency Benchmark for Quantized Language Models\", "
    "v1.1.0, Zenodo, doi:10.5281/zenodo.19647290; and \"EcoCompute - LLM Inference Energy on NVIDIA RTX 4090 (Ada)\", "
    "Zenodo, doi:10.5281/zenodo.22037483. CC BY 4.0. See data/reference/ATTRIBUTION.md.";

const char *eco_reference_attribution(void) { return ATTRIBUTION; }

typedef enum { COL_TEXT, COL_REAL, COL_INT, COL_BOOL } col_type;

static const struct { const char *name; col_type type; } COLS[] = {
    {"source", COL_TEXT},       {"origin", COL_TEXT},      {"session", COL_TEXT},       {"gpu", COL_TEXT},
    {"arch", COL_TEXT},         {"vram_gb", COL_REAL},     {"model", COL_TEXT},         {"params_b", COL_REAL},
    {"precision", COL_TEXT},    {"batch", COL_INT},        {"e_fp16_mj", COL_REAL},     {"e_quant_mj", COL_REAL},
    {"delta_pct", COL_REAL},    {"e_fp16_sd_mj", COL_REAL}, {"e_quant_sd_mj", COL_REAL}, {"cv_pct", COL_REAL},
    {"n_trials", COL_INT},      {"n_iterations", COL_INT}, {"single_trial", COL_BOOL},  {"tokens", COL_INT},
    {"basis", COL_TEXT},        {"method", COL_TEXT},      {"protocol", COL_TEXT},      {"backend", COL_TEXT},
    {"synthetic_weights", COL_BOOL}, {"flags", COL_TEXT},  {"ppl_fp16", COL_REAL},      {"ppl_quant", COL_REAL},
    {"quality_corpus", COL_TEXT}, {"note", COL_TEXT},          {"licence", COL_TEXT},
};
/* Every reference row says whose it is and under which licence, so a CSV cut out of the export keeps it (the JSON
 * form also carries the full attribution once). The licence is the source file's (data/reference/ATTRIBUTION.md):
 * CC BY 4.0 for the Zenodo datasets' files, MIT for the one record file taken from a repository under MIT. */
static const char ROW_LICENCE_CC_BY[] = "CC BY 4.0, Hongping Zhang, EcoCompute (doi:10.5281/zenodo.19647290, "
                                        "doi:10.5281/zenodo.22037483)";
static const char MIT_FILE[] = "ecocompute-ai_a800_summary.csv";
static const char ROW_LICENCE_MIT[] = "MIT, Hongping Zhang, github.com/hongping-zh/ecocompute-ai";
#define N_COLS (sizeof COLS / sizeof COLS[0])

static void csv_text(FILE *out, const char *s)
{
    if (!strpbrk(s, ",\"\r\n")) { fputs(s, out); return; }
    fputc('"', out);
    for (; *s; s++) {
        if (*s == '"') fputc('"', out);
        fputc(*s, out);
    }
    fputc('"', out);
}

eco_err eco_store_export_records(eco_store *s, const eco_record_filter *filter, eco_export_format format, FILE *out,
                                 size_t *count)
{
    if (count) *count = 0;
    if (format != ECO_EXPORT_CSV && format != ECO_EXPORT_JSON)
        return eco_fail_field(ECO_EINVAL, "format", "export format must be csv or json");
    if (filter && filter->precision) {
        /* same validation as the query */
        eco_record *tmp;
        size_t n;
        eco_err e = eco_store_query_records(s, filter, &tmp, &n);
        if (e) return e;
        free(tmp);
    }
    char where[512], sql[2048];
    store_filter_sql(filter, where, sizeof where);
    snprintf(sql, sizeof sql,
             "SELECT r.source, r.origin, coalesce(r.session, ''), r.gpu, r.arch, r.vram_gb, r.model, r.params_b, "
             "r.precision, r.batch, r.e_fp16_mj, r.e_quant_mj, (r.e_quant_mj - r.e_fp16_mj) / r.e_fp16_mj * 100.0, "
             "r.e_fp16_sd_mj, r.e_quant_sd_mj, r.cv_pct, r.n_trials, r.n_iterations, r.single_trial, r.tokens, "
             "r.basis, r.method, r.protocol, r.backend, r.synthetic_weights, r.flags, q.ppl_fp16, q.ppl_quant, "
             "coalesce(q.corpus, ''), r.note, CASE WHEN r.origin <> 'reference' THEN NULL WHEN r.source_file = '%s' "
             "THEN '%s' ELSE '%s' END "
             "FROM (SELECT * FROM records%s) r "
             "LEFT JOIN quality q ON q.id = (SELECT min(id) FROM quality WHERE record_id = r.id) "
             "ORDER BY r.arch, r.precision, r.params_b, r.gpu, r.source_file, r.source_line, r.source, r.model, r.batch",
             MIT_FILE, ROW_LICENCE_MIT, ROW_LICENCE_CC_BY, where);
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK) return store_db_fail(s, "exporting records");
    store_filter_bind(st, filter, 1);
    json_t *arr = format == ECO_EXPORT_JSON ? json_array() : NULL;
    if (format == ECO_EXPORT_JSON && !arr) { sqlite3_finalize(st); return eco_fail(ECO_ENOMEM, "export: out of memory"); }
    if (format == ECO_EXPORT_CSV)
        for (size_t i = 0; i < N_COLS; i++) fprintf(out, "%s%s", i ? "," : "", COLS[i].name);
    if (format == ECO_EXPORT_CSV) fputc('\n', out);
    size_t n = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        json_t *obj = arr ? json_object() : NULL;
        for (size_t i = 0; i < N_COLS; i++) {
            int c = (int)i;
            bool null = sqlite3_column_type(st, c) == SQLITE_NULL;
            if (format == ECO_EXPORT_CSV) {
                if (i) fputc(',', out);
                if (null) continue;
                switch (COLS[i].type) {
                case COL_TEXT: csv_text(out, (const char *)sqlite3_column_text(st, c)); break;
                case COL_REAL: fprintf(out, "%.15g", sqlite3_column_double(st, c)); break;
                case COL_INT: fprintf(out, "%lld", (long long)sqlite3_column_int64(st, c)); break;
                case COL_BOOL: fputs(sqlite3_column_int(st, c) ? "true" : "false", out); break;
                }
            } else if (obj) {
                json_t *v;
                if (null) v = json_null();
                else if (COLS[i].type == COL_TEXT) v = json_string((const char *)sqlite3_column_text(st, c));
                else if (COLS[i].type == COL_REAL) {
                    double d = sqlite3_column_double(st, c);
                    v = isfinite(d) ? json_real(d) : json_null();
                } else if (COLS[i].type == COL_INT) v = json_integer(sqlite3_column_int64(st, c));
                else v = json_boolean(sqlite3_column_int(st, c));
                json_object_set_new(obj, COLS[i].name, v);
            }
        }
        if (format == ECO_EXPORT_CSV) fputc('\n', out);
        else if (!obj || json_array_append_new(arr, obj)) {
            json_decref(arr);
            sqlite3_finalize(st);
            return eco_fail(ECO_ENOMEM, "export: out of memory");
        }
        n++;
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) { json_decref(arr); return store_db_fail(s, "exporting records"); }
    if (arr) {
        json_t *doc = json_pack("{s:o, s:I, s:s}", "records", arr, "count", (json_int_t)n, "attribution", ATTRIBUTION);
        if (!doc) return eco_fail(ECO_ENOMEM, "export: out of memory");
        int w = json_dumpf(doc, out, JSON_INDENT(2) | JSON_REAL_PRECISION(15) | JSON_PRESERVE_ORDER);
        json_decref(doc);
        fputc('\n', out);
        if (w) return eco_fail(ECO_EIO, "export: cannot write the JSON document");
    }
    if (ferror(out)) return eco_fail(ECO_EIO, "export: write error");
    if (count) *count = n;
    return ECO_OK;
}
