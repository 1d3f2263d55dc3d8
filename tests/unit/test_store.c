/* Store: migrations, reference import (counts, values, duplicates, idempotence, malformed rows, size limit),
 * queries, inserts, replications, runs and export. */
#include "eco_test.h"

#include <dirent.h>
#include <jansson.h>
#include <sqlite3.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "eco/store.h"

static char tmpdir[256];

static int setup(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/eco_test_store_XXXXXX");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

static const char *tmp_path(const char *name, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s/%s", tmpdir, name);
    return buf;
}

static const char *ref_dir(char *buf, size_t cap) { return eco_test_path("ECO_SOURCE_DIR", "data/reference", buf, cap); }

static eco_store *open_fresh(const char *name)
{
    char p[512];
    tmp_path(name, p, sizeof p);
    unlink(p);
    eco_store *s = NULL;
    if (eco_store_open(p, &s)) fail_msg("open %s: %s", p, eco_last_error());
    return s;
}

static void write_file(const char *path, const char *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
}

static void copy_file(const char *from, const char *to)
{
    char *buf;
    size_t len;
    assert_int_equal(eco_store_read_file(from, ECO_STORE_MAX_FILE_BYTES, &buf, &len), ECO_OK);
    write_file(to, buf, len);
    free(buf);
}

/* Copies every file of `from` into `to` (flat folder). */
static void copy_dir(const char *from, const char *to)
{
    mkdir(to, 0700);
    DIR *d = opendir(from);
    assert_non_null(d);
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char src[1024], dst[1024];
        snprintf(src, sizeof src, "%s/%s", from, e->d_name);
        snprintf(dst, sizeof dst, "%s/%s", to, e->d_name);
        copy_file(src, dst);
    }
    closedir(d);
}

static size_t count_of(eco_store *s, const char *arch, const char *prec, const char *source_file)
{
    eco_record_filter f = eco_record_filter_any();
    f.arch = arch;
    f.precision = prec;
    f.source_file = source_file;
    eco_record *r;
    size_t n;
    assert_int_equal(eco_store_query_records(s, &f, &r, &n), ECO_OK);
    free(r);
    return n;
}

static eco_record find_one(eco_store *s, const char *gpu, const char *model, const char *prec, const char *source_file)
{
    eco_record_filter f = eco_record_filter_any();
    f.gpu = gpu;
    f.model = model;
    f.precision = prec;
    f.source_file = source_file;
    eco_record *r, out;
    size_t n;
    assert_int_equal(eco_store_query_records(s, &f, &r, &n), ECO_OK);
    if (n != 1) fail_msg("%zu records for %s %s %s %s", n, gpu, model, prec, source_file ? source_file : "");
    out = r[0];
    free(r);
    return out;
}

/* ---------------------------------------------------------------- migrations */

/* A store left at an older schema version, with rows that version's tables hold written into it (sql); p gets
 * its path. */
static void old_store(const char *name, int version, const char *sql, char *p, size_t cap)
{
    tmp_path(name, p, cap);
    eco_store *s;
    assert_int_equal(eco_store_open_version(p, version, &s), ECO_OK);
    assert_int_equal(eco_store_user_version(s), version);
    eco_store_close(s);
    sqlite3 *db;
    assert_int_equal(sqlite3_open(p, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
}

/* Migration 5 reads the replications already stored: run id, card and model beside each document. */
static void test_migration_5_replication_columns(void **state)
{
    (void)state;
    char p[512];
    old_store("v4.db", 4,
              "INSERT INTO replications (name, sha256, doc, validation, submitted_at) VALUES ('r.json', 'x', "
              "'{\"run_id\": \"r-1\", \"environment\": {\"gpu\": {\"name\": \"NVIDIA H200\"}}, \"weights\": {\"model\": 7}}', "
              "'valid', '2026-01-01T00:00:00Z'), ('bad.json', 'y', 'not json', 'invalid', '2026-01-01T00:00:00Z');",
              p, sizeof p);
    eco_store *s;
    assert_int_equal(eco_store_open(p, &s), ECO_OK);
    /* migration 5 read the stored documents' run id, card and model (a non-string model and a non-JSON document
     * give none) */
    eco_replication *rep;
    size_t nrep, total;
    assert_int_equal(eco_store_list_replications(s, 0, 10, &rep, &nrep, &total), ECO_OK);
    assert_int_equal(nrep, 2);
    assert_string_equal(rep[0].run_id, "r-1");
    assert_string_equal(rep[0].gpu, "NVIDIA H200");
    assert_string_equal(rep[0].model, "");
    assert_string_equal(rep[1].run_id, "");
    eco_store_free_replications(rep, nrep);
    eco_store_close(s);
}

static void test_migration_from_v1(void **state)
{
    (void)state;
    char p[512];
    /* a row written by the v1 schema */
    old_store("old.db", 1,
              "INSERT INTO sessions (id, gpu, arch) VALUES ('old', 'RTX 4090', 'ada');"
              "INSERT INTO records (origin, source, content_hash, gpu, arch, model, params_b, precision, e_fp16_mj, "
              "e_quant_mj, n_trials, basis, method, protocol, session) VALUES ('run', 'run-1', 'h', 'RTX 4090', 'ada', "
              "'Qwen2-7B', 7, 'nf4', 100, 80, 3, 'gross', 'nvml-energy-counter', 'tok256/gross/nvml-energy-counter', 'old');",
              p, sizeof p);
    eco_store *s;
    assert_int_equal(eco_store_open(p, &s), ECO_OK);
    assert_int_equal(eco_store_user_version(s), eco_store_schema_version());
    assert_true(eco_store_schema_version() >= 3);
    eco_record *r;
    size_t n;
    assert_int_equal(eco_store_query_records(s, NULL, &r, &n), ECO_OK);
    assert_int_equal(n, 1);
    assert_string_equal(r[0].source, "run-1");
    assert_int_equal(r[0].origin, ECO_ORIGIN_RUN);
    assert_int_equal(r[0].precision, ECO_PREC_NF4);
    assert_near(eco_record_delta_pct(&r[0]), -20.0, 1e-12);
    free(r);
    /* tables added by later migrations exist and work */
    size_t c;
    assert_int_equal(eco_store_count(s, "quality", &c), ECO_OK);
    assert_int_equal(c, 0);
    eco_record_extra x;
    assert_int_equal(eco_store_record_extra(s, "run-1", "nf4", &x), ECO_OK);
    assert_string_equal(x.flags, "");
    assert_true(isnan(x.ppl_quant));
    eco_store_close(s);
    /* opening again is a no-op */
    assert_int_equal(eco_store_open(p, &s), ECO_OK);
    assert_int_equal(eco_store_user_version(s), eco_store_schema_version());
    eco_store_close(s);
}

static void test_refuses_newer_and_foreign_databases(void **state)
{
    (void)state;
    char p[512];
    sqlite3 *db;
    eco_store *s;
    tmp_path("newer.db", p, sizeof p);
    assert_int_equal(sqlite3_open(p, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "PRAGMA user_version = 999", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    assert_int_equal(eco_store_open(p, &s), ECO_EUNSUPPORTED);
    assert_null(s);
    assert_non_null(strstr(eco_last_error(), "newer eco"));

    tmp_path("foreign.db", p, sizeof p);
    assert_int_equal(sqlite3_open(p, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "CREATE TABLE t(x)", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    assert_int_equal(eco_store_open(p, &s), ECO_EFORMAT);
    assert_non_null(strstr(eco_last_error(), "not an eco store"));

    tmp_path("garbage.db", p, sizeof p);
    write_file(p, "this is not sqlite at all, just some text long enough to look like a header.....", 80);
    assert_int_equal(eco_store_open(p, &s), ECO_EIO);
    assert_non_null(strstr(eco_last_error(), "garbage.db"));
}

/* ---------------------------------------------------------------- reference import */

static void check_reference_contents(eco_store *s)
{
    /* measured.csv alone: the anchor's 29 anchors, per (arch, precision) */
    assert_int_equal(count_of(s, NULL, NULL, "measured.csv"), 29);
    assert_int_equal(count_of(s, "ada", "nf4", "measured.csv"), 9);
    assert_int_equal(count_of(s, "ada", "int8-mixed", "measured.csv"), 6);
    assert_int_equal(count_of(s, "blackwell", "nf4", "measured.csv"), 4);
    assert_int_equal(count_of(s, "turing", "nf4", "measured.csv"), 4);
    assert_int_equal(count_of(s, "ampere", "nf4", "measured.csv"), 3);
    assert_int_equal(count_of(s, "ampere", "int8-mixed", "measured.csv"), 3);
    assert_int_equal(count_of(s, "ada", "int8", "measured.csv"), 0);
    /* + Aug 19 (5 nf4 + 5 int8-mixed), Aug 20 (5 int8-mixed means), A800 int8 pure and nf4-dq (3 + 3) */
    assert_int_equal(count_of(s, NULL, NULL, NULL), 50);
    assert_int_equal(count_of(s, "ada", "nf4", NULL), 14);
    assert_int_equal(count_of(s, "ada", "int8-mixed", NULL), 16);
    assert_int_equal(count_of(s, "ampere", "int8", NULL), 3);
    assert_int_equal(count_of(s, "ampere", "nf4-dq", NULL), 3);
    assert_int_equal(count_of(s, "ampere", "nf4", NULL), 3); /* the a800 summary's nf4 rows are linked, not added */

    /* values round-trip */
    eco_record r = find_one(s, "RTX 4090", "Qwen2-7B", "nf4", "measured.csv");
    assert_near(r.e_fp16_mj, 5467.88, 1e-9);
    assert_near(r.e_quant_mj, 3911.75, 1e-9);
    assert_near(eco_record_delta_pct(&r), -28.46, 0.005);
    assert_string_equal(r.source, "measured.csv:10");
    assert_string_equal(r.session, "rtx4090-2026-07-container");
    assert_int_equal(r.tokens, 256);
    assert_int_equal(r.basis, ECO_BASIS_GROSS);
    assert_int_equal(r.n_trials, 1);
    assert_int_equal(r.n_iterations, 10);
    assert_true(r.single_trial);

    /* INT8 = LLM.int8(), said in the note; the back-derived baseline is flagged */
    eco_record_filter f = eco_record_filter_any();
    f.session = "rtx4090-2026-08-06";
    eco_record *v;
    size_t n;
    assert_int_equal(eco_store_query_records(s, &f, &v, &n), ECO_OK);
    assert_int_equal(n, 1);
    assert_int_equal(v[0].precision, ECO_PREC_INT8_MIXED);
    assert_near(v[0].e_fp16_mj, 1502.90, 1e-9);
    assert_non_null(strstr(v[0].note, "LLM.int8()"));
    assert_non_null(strstr(v[0].note, "threshold 6.0"));
    assert_non_null(strstr(v[0].note, "back-derived"));
    eco_record_extra x;
    assert_int_equal(eco_store_record_extra(s, v[0].source, "int8-mixed", &x), ECO_OK);
    assert_string_equal(x.flags, "fp16-back-derived");
    free(v);

    /* protocols per campaign */
    r = find_one(s, "RTX 4090D", "Qwen2-1.5B", "nf4", "measured.csv");
    assert_int_equal(r.basis, ECO_BASIS_NET);
    assert_int_equal(r.tokens, 256);
    assert_int_equal(r.n_trials, 2);
    assert_int_equal(r.n_iterations, 10); /* n_runs (2) counts trials on the 4090D, not iterations */
    assert_near(r.cv_pct, 13.4, 1e-12);   /* from the note "CV 13.4%" */
    assert_near(r.e_quant_sd_mj, 95.03, 1e-12);
    r = find_one(s, "RTX 5090", "Qwen2-7B", "nf4", "measured.csv");
    assert_string_equal(r.method, "avg-power/throughput");
    assert_int_equal(r.tokens, 512);
    assert_int_equal(r.basis, ECO_BASIS_GROSS);
    assert_near(r.e_quant_sd_mj, 55.8, 1e-12);
    r = find_one(s, "A800", "Mistral-7B", "nf4", "measured.csv");
    assert_near(r.cv_pct, 1.6, 1e-12);
    assert_int_equal(r.tokens, 512);
    assert_near(r.vram_gb, 80, 0);
    char key[96];
    eco_record_protocol_key(&r, key, sizeof key);
    assert_string_equal(key, "tok512/gross/nvml-power-poll");

    /* Aug 20 replicates: one record per size, mean of 3 (and the published summary agrees) */
    r = find_one(s, "RTX 4090", "Qwen2-0.5B", "int8-mixed", "rtx4090_int8_repeats_2026-08-20.csv");
    assert_int_equal(r.n_trials, 3);
    assert_false(r.single_trial);
    assert_near(r.e_quant_mj, 8254.213, 0.0005);
    assert_near(r.e_quant_sd_mj, 64.357, 0.0005);
    assert_near(r.cv_pct, 0.78, 0.005);
    assert_near(r.e_fp16_mj, 1211.906, 0.0005);
    assert_near(r.e_fp16_sd_mj, 29.693, 0.0005);
    assert_string_equal(r.source, "rtx4090_int8_repeats_2026-08-20.csv:2-4");
    assert_int_equal(eco_store_record_extra(s, r.source, "int8-mixed", &x), ECO_OK);
    assert_near(x.ppl_quant, 17.8543, 1e-12);
    assert_near(x.ppl_fp16, 17.7621, 1e-12);

    /* Aug 19 paired rows keep their own baseline and perplexity */
    r = find_one(s, "RTX 4090", "Qwen2.5-3B", "nf4", "rtx4090_paired_energy_quality_2026-08-19.csv");
    assert_near(r.e_fp16_mj, 3879.905, 1e-9);
    assert_near(eco_record_delta_pct(&r), -15.06, 0.005);
    assert_int_equal(eco_store_record_extra(s, r.source, "nf4", &x), ECO_OK);
    assert_near(x.ppl_quant, 5.8006, 1e-12);
    assert_string_equal(x.quality_corpus, "sha256:22ac091a6383740d30f8e41ae144032c873c772db5e1c901112c1c330fdc5504");

    /* A800 5-config table: pure int8 and nf4-dq added, int8_default / nf4 linked to measured.csv */
    /* named as the campaign's measured.csv rows name it, so its four precisions are one model */
    r = find_one(s, "A800", "Mistral-7B", "int8", NULL);
    assert_non_null(strstr(r.note, "this table says 'Mistral-7B-v0.1'"));
    assert_near(r.e_fp16_mj, 4402.43, 1e-9);
    assert_near(r.e_quant_mj, 6528.08, 1e-9);
    assert_near(r.cv_pct, 0.89, 1e-12);
    assert_near(r.params_b, 7, 0);
    assert_int_equal(r.n_trials, 2);
    assert_string_equal(r.session, "a800-2026-02");
    assert_non_null(strstr(r.note, "pure int8"));
    r = find_one(s, "A800", "Qwen2.5-14B", "nf4-dq", NULL);
    assert_near(r.params_b, 14, 0);
    assert_near(r.e_quant_mj, 8755.73, 1e-9);
    eco_import_link *links;
    assert_int_equal(eco_store_list_links(s, &links, &n), ECO_OK);
    assert_int_equal(n, 6 + 4 + 4 + 5); /* a800 int8_default+nf4, 5090, T4, replicate summary rows */
    bool seen = false;
    for (size_t i = 0; i < n; i++)
        if (!strcmp(links[i].source, "ecocompute-ai_a800_summary.csv:3")) {
            assert_string_equal(links[i].linked_source, "measured.csv:28");
            seen = true;
        }
    assert_true(seen);
    free(links);
    /* the linked A800 row carries the WikiText-2 perplexity of the summary */
    assert_int_equal(eco_store_record_extra(s, "measured.csv:28", "int8-mixed", &x), ECO_OK);
    assert_near(x.ppl_quant, 4.679, 1e-12);
    assert_near(x.ppl_fp16, 4.668, 1e-12);

    /* sessions: one per campaign; the August ones say not to pool */
    eco_session *ss;
    assert_int_equal(eco_store_list_sessions(s, &ss, &n), ECO_OK);
    size_t aug = 0;
    for (size_t i = 0; i < n; i++)
        if (!strcmp(ss[i].id, "rtx4090-2026-08-19") || !strcmp(ss[i].id, "rtx4090-2026-08-20")) {
            assert_non_null(strstr(ss[i].note, "DO NOT POOL"));
            assert_string_equal(ss[i].arch, "ada");
            aug++;
        }
    assert_int_equal(aug, 2);
    assert_int_equal(n, 11); /* 6 campaigns of measured.csv, Aug 19, Aug 20, A800 batch, two RTX PRO 6000 */
    free(ss);

    /* batch and phase tables */
    eco_batch_row *b;
    assert_int_equal(eco_store_query_batch_rows(s, "A800", "Mistral-7B", &b, &n), ECO_OK);
    assert_int_equal(n, 77); /* 70 raw + 7 means */
    size_t means = 0;
    for (size_t i = 0; i < n; i++)
        if (!strcmp(b[i].stat, "mean")) {
            means++;
            assert_int_equal(b[i].n_runs, 10);
            assert_int_equal(b[i].precision, ECO_PREC_INT8);
            if (b[i].batch == 64) assert_near(b[i].e_mj, 296.44, 1e-9);
            if (b[i].batch == 1) assert_near(b[i].e_sd_mj, 45.96, 1e-9);
        }
    assert_int_equal(means, 7);
    free(b);
    assert_int_equal(eco_store_query_batch_rows(s, "RTX PRO 6000", NULL, &b, &n), ECO_OK);
    assert_int_equal(n, 20);
    free(b);
    eco_phase_row *ph;
    assert_int_equal(eco_store_query_phase_rows(s, &ph, &n), ECO_OK);
    assert_int_equal(n, 15);
    free(ph);
    size_t c;
    assert_int_equal(eco_store_count(s, "quality", &c), ECO_OK);
    assert_int_equal(c, 29); /* 10 + 5 + 12 (A800) + 2 (Yi-1.5-6B) */
}

static void test_import_reference_and_reimport(void **state)
{
    (void)state;
    char dir[1024];
    eco_store *s = open_fresh("ref.db");
    eco_import_report rep;
    assert_int_equal(eco_store_import_reference_dir(s, ref_dir(dir, sizeof dir), &rep), ECO_OK);
    assert_int_equal(rep.files, 12);
    assert_int_equal(rep.files_failed, 0);
    assert_int_equal(rep.rows_read, 205);
    assert_int_equal(rep.rows_rejected, 0);
    assert_int_equal(rep.rows_inserted, 164); /* 50 records + 97 batch + 15 phase + 2 perplexity-only */
    assert_int_equal(rep.rows_linked, 19);
    assert_int_equal(rep.rows_baseline, 12);
    assert_string_equal(rep.first_error, "");
    check_reference_contents(s);

    eco_import_report again;
    assert_int_equal(eco_store_import_reference_dir(s, dir, &again), ECO_OK);
    assert_int_equal(again.rows_inserted, 0);
    assert_int_equal(again.rows_updated, 0);
    assert_int_equal(again.rows_unchanged, 164);
    assert_int_equal(again.rows_linked, 19);
    assert_true(again.import_id > rep.import_id);
    check_reference_contents(s);
    eco_store_close(s);
}

/* The shared folder (no manifest) with our manifest: the embedded copy is the same data. */
static void test_import_shared_folder_with_manifest(void **state)
{
    (void)state;
    char shared[1024], manifest[1024];
    eco_test_path("ECO_SHARED_DIR", "reference", shared, sizeof shared);
    eco_test_path("ECO_SOURCE_DIR", "data/reference/manifest.csv", manifest, sizeof manifest);
    if (access(shared, R_OK) != 0) skip();
    eco_store *s = open_fresh("shared.db");
    eco_import_report rep;
    assert_int_equal(eco_store_import_reference_dir_manifest(s, shared, manifest, &rep), ECO_OK);
    assert_int_equal(rep.rows_inserted, 164);
    check_reference_contents(s);
    /* the folder itself has no manifest: a clear error */
    eco_import_report r2;
    assert_int_equal(eco_store_import_reference_dir(s, shared, &r2), ECO_EIO);
    assert_non_null(strstr(eco_last_error(), "manifest"));
    eco_store_close(s);
}

/* Replaces line `line` (1-based) of a file with `text`. */
static void replace_line(const char *path, int line, const char *text)
{
    char *buf;
    size_t len;
    assert_int_equal(eco_store_read_file(path, ECO_STORE_MAX_FILE_BYTES, &buf, &len), ECO_OK);
    char *out = malloc(len + strlen(text) + 2);
    assert_non_null(out);
    size_t w = 0;
    int cur = 1;
    for (size_t i = 0; i < len;) {
        size_t end = i;
        while (end < len && buf[end] != '\n') end++;
        if (cur == line) { memcpy(out + w, text, strlen(text)); w += strlen(text); }
        else { memcpy(out + w, buf + i, end - i); w += end - i; }
        if (end < len) out[w++] = '\n';
        i = end + 1;
        cur++;
    }
    write_file(path, out, w);
    free(out);
    free(buf);
}

static void test_malformed_rows_are_reported_and_skipped(void **state)
{
    (void)state;
    char src[1024], dir[512], path[1024];
    copy_dir(ref_dir(src, sizeof src), tmp_path("bad", dir, sizeof dir));
    snprintf(path, sizeof path, "%s/measured.csv", dir);
    replace_line(path, 5, "RTX 4090D,ada,24,Qwen2.5-3B,x,NF4,2989.22,3743.12,2,2,107.97,");
    replace_line(path, 8, "RTX 4090,ada,24,Qwen2-1.5B,1.5,NF4,2200.67");
    replace_line(path, 12, "RTX 4090,ada,24,TinyLlama-1.1B,1.1,INT8,1619.68,-3986.20,10,1,,\"a, quoted note\"");
    replace_line(path, 20, "RTX 5090,blackwell,32,Qwen2.5-3B,3.0,INT3,3382.64,3779.60,10,2,48.7,");
    eco_store *s = open_fresh("bad.db");
    eco_import_report rep;
    assert_int_equal(eco_store_import_reference_dir(s, dir, &rep), ECO_OK);
    assert_int_equal(rep.rows_rejected, 4);
    assert_string_equal(rep.first_error, "measured.csv:5: params_b 'x' is not a number");
    assert_int_equal(count_of(s, NULL, NULL, "measured.csv"), 25);
    assert_int_equal(count_of(s, "blackwell", "nf4", "measured.csv"), 3);
    eco_import_error *errs;
    size_t n;
    assert_int_equal(eco_store_list_import_errors(s, rep.import_id, &errs, &n), ECO_OK);
    assert_int_equal(n, 4);
    assert_string_equal(errs[0].file, "measured.csv");
    assert_int_equal(errs[0].line, 5);
    assert_int_equal(errs[1].line, 8);
    assert_string_equal(errs[1].message, "expected 12 fields, got 7");
    assert_int_equal(errs[2].line, 12);
    assert_non_null(strstr(errs[2].message, "energies must be positive"));
    assert_int_equal(errs[3].line, 20);
    assert_non_null(strstr(errs[3].message, "unknown precision 'INT3'"));
    free(errs);
    /* the 5090 3B NF4 row is gone, so its per-config source row is a record of its own, not a link */
    assert_int_equal(rep.rows_linked, 18);

    /* fixing a row later updates it in place (no duplicate) */
    char src_measured[1100];
    snprintf(src_measured, sizeof src_measured, "%s/measured.csv", src);
    copy_file(src_measured, path);
    eco_import_report fix;
    assert_int_equal(eco_store_import_reference_dir(s, dir, &fix), ECO_OK);
    assert_int_equal(fix.rows_rejected, 0);
    assert_int_equal(count_of(s, NULL, NULL, "measured.csv"), 29);
    eco_store_close(s);
}

/* A copy of the reference folder at <tmp>/name, imported into a fresh <tmp>/name.db. */
static eco_store *imported_copy(const char *name, char *dir, size_t cap)
{
    char src[1024], db[600];
    copy_dir(ref_dir(src, sizeof src), tmp_path(name, dir, cap));
    snprintf(db, sizeof db, "%s.db", name);
    eco_store *s = open_fresh(db);
    eco_import_report rep;
    assert_int_equal(eco_store_import_reference_dir(s, dir, &rep), ECO_OK);
    return s;
}

static void test_changed_row_is_updated_not_duplicated(void **state)
{
    (void)state;
    char dir[512], path[1024];
    eco_store *s = imported_copy("changed", dir, sizeof dir);
    eco_import_report rep;
    snprintf(path, sizeof path, "%s/measured.csv", dir);
    replace_line(path, 10, "RTX 4090,ada,24,Qwen2-7B,7.0,NF4,5467.88,3900.00,10,1,,corrected");
    assert_int_equal(eco_store_import_reference_dir(s, dir, &rep), ECO_OK);
    assert_int_equal(rep.rows_inserted, 0);
    assert_int_equal(rep.rows_updated, 1);
    eco_record r = find_one(s, "RTX 4090", "Qwen2-7B", "nf4", "measured.csv");
    assert_near(r.e_quant_mj, 3900.0, 1e-9);
    assert_int_equal(count_of(s, NULL, NULL, "measured.csv"), 29);
    eco_store_close(s);
}

/* Rows checked or linked against another file's rows must see that file as it is now, not its stale rows (found by
 * fuzz_import): measured.csv emptied to its header once linked the A800 table's rows to measured rows that the same
 * import then removed, losing them; a replicates file with a row dropped and put back made the summary check read
 * the old replicate record and refuse the real file. */
static void test_edited_file_is_checked_against_current_rows(void **state)
{
    (void)state;
    char dir[512], path[1024];
    eco_store *s = imported_copy("edited", dir, sizeof dir);
    eco_import_report rep;
    /* of the A800 table's 12 quantized rows, the 6 int8-mixed and nf4 ones repeat measured.csv and are linked */
    assert_int_equal(count_of(s, NULL, NULL, "ecocompute-ai_a800_summary.csv"), 6);

    snprintf(path, sizeof path, "%s/measured.csv", dir);
    char *orig;
    size_t len;
    assert_int_equal(eco_store_read_file(path, ECO_STORE_MAX_FILE_BYTES, &orig, &len), ECO_OK);
    const char *eol = memchr(orig, '\n', len);
    assert_non_null(eol);
    write_file(path, orig, (size_t)(eol - orig) + 1);
    assert_int_equal(eco_store_import_reference_dir(s, dir, &rep), ECO_OK);
    assert_int_equal(count_of(s, NULL, NULL, "measured.csv"), 0);
    /* all 12 are records of their own now, in this import, not the next one */
    assert_int_equal(count_of(s, NULL, NULL, "ecocompute-ai_a800_summary.csv"), 12);
    eco_import_report again;
    assert_int_equal(eco_store_import_reference_dir(s, dir, &again), ECO_OK);
    assert_int_equal(again.rows_inserted, 0);
    assert_int_equal(again.rows_removed, 0);
    assert_int_equal(again.rows_linked, rep.rows_linked);

    write_file(path, orig, len);
    free(orig);
    assert_int_equal(eco_store_import_reference_dir(s, dir, &rep), ECO_OK);
    assert_int_equal(count_of(s, NULL, NULL, "measured.csv"), 29);
    assert_int_equal(count_of(s, NULL, NULL, "ecocompute-ai_a800_summary.csv"), 6);
    assert_int_equal(rep.rows_linked, 19);

    /* a replicate row dropped, then put back */
    snprintf(path, sizeof path, "%s/rtx4090_int8_repeats_2026-08-20.csv", dir);
    assert_int_equal(eco_store_read_file(path, ECO_STORE_MAX_FILE_BYTES, &orig, &len), ECO_OK);
    replace_line(path, 2, "");
    assert_int_equal(eco_store_import_reference_dir(s, dir, &rep), ECO_OK);
    write_file(path, orig, len);
    free(orig);
    assert_int_equal(eco_store_import_reference_dir(s, dir, &rep), ECO_OK);
    assert_int_equal(rep.rows_rejected, 0);
    assert_string_equal(rep.first_error, "");
    check_reference_contents(s);
    eco_store_close(s);
}

/* The same within the dependent pass: a config table that repeats another one of its campaign (listed after it) must
 * not be linked to a row the earlier table no longer holds, which this import removes at the end of the pass; nor
 * may the earlier table be linked to the later one's row, which only an earlier import stored. */
static void test_link_never_targets_a_row_being_removed(void **state)
{
    (void)state;
    char dir[512], path[1024], copy[1024], manifest[1024];
    eco_store *s = imported_copy("twin", dir, sizeof dir);
    /* a twin of the A800 table, as a second config-table file of the same campaign */
    snprintf(path, sizeof path, "%s/ecocompute-ai_a800_summary.csv", dir);
    snprintf(copy, sizeof copy, "%s/a800_twin.csv", dir);
    copy_file(path, copy);
    char *text;
    size_t len;
    snprintf(manifest, sizeof manifest, "%s/manifest.csv", dir);
    assert_int_equal(eco_store_read_file(manifest, ECO_STORE_MAX_FILE_BYTES, &text, &len), ECO_OK);
    const char *entry = strstr(text, "\necocompute-ai_a800_summary.csv,config-table,");
    assert_non_null(entry);
    const char *end = strchr(entry + 1, '\n');
    assert_non_null(end);
    size_t entry_len = (size_t)(end - entry) - strlen("\necocompute-ai_a800_summary.csv");
    FILE *f = fopen(manifest, "ab");
    assert_non_null(f);
    fprintf(f, "%sa800_twin.csv%.*s\n", text[len - 1] == '\n' ? "" : "\n", (int)entry_len,
            entry + strlen("\necocompute-ai_a800_summary.csv"));
    fclose(f);
    free(text);

    eco_import_report rep;
    assert_int_equal(eco_store_import_reference_dir(s, dir, &rep), ECO_OK);
    assert_int_equal(rep.rows_rejected, 0);
    /* the twin's rows are all links: 6 to measured.csv, 6 to the A800 table's own records (int8 and nf4-dq) */
    assert_int_equal(count_of(s, NULL, NULL, "a800_twin.csv"), 0);
    assert_int_equal(count_of(s, NULL, "int8", "ecocompute-ai_a800_summary.csv"), 3);

    /* the A800 table's line 4 (Mistral int8) becomes an nf4-dq row: its int8 record is stale */
    replace_line(path, 4, "Mistral-7B-v0.1,nf4_dq,A800-SXM4-80GB,6528.08,18.54,121.47,0.89,4.729");
    assert_int_equal(eco_store_import_reference_dir(s, dir, &rep), ECO_OK);
    assert_int_equal(count_of(s, NULL, "int8", "ecocompute-ai_a800_summary.csv"), 2);
    /* so the twin's line 4 is a record of its own now, not a link to the removed row */
    assert_int_equal(count_of(s, NULL, "int8", "a800_twin.csv"), 1);
    eco_import_report again;
    assert_int_equal(eco_store_import_reference_dir(s, dir, &again), ECO_OK);
    assert_int_equal(again.rows_inserted, 0);
    assert_int_equal(again.rows_removed, 0);
    assert_int_equal(count_of(s, NULL, "int8", "a800_twin.csv"), 1);

    /* the line put back: the A800 table's row is the record again and the twin's the link, as before the edit
     * (the manifest's order decides which of two repeating rows is the record, not which was stored first) */
    char src[1024], orig_path[1100];
    snprintf(orig_path, sizeof orig_path, "%s/ecocompute-ai_a800_summary.csv", ref_dir(src, sizeof src));
    copy_file(orig_path, path);
    assert_int_equal(eco_store_import_reference_dir(s, dir, &rep), ECO_OK);
    assert_int_equal(count_of(s, NULL, "int8", "ecocompute-ai_a800_summary.csv"), 3);
    assert_int_equal(count_of(s, NULL, "int8", "a800_twin.csv"), 0);
    eco_store_close(s);
}

static bool has_session(eco_store *s, const char *id, size_t *count)
{
    eco_session *ss;
    size_t n;
    assert_int_equal(eco_store_list_sessions(s, &ss, &n), ECO_OK);
    bool found = false;
    for (size_t i = 0; i < n; i++) found = found || !strcmp(ss[i].id, id);
    free(ss);
    *count = n;
    return found;
}

/* A session renamed in the manifest replaces the old one; renamed back, the old one is back alone (found by
 * fuzz_import: the renamed campaign stayed listed, with no rows, after the manifest was put back). */
static void test_renamed_session_is_not_kept(void **state)
{
    (void)state;
    char dir[512], manifest[1024];
    eco_store *s = imported_copy("renamed", dir, sizeof dir);
    snprintf(manifest, sizeof manifest, "%s/manifest.csv", dir);
    char *orig;
    size_t len, n;
    assert_int_equal(eco_store_read_file(manifest, ECO_STORE_MAX_FILE_BYTES, &orig, &len), ECO_OK);
    char *edited = malloc(len + 8);
    assert_non_null(edited);
    const char *at = strstr(orig, ",,rtx4090-2026-08-19,"); /* the paired rows' entry: no match column */
    assert_non_null(at);
    size_t head = (size_t)(at - orig) + 2;
    memcpy(edited, orig, head);
    memcpy(edited + head, "renamed-", 8);
    memcpy(edited + head + 8, orig + head, len - head);
    write_file(manifest, edited, len + 8);
    free(edited);

    eco_import_report rep;
    assert_int_equal(eco_store_import_reference_dir(s, dir, &rep), ECO_OK);
    assert_true(has_session(s, "renamed-rtx4090-2026-08-19", &n));
    assert_false(has_session(s, "rtx4090-2026-08-19", &n));
    assert_int_equal(n, 11);
    write_file(manifest, orig, len);
    free(orig);
    assert_int_equal(eco_store_import_reference_dir(s, dir, &rep), ECO_OK);
    assert_false(has_session(s, "renamed-rtx4090-2026-08-19", &n));
    assert_true(has_session(s, "rtx4090-2026-08-19", &n));
    assert_int_equal(n, 11);
    check_reference_contents(s);
    eco_store_close(s);
}

static void test_oversize_and_missing_files(void **state)
{
    (void)state;
    char src[1024], dir[512], path[1024];
    copy_dir(ref_dir(src, sizeof src), tmp_path("big", dir, sizeof dir));
    snprintf(path, sizeof path, "%s/measured.csv", dir);
    assert_int_equal(truncate(path, (off_t)ECO_STORE_MAX_FILE_BYTES + 1), 0); /* sparse, over the limit */
    snprintf(path, sizeof path, "%s/rtxpro6000_phase_summary_20260603.csv", dir);
    assert_int_equal(unlink(path), 0);
    eco_store *s = open_fresh("big.db");
    eco_import_report rep;
    assert_int_equal(eco_store_import_reference_dir(s, dir, &rep), ECO_ETOOBIG);
    assert_non_null(strstr(rep.first_error, "over the limit"));
    assert_int_equal(rep.files_failed, 2);
    assert_int_equal(count_of(s, NULL, NULL, "measured.csv"), 0);
    /* the other files were still imported; without measured.csv nothing is a duplicate */
    assert_int_equal(count_of(s, NULL, NULL, "rtx4090_paired_energy_quality_2026-08-19.csv"), 10);
    assert_int_equal(count_of(s, "ampere", "int8-mixed", NULL), 3);
    eco_import_error *errs;
    size_t n;
    assert_int_equal(eco_store_list_import_errors(s, rep.import_id, &errs, &n), ECO_OK);
    assert_int_equal(n, 2);
    assert_int_equal(errs[0].line, 0);
    free(errs);
    eco_store_close(s);
}

/* ---------------------------------------------------------------- queries and inserts */

static eco_record sample_run(void)
{
    eco_record r;
    memset(&r, 0, sizeof r);
    snprintf(r.gpu, sizeof r.gpu, "NVIDIA H200");
    snprintf(r.arch, sizeof r.arch, "hopper");
    snprintf(r.model, sizeof r.model, "Qwen2.5-7B");
    r.vram_gb = 141;
    r.params_b = 7.6;
    r.precision = ECO_PREC_FP8;
    r.batch = 1;
    r.e_fp16_mj = 1000;
    r.e_quant_mj = 1200;
    r.e_fp16_sd_mj = r.e_quant_sd_mj = NAN;
    r.cv_pct = 1.5;
    r.n_trials = 5;
    r.n_iterations = 3;
    r.tokens = 256;
    r.basis = ECO_BASIS_NET;
    snprintf(r.method, sizeof r.method, "nvml-energy-counter");
    snprintf(r.backend, sizeof r.backend, "eco 0.1.0 cuda");
    r.origin = ECO_ORIGIN_RUN;
    snprintf(r.source, sizeof r.source, "run-2026-01-01");
    r.synthetic_weights = true;
    return r;
}

static void test_insert_and_filters(void **state)
{
    (void)state;
    char dir[1024];
    eco_store *s = open_fresh("q.db");
    eco_import_report rep;
    assert_int_equal(eco_store_import_reference_dir(s, ref_dir(dir, sizeof dir), &rep), ECO_OK);
    eco_record r = sample_run();
    bool inserted;
    assert_int_equal(eco_store_insert_record(s, &r, &inserted), ECO_OK);
    assert_true(inserted);
    assert_int_equal(eco_store_insert_record(s, &r, &inserted), ECO_OK);
    assert_false(inserted);
    r.e_quant_mj = 1100;
    assert_int_equal(eco_store_insert_record(s, &r, &inserted), ECO_OK);
    assert_false(inserted); /* same key: updated */
    r.precision = ECO_PREC_NF4;
    assert_int_equal(eco_store_insert_record(s, &r, &inserted), ECO_OK);
    assert_true(inserted); /* another precision of the same run */

    /* bad records are refused and nothing is stored */
    eco_record bad = sample_run();
    bad.e_quant_mj = -1;
    assert_int_equal(eco_store_insert_record(s, &bad, &inserted), ECO_EINVAL);
    assert_false(inserted);
    bad = sample_run();
    snprintf(bad.session, sizeof bad.session, "no-such-session");
    snprintf(bad.source, sizeof bad.source, "other");
    assert_int_equal(eco_store_insert_record(s, &bad, &inserted), ECO_ENOTFOUND);
    bad = sample_run();
    bad.source[0] = '\0';
    assert_int_equal(eco_store_insert_record(s, &bad, &inserted), ECO_EINVAL);
    assert_string_equal(eco_last_error_field(), "source");

    eco_record_filter f = eco_record_filter_any();
    f.origin = ECO_ORIGIN_RUN;
    eco_record *v;
    size_t n;
    assert_int_equal(eco_store_query_records(s, &f, &v, &n), ECO_OK);
    assert_int_equal(n, 2);
    assert_int_equal(v[0].precision, ECO_PREC_FP8); /* ordered by precision name: "fp8" < "nf4" */
    assert_int_equal(v[1].precision, ECO_PREC_NF4);
    free(v);
    f = eco_record_filter_any();
    f.arch = "hopper";
    f.precision = "fp8";
    assert_int_equal(eco_store_query_records(s, &f, &v, &n), ECO_OK);
    assert_int_equal(n, 1);
    assert_near(v[0].e_quant_mj, 1100, 0);
    assert_true(v[0].synthetic_weights);
    assert_true(isnan(v[0].e_quant_sd_mj));
    assert_near(v[0].cv_pct, 1.5, 0);
    free(v);

    f = eco_record_filter_any();
    f.protocol = "tok512/gross/avg-power/throughput";
    assert_int_equal(eco_store_query_records(s, &f, &v, &n), ECO_OK);
    assert_int_equal(n, 8); /* RTX 5090 and T4 */
    for (size_t i = 1; i < n; i++) /* stable order: arch, precision, params_b */
        assert_true(strcmp(v[i - 1].arch, v[i].arch) < 0 ||
                    (!strcmp(v[i - 1].arch, v[i].arch) && v[i - 1].params_b <= v[i].params_b));
    free(v);
    f = eco_record_filter_any();
    f.gpu = "T4";
    f.origin = ECO_ORIGIN_REFERENCE;
    assert_int_equal(eco_store_query_records(s, &f, &v, &n), ECO_OK);
    assert_int_equal(n, 4);
    assert_near(v[0].params_b, 1.1, 0);
    free(v);
    f = eco_record_filter_any();
    f.session = "rtx4090-2026-07-container";
    f.precision = "int8-mixed";
    assert_int_equal(eco_store_query_records(s, &f, &v, &n), ECO_OK);
    assert_int_equal(n, 5);
    free(v);

    /* filter validation */
    f = eco_record_filter_any();
    f.precision = "INT8";
    assert_int_equal(eco_store_query_records(s, &f, &v, &n), ECO_EINVAL);
    assert_non_null(strstr(eco_last_error(), "canonical"));
    f.precision = "int4";
    assert_int_equal(eco_store_query_records(s, &f, &v, &n), ECO_EINVAL);
    f = eco_record_filter_any();
    f.origin = 7;
    assert_int_equal(eco_store_query_records(s, &f, &v, &n), ECO_EINVAL);
    eco_store_close(s);
}

static void test_replications_and_runs(void **state)
{
    (void)state;
    eco_store *s = open_fresh("rep.db");
    const char *doc = "{\"schema_version\": \"2.0.0\"}";
    int64_t id1, id2;
    bool inserted;
    assert_int_equal(eco_store_add_replication(s, "a.energy.json", doc, strlen(doc), ECO_VALIDATION_INVALID,
                                               "/: missing required property", &id1, &inserted), ECO_OK);
    assert_true(inserted);
    assert_int_equal(eco_store_add_replication(s, "again.json", doc, strlen(doc), ECO_VALIDATION_VALID, "", &id2,
                                               &inserted), ECO_OK);
    assert_false(inserted);
    assert_int_equal(id1, id2);
    assert_int_equal(eco_store_add_replication(s, "nul.json", "{\0}", 3, ECO_VALIDATION_VALID, "", NULL, &inserted),
                     ECO_EFORMAT);
    assert_int_equal(eco_store_add_replication(s, "empty.json", "", 0, ECO_VALIDATION_VALID, "", NULL, &inserted),
                     ECO_EINVAL);
    /* one measurement once, whatever its run id or layout: the same card and results (numbers by value) are refused;
     * results with a key the stored ones lack are another measurement (they had crashed the comparison) */
    const char *m1 = "{\"run_id\":\"r1\",\"environment\":{\"gpu\":{\"uuid\":\"GPU-1\"}},\"results\":[{\"a\":1,\"b\":2.5}]}";
    const char *m2 = "{\"environment\":{\"gpu\":{\"uuid\":\"GPU-1\"}},\"results\":[{\"a\":1,\"c\":2.5}]}";
    const char *m3 = "{\"run_id\":\"r3\", \"environment\": {\"gpu\": {\"uuid\": \"GPU-1\"}}, \"results\": [{\"a\": 1.0, \"b\": 2.50}]}";
    const char *m4 = "{\"run_id\":\"r4\",\"environment\":{\"gpu\":{\"uuid\":\"GPU-2\"}},\"results\":[{\"a\":1,\"b\":2.5}]}";
    int64_t mid;
    assert_int_equal(eco_store_add_replication(s, "m1.json", m1, strlen(m1), ECO_VALIDATION_VALID, "", &mid, &inserted), ECO_OK);
    assert_true(inserted);
    assert_int_equal(eco_store_add_replication(s, "m2.json", m2, strlen(m2), ECO_VALIDATION_VALID, "", NULL, &inserted), ECO_OK);
    assert_true(inserted);
    assert_int_equal(eco_store_add_replication(s, "m3.json", m3, strlen(m3), ECO_VALIDATION_VALID, "", NULL, &inserted), ECO_EINVAL);
    assert_string_equal(eco_last_error_field(), "results");
    assert_non_null(strstr(eco_last_error(), "stored as replication #"));
    assert_int_equal(eco_store_add_replication(s, "m4.json", m4, strlen(m4), ECO_VALIDATION_VALID, "", NULL, &inserted), ECO_OK);
    assert_true(inserted); /* another card's */
    eco_replication *r;
    size_t n, total;
    assert_int_equal(eco_store_list_replications(s, 0, 10, &r, &n, &total), ECO_OK);
    assert_int_equal(n, 4);
    assert_int_equal(total, 4);
    assert_null(r[0].doc); /* a listing reads no document */
    eco_replication one;
    assert_int_equal(eco_store_get_replication(s, r[0].id, &one), ECO_OK);
    assert_string_equal(one.doc, doc);
    free(one.doc);
    assert_string_equal(r[0].name, "a.energy.json");
    assert_int_equal(r[0].validation, ECO_VALIDATION_INVALID);
    char sha[65];
    eco_sha256_hex(doc, strlen(doc), sha);
    assert_string_equal(r[0].sha256, sha);
    assert_int_equal(strlen(r[0].submitted_at), 20);
    eco_store_free_replications(r, n);

    assert_int_equal(eco_store_add_run(s, "run-1", "{\"a\":1}", 7, &inserted), ECO_OK);
    assert_true(inserted);
    assert_int_equal(eco_store_add_run(s, "run-1", "{\"a\":1}", 7, &inserted), ECO_OK); /* the same: a no-op */
    assert_false(inserted);
    /* another document under a stored run id is refused, and the stored one kept */
    assert_int_equal(eco_store_add_run(s, "run-1", "{\"a\":2}", 7, &inserted), ECO_EINVAL);
    assert_false(inserted);
    assert_string_equal(eco_last_error_field(), "run_id");
    char *got;
    assert_int_equal(eco_store_get_run(s, "run-1", &got), ECO_OK);
    assert_string_equal(got, "{\"a\":1}");
    free(got);
    assert_int_equal(eco_store_get_run(s, "run-2", &got), ECO_ENOTFOUND);
    size_t c;
    assert_int_equal(eco_store_count(s, "runs", &c), ECO_OK);
    assert_int_equal(c, 1);
    assert_int_equal(eco_store_count(s, "sqlite_schema", &c), ECO_EINVAL);
    eco_store_close(s);
}

static void test_export_csv_and_json(void **state)
{
    (void)state;
    char dir[1024];
    eco_store *s = open_fresh("exp.db");
    eco_import_report rep;
    assert_int_equal(eco_store_import_reference_dir(s, ref_dir(dir, sizeof dir), &rep), ECO_OK);
    eco_record_filter f = eco_record_filter_any();
    f.arch = "ada";
    f.precision = "nf4";
    char *buf = NULL;
    size_t len = 0, n;
    FILE *mem = open_memstream(&buf, &len);
    assert_int_equal(eco_store_export_records(s, &f, ECO_EXPORT_CSV, mem, &n), ECO_OK);
    fclose(mem);
    assert_int_equal(n, 14);
    /* parse our own output back with the reader: header + 14 rows, notes with commas survive quoting */
    eco_csv *c;
    assert_int_equal(eco_csv_open(buf, len, "export", &c), ECO_OK);
    eco_csv_row row;
    bool eof;
    size_t rows = 0, cols = 0;
    int c_source = -1, c_delta = -1, c_note = -1;
    while (eco_csv_next(c, &row, &eof) == ECO_OK && !eof) {
        if (!rows) {
            cols = row.n_fields;
            for (size_t i = 0; i < row.n_fields; i++) {
                if (!strcmp(row.fields[i], "source")) c_source = (int)i;
                if (!strcmp(row.fields[i], "delta_pct")) c_delta = (int)i;
                if (!strcmp(row.fields[i], "note")) c_note = (int)i;
            }
        } else {
            assert_int_equal(row.n_fields, cols);
            if (!strcmp(row.fields[c_source], "measured.csv:10")) {
                assert_near(strtod(row.fields[c_delta], NULL), -28.46, 0.005);
                assert_non_null(strstr(row.fields[c_note], "; source: 1 trial x 10 iterations"));
            }
        }
        rows++;
    }
    eco_csv_close(c);
    assert_int_equal(rows, 15);
    free(buf);

    buf = NULL;
    mem = open_memstream(&buf, &len);
    f = eco_record_filter_any();
    f.source_file = "measured.csv";
    assert_int_equal(eco_store_export_records(s, &f, ECO_EXPORT_JSON, mem, &n), ECO_OK);
    fclose(mem);
    json_error_t jerr;
    json_t *doc = json_loadb(buf, len, 0, &jerr);
    free(buf);
    assert_non_null(doc);
    assert_int_equal(json_integer_value(json_object_get(doc, "count")), 29);
    json_t *recs = json_object_get(doc, "records");
    assert_int_equal(json_array_size(recs), 29);
    assert_non_null(strstr(json_string_value(json_object_get(doc, "attribution")), "10.5281/zenodo.19647290"));
    size_t i;
    json_t *rec;
    bool found = false;
    json_array_foreach(recs, i, rec) {
        if (strcmp(json_string_value(json_object_get(rec, "source")), "measured.csv:28")) continue;
        found = true;
        assert_near(json_real_value(json_object_get(rec, "e_quant_mj")), 10161.92, 1e-9);
        assert_near(json_real_value(json_object_get(rec, "ppl_quant")), 4.679, 1e-12);
        assert_true(json_is_null(json_object_get(rec, "e_quant_sd_mj")));
        assert_true(json_is_false(json_object_get(rec, "single_trial")));
        assert_string_equal(json_string_value(json_object_get(rec, "precision")), "int8-mixed");
    }
    assert_true(found);
    json_decref(doc);
    assert_int_equal(eco_store_export_records(s, NULL, (eco_export_format)9, stdout, &n), ECO_EINVAL);
    eco_store_close(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_migration_from_v1),
        cmocka_unit_test(test_migration_5_replication_columns),
        cmocka_unit_test(test_refuses_newer_and_foreign_databases),
        cmocka_unit_test(test_import_reference_and_reimport),
        cmocka_unit_test(test_import_shared_folder_with_manifest),
        cmocka_unit_test(test_malformed_rows_are_reported_and_skipped),
        cmocka_unit_test(test_changed_row_is_updated_not_duplicated),
        cmocka_unit_test(test_edited_file_is_checked_against_current_rows),
        cmocka_unit_test(test_link_never_targets_a_row_being_removed),
        cmocka_unit_test(test_renamed_session_is_not_kept),
        cmocka_unit_test(test_oversize_and_missing_files),
        cmocka_unit_test(test_insert_and_filters),
        cmocka_unit_test(test_replications_and_runs),
        cmocka_unit_test(test_export_csv_and_json),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
