/* Import of the reference dataset folder, driven by its manifest.csv (one line per file, several for
 * measured.csv whose rows come from different campaigns). Every row is checked; a bad row is logged with
 * file:line and skipped, the rest of the file is kept. Re-importing leaves the store unchanged. */
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "eco/stats.h"
#include "store/internal.h"

/* ---------------------------------------------------------------- small parsing helpers */

static void trim_copy(const char *in, char *out, size_t cap)
{
    while (*in && isspace((unsigned char)*in)) in++;
    size_t n = strlen(in);
    while (n && isspace((unsigned char)in[n - 1])) n--;
    if (n >= cap) n = cap - 1;
    memcpy(out, in, n);
    out[n] = '\0';
}

/* Strict: the whole (trimmed) field must be a finite number. */
static bool parse_num(const char *s, double *out)
{
    char t[64], *end;
    trim_copy(s, t, sizeof t);
    if (!t[0] || strlen(s) >= sizeof t) return false;
    double v = strtod(t, &end);
    if (*end || !isfinite(v)) return false;
    *out = v;
    return true;
}

static bool parse_int(const char *s, int *out)
{
    double v;
    if (!parse_num(s, &v) || v != floor(v) || v < -1e9 || v > 1e9) return false;
    *out = (int)v;
    return true;
}

/* "Qwen2.5-14B" -> 14, "TinyLlama-1.1B-Chat" -> 1.1: the first number directly followed by B. */
static bool params_from_name(const char *name, double *out)
{
    for (size_t i = 0; name[i]; i++) {
        if (!isdigit((unsigned char)name[i])) continue;
        if (i > 0 && (isdigit((unsigned char)name[i - 1]) || name[i - 1] == '.')) continue;
        char *end;
        double v = strtod(name + i, &end);
        if ((*end == 'B' || *end == 'b') && !isalnum((unsigned char)end[1]) && v > 0) { *out = v; return true; }
    }
    return false;
}

/* "Qwen/Qwen2-0.5B" -> "Qwen2-0.5B" (the store names models without the hub organisation). */
static const char *short_model(const char *m)
{
    const char *slash = strrchr(m, '/');
    return slash ? slash + 1 : m;
}

static void normalise(const char *in, char *out, size_t cap)
{
    size_t j = 0;
    for (size_t i = 0; in[i] && j + 1 < cap; i++)
        if (isalnum((unsigned char)in[i])) out[j++] = (char)tolower((unsigned char)in[i]);
    out[j] = '\0';
}

/* Same model under two spellings ("Mistral-7B" and "Mistral-7B-v0.1"): one normalised name prefixes the other. */
static bool same_model(const char *a, const char *b)
{
    char x[96], y[96];
    normalise(short_model(a), x, sizeof x);
    normalise(short_model(b), y, sizeof y);
    size_t nx = strlen(x), ny = strlen(y);
    if (!nx || !ny) return false;
    return !strncmp(x, y, nx < ny ? nx : ny);
}

/* Appends "; part" to a bounded note, marking truncation with "...". */
static void note_add(char *note, size_t cap, const char *part)
{
    if (!part || !*part) return;
    size_t n = strlen(note);
    int w = snprintf(note + n, cap - n, "%s%s", n ? "; " : "", part);
    if (w < 0 || (size_t)w >= cap - n) memcpy(note + cap - 4, "...", 4);
}

static const char *precision_note(eco_precision p)
{
    switch (p) {
    case ECO_PREC_INT8_MIXED: return "bitsandbytes LLM.int8() (int8 with fp16 outliers, threshold 6.0)";
    case ECO_PREC_INT8: return "bitsandbytes int8 with llm_int8_threshold=0.0 (pure int8)";
    case ECO_PREC_NF4: return "bitsandbytes NF4";
    case ECO_PREC_NF4_DQ: return "bitsandbytes NF4 with double quantization";
    default: return "";
    }
}

/* ---------------------------------------------------------------- manifest */

typedef struct {
    size_t line;
    char file[128], kind[32], match[160], session[64], session_note[512], gpu[64], date[32], model[64];
    double vram_gb;
    int tokens, iterations;
    eco_energy_basis basis;
    char method[32], backend[96], precision_map[256], flags[64], note[320], corpus[64];
} manifest_entry;

typedef struct {
    const char *names[ECO_CSV_MAX_FIELDS];
    size_t n;
} header;

static int col(const header *h, const char *name)
{
    for (size_t i = 0; i < h->n; i++)
        if (!strcmp(h->names[i], name)) return (int)i;
    return -1;
}

/* First of several accepted spellings. */
static int col_any(const header *h, const char *const *names)
{
    for (; *names; names++) {
        int c = col(h, *names);
        if (c >= 0) return c;
    }
    return -1;
}

static const char *fld(const eco_csv_row *r, int c) { return c >= 0 && (size_t)c < r->n_fields ? r->fields[c] : ""; }

/* "NF4=nf4;INT8=int8-mixed" (keys case-insensitive; "*" matches anything). */
static bool map_precision(const char *map, const char *value, eco_precision *out)
{
    char key[64], val[32];
    const char *p = map;
    while (*p) {
        const char *semi = strchr(p, ';');
        size_t len = semi ? (size_t)(semi - p) : strlen(p);
        const char *eq = memchr(p, '=', len);
        if (eq) {
            size_t kl = (size_t)(eq - p), vl = len - kl - 1;
            if (kl < sizeof key && vl < sizeof val) {
                memcpy(key, p, kl);
                key[kl] = '\0';
                memcpy(val, eq + 1, vl);
                val[vl] = '\0';
                char tv[64];
                trim_copy(value, tv, sizeof tv);
                if ((!strcmp(key, "*") || !strcasecmp(key, tv)) && eco_precision_parse(val, out) == ECO_OK) return true;
                eco_clear_error();
            }
        }
        p += len + (semi ? 1 : 0);
    }
    return false;
}

/* "gpu=RTX 4090;note~2026-08-06": every condition must hold for the row. */
static bool entry_matches(const manifest_entry *m, const header *h, const eco_csv_row *r)
{
    char cond[160];
    const char *p = m->match;
    while (*p) {
        const char *semi = strchr(p, ';');
        size_t len = semi ? (size_t)(semi - p) : strlen(p);
        if (len >= sizeof cond) return false;
        memcpy(cond, p, len);
        cond[len] = '\0';
        char *op = strpbrk(cond, "=~");
        if (!op) return false;
        char kind = *op;
        *op = '\0';
        const char *v = fld(r, col(h, cond));
        if (kind == '=' ? strcmp(v, op + 1) != 0 : strstr(v, op + 1) == NULL) return false;
        p += len + (semi ? 1 : 0);
    }
    return true;
}

static const char *const imported_kinds[] = {"measured", "paired-rows", "replicates", "replicate-summary", "config-table",
                                             "quality-table", "batch-raw", "batch-summary", "phase-summary"};
/* Listed for provenance, read by other code (the fit's reference curves, the quality text), not imported here. */
static const char *const listed_kinds[] = {"fit-reference", "corpus"};

bool store_kind_is_imported(const char *kind)
{
    for (size_t i = 0; i < sizeof imported_kinds / sizeof imported_kinds[0]; i++)
        if (!strcmp(kind, imported_kinds[i])) return true;
    return false;
}

bool store_kind_is_dependent(const char *kind)
{
    static const char *const dependent[] = {"config-table", "replicate-summary", "quality-table", "batch-summary"};
    for (size_t i = 0; i < sizeof dependent / sizeof dependent[0]; i++)
        if (!strcmp(kind, dependent[i])) return true;
    return false;
}

static bool kind_is_known(const char *kind)
{
    for (size_t i = 0; i < sizeof listed_kinds / sizeof listed_kinds[0]; i++)
        if (!strcmp(kind, listed_kinds[i])) return true;
    return store_kind_is_imported(kind);
}

static eco_err load_manifest(const char *path, manifest_entry **out, size_t *count)
{
    static const char *const required[] = {"file", "kind", "match", "session", "session_note", "gpu", "vram_gb",
                                           "date", "model", "tokens", "basis", "method", "iterations", "backend",
                                           "precision_map", "flags", "note", "corpus"};
    *out = NULL;
    *count = 0;
    char *data;
    size_t len;
    eco_err e = eco_store_read_file(path, ECO_STORE_MAX_FILE_BYTES, &data, &len);
    if (e) return eco_fail_context("reading the manifest: ");
    eco_csv *c;
    if ((e = eco_csv_open(data, len, path, &c))) { free(data); return e; }
    eco_csv_row row;
    bool eof;
    header h = {0};
    int idx[sizeof required / sizeof required[0]];
    manifest_entry *v = NULL;
    size_t n = 0;
    char names[ECO_CSV_MAX_FIELDS][32];
    if ((e = eco_csv_next(c, &row, &eof)) || eof) {
        if (!e) e = eco_fail(ECO_EFORMAT, "%s: empty manifest", path);
        goto done;
    }
    h.n = row.n_fields;
    for (size_t i = 0; i < h.n; i++) {
        snprintf(names[i], sizeof names[i], "%s", row.fields[i]);
        h.names[i] = names[i];
    }
    for (size_t i = 0; i < sizeof required / sizeof required[0]; i++)
        if ((idx[i] = col(&h, required[i])) < 0) {
            e = eco_fail(ECO_EFORMAT, "%s: manifest has no column '%s'", path, required[i]);
            goto done;
        }
    for (;;) {
        if ((e = eco_csv_next(c, &row, &eof))) goto done;
        if (eof) break;
        if (row.n_fields != h.n) {
            e = eco_fail(ECO_EFORMAT, "%s:%zu: expected %zu fields, got %zu", path, row.line, h.n, row.n_fields);
            goto done;
        }
        manifest_entry *nv = realloc(v, (n + 1) * sizeof *v);
        if (!nv) { e = eco_fail(ECO_ENOMEM, "manifest: out of memory"); goto done; }
        v = nv;
        manifest_entry *m = &v[n++];
        memset(m, 0, sizeof *m);
        m->line = row.line;
        int k = 0;
        snprintf(m->file, sizeof m->file, "%s", row.fields[idx[k++]]);
        snprintf(m->kind, sizeof m->kind, "%s", row.fields[idx[k++]]);
        snprintf(m->match, sizeof m->match, "%s", row.fields[idx[k++]]);
        snprintf(m->session, sizeof m->session, "%s", row.fields[idx[k++]]);
        snprintf(m->session_note, sizeof m->session_note, "%s", row.fields[idx[k++]]);
        snprintf(m->gpu, sizeof m->gpu, "%s", row.fields[idx[k++]]);
        const char *vram = row.fields[idx[k++]];
        snprintf(m->date, sizeof m->date, "%s", row.fields[idx[k++]]);
        snprintf(m->model, sizeof m->model, "%s", row.fields[idx[k++]]);
        const char *tokens = row.fields[idx[k++]], *basis = row.fields[idx[k++]];
        snprintf(m->method, sizeof m->method, "%s", row.fields[idx[k++]]);
        const char *iters = row.fields[idx[k++]];
        snprintf(m->backend, sizeof m->backend, "%s", row.fields[idx[k++]]);
        snprintf(m->precision_map, sizeof m->precision_map, "%s", row.fields[idx[k++]]);
        snprintf(m->flags, sizeof m->flags, "%s", row.fields[idx[k++]]);
        snprintf(m->note, sizeof m->note, "%s", row.fields[idx[k++]]);
        snprintf(m->corpus, sizeof m->corpus, "%s", row.fields[idx[k++]]);
        if (!kind_is_known(m->kind)) { /* a typo must not drop a whole file without a word */
            char known[400] = "";
            size_t at = 0;
            for (size_t i = 0; i < sizeof imported_kinds / sizeof imported_kinds[0]; i++)
                at += (size_t)snprintf(known + at, sizeof known - at, "%s, ", imported_kinds[i]);
            for (size_t i = 0; i < sizeof listed_kinds / sizeof listed_kinds[0]; i++)
                at += (size_t)snprintf(known + at, sizeof known - at, "%s%s", i ? ", " : "", listed_kinds[i]);
            e = eco_fail(ECO_EFORMAT, "%s:%zu: unknown kind '%s' for %s (known: %s)", path, row.line, m->kind, m->file, known);
            goto done;
        }
        if (!m->file[0] || strchr(m->file, '/') || strchr(m->file, '\\') || m->file[0] == '.') {
            e = eco_fail(ECO_EFORMAT, "%s:%zu: file '%s' must be a plain name inside the folder", path, row.line, m->file);
            goto done;
        }
        if ((*vram && !parse_num(vram, &m->vram_gb)) || (*tokens && !parse_int(tokens, &m->tokens)) ||
            (*iters && !parse_int(iters, &m->iterations))) {
            e = eco_fail(ECO_EFORMAT, "%s:%zu: vram_gb, tokens and iterations must be numbers", path, row.line);
            goto done;
        }
        if (!strcmp(basis, "gross")) m->basis = ECO_BASIS_GROSS;
        else if (!strcmp(basis, "net")) m->basis = ECO_BASIS_NET;
        else if (!*basis || !strcmp(basis, "unknown")) m->basis = ECO_BASIS_UNKNOWN;
        else {
            e = eco_fail(ECO_EFORMAT, "%s:%zu: basis '%s' is not gross, net or unknown", path, row.line, basis);
            goto done;
        }
    }
done:
    eco_csv_close(c);
    free(data);
    if (e) { free(v); return e; }
    *out = v;
    *count = n;
    return ECO_OK;
}

/* ---------------------------------------------------------------- import context */

typedef struct {
    eco_store *s;
    eco_import_report *rep;
    int64_t import_id;
    const char *file; /* current file name */
} ctx;

static eco_err reject(ctx *x, size_t line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static eco_err reject(ctx *x, size_t line, const char *fmt, ...)
{
    char msg[448], full[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(full, sizeof full, "%s:%zu: %s", x->file, line, msg);
    x->rep->rows_rejected++;
    if (!x->rep->first_error[0]) snprintf(x->rep->first_error, sizeof x->rep->first_error, "%s", full);
    return store_log_import_error(x->s, x->import_id, x->file, line, msg);
}

static void count(ctx *x, store_upsert r)
{
    if (r == STORE_INSERTED) x->rep->rows_inserted++;
    else if (r == STORE_UPDATED) x->rep->rows_updated++;
    else x->rep->rows_unchanged++;
}

/* SQL: the row's source (column col, "<file>:<line>") is a line of a file this import read to its end. */
#define OF_A_FILE_READ(col) \
    "EXISTS (SELECT 1 FROM temp.import_read r WHERE substr(" col ", 1, length(r.file) + 1) = r.file || ':')"

/* SQL: a stored record that a row may be linked to or named after: one this import gave, or one of a file it will
 * not give again (tried and could not read, so its rows are kept, or not in the manifest). Never a row of a file read
 * to its end that no line gave again (remove_stale_rows takes those after the pass), nor one of a file still to be
 * read: which of two repeating rows is the record must follow the manifest's order, not the store's history. */
#define LINKABLE                                                                                                   \
    "(id IN (SELECT id FROM temp.import_touched) OR (source_file NOT IN (SELECT file FROM temp.import_read) AND " \
    "source_file NOT IN (SELECT file FROM temp.import_pending)))"

/* Notes in one of the import's temp tables (a statement with one placeholder) that this import gave a row, a line or
 * read a file (what remove_stale_rows keeps), or has a file still to read (LINKABLE). text NULL binds id. */
static eco_err mark(ctx *x, const char *insert, const char *text, int64_t id)
{
    sqlite3_stmt *st = store_stmt(x->s, insert);
    if (!st) return eco_last_error_code();
    if (text) store_bind_text(st, 1, text, false);
    else sqlite3_bind_int64(st, 1, id);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? ECO_OK : store_db_fail(x->s, "noting what this import read");
}

/* A source row into the store with its manifest entry's flags, counted; id (may be NULL) gets its row id. */
static eco_err store_row(ctx *x, const manifest_entry *m, eco_record *r, size_t line, const char *raw_note, int64_t *id)
{
    snprintf(r->flags, sizeof r->flags, "%s", m->flags);
    store_record_meta meta = {x->file, line, raw_note};
    store_upsert res;
    int64_t got = 0;
    eco_err e = store_upsert_record(x->s, r, &meta, &res, &got);
    if (!e) count(x, res);
    if (id) *id = got;
    if (!e && got > 0) /* this file still holds the row: not stale (remove_stale_rows) */
        e = mark(x, "INSERT OR IGNORE INTO temp.import_touched (id) VALUES (?)", NULL, got);
    return e;
}

/* After a pass over the files: the stored rows of a file read to its end that no row of it gave again are gone from
 * it (an edited or reordered file keys its rows by line), so the store mirrors the file instead of keeping both;
 * links, quality, batch and phase rows from its lines that this import did not give again go too. After each pass,
 * not after each file: a link made in a pass must not lose its row to a later file's removal. */
static eco_err remove_stale_rows(ctx *x, bool last_pass)
{
    char links[320];
    snprintf(links, sizeof links, "DELETE FROM import_links WHERE import_id <> %lld AND " OF_A_FILE_READ("import_links.source"),
             (long long)x->import_id);
    eco_err e = store_exec(x->s, "BEGIN IMMEDIATE");
    if (!e) e = store_exec(x->s, "DELETE FROM records WHERE origin = 'reference' AND source_file IN (SELECT file FROM "
                                 "temp.import_read) AND id NOT IN (SELECT id FROM temp.import_touched)");
    if (!e) x->rep->rows_removed += (size_t)sqlite3_changes(x->s->db);
    if (!e) e = store_exec(x->s, links);
    static const char *const keyed_by_line[] = {"quality", "batch_rows", "phase_rows"};
    for (size_t i = 0; i < sizeof keyed_by_line / sizeof keyed_by_line[0] && !e; i++) {
        char sql[320];
        snprintf(sql, sizeof sql, "DELETE FROM %s AS t WHERE source NOT IN (SELECT source FROM temp.import_sources) AND "
                 OF_A_FILE_READ("t.source"), keyed_by_line[i]);
        e = store_exec(x->s, sql);
        if (!e) x->rep->rows_removed += (size_t)sqlite3_changes(x->s->db);
    }
    /* A campaign of a file read to its end that no row names any more (its session renamed in the manifest, or all
     * its rows gone) is gone too, so the sessions listed are the files' (after the last pass: a session a
     * stand-alone file named may still be named by a dependent file's rows). */
    if (!e && last_pass)
        e = store_exec(x->s, "DELETE FROM sessions AS s WHERE source IN (SELECT file FROM temp.import_read) AND "
                             "NOT EXISTS (SELECT 1 FROM records r WHERE r.session = s.id) AND "
                             "NOT EXISTS (SELECT 1 FROM batch_rows b WHERE b.session = s.id) AND "
                             "NOT EXISTS (SELECT 1 FROM phase_rows p WHERE p.session = s.id)");
    if (!e) e = store_exec(x->s, "COMMIT");
    if (e) sqlite3_exec(x->s->db, "ROLLBACK", NULL, NULL, NULL);
    return e;
}

static eco_err session_from_entry(ctx *x, const manifest_entry *m, const char *gpu, const char *arch,
                                  const char *software)
{
    eco_session ss;
    memset(&ss, 0, sizeof ss);
    snprintf(ss.id, sizeof ss.id, "%s", m->session);
    snprintf(ss.gpu, sizeof ss.gpu, "%s", m->gpu[0] ? m->gpu : gpu);
    snprintf(ss.arch, sizeof ss.arch, "%s", arch);
    snprintf(ss.date, sizeof ss.date, "%s", m->date);
    snprintf(ss.software, sizeof ss.software, "%s", software && *software ? software : m->backend);
    ss.tokens = m->tokens;
    ss.basis = m->basis;
    snprintf(ss.method, sizeof ss.method, "%s", m->method[0] ? m->method : "unknown");
    snprintf(ss.source, sizeof ss.source, "%s", m->file);
    snprintf(ss.note, sizeof ss.note, "%s", m->session_note);
    return store_upsert_session(x->s, &ss);
}

/* Stores one key->hash state check and upsert for a table keyed by source. */
static eco_err keyed_state(ctx *x, const char *select_sql, const char *source, const char *hash, store_upsert *st_out,
                           int64_t *id)
{
    sqlite3_stmt *st = store_stmt(x->s, select_sql);
    if (!st) return eco_last_error_code();
    store_bind_text(st, 1, source, false);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        char old[65];
        if (id) *id = sqlite3_column_int64(st, 0);
        store_column_text(st, 1, old, sizeof old);
        *st_out = strcmp(old, hash) ? STORE_UPDATED : STORE_UNCHANGED;
    } else {
        *st_out = STORE_INSERTED;
    }
    sqlite3_reset(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) return store_db_fail(x->s, "looking up a row");
    /* this file still holds the line: its row is not stale (remove_stale_rows) */
    return mark(x, "INSERT OR IGNORE INTO temp.import_sources (source) VALUES (?)", source, 0);
}

static eco_err put_quality(ctx *x, const char *source, int64_t record_id, const char *gpu, const char *model,
                           eco_precision p, const char *corpus, double ppl_fp16, double ppl_quant, int tokens_evaluated,
                           store_upsert *res)
{
    static const char find[] = "SELECT id, content_hash FROM quality WHERE source = ?";
    static const char put[] =
        "INSERT INTO quality (source, record_id, gpu, model, precision, corpus, ppl_fp16, ppl_quant, tokens_evaluated, "
        "content_hash) VALUES (?,?,?,?,?,?,?,?,?,?) ON CONFLICT(source) DO UPDATE SET record_id=excluded.record_id, "
        "gpu=excluded.gpu, model=excluded.model, precision=excluded.precision, corpus=excluded.corpus, "
        "ppl_fp16=excluded.ppl_fp16, ppl_quant=excluded.ppl_quant, tokens_evaluated=excluded.tokens_evaluated, "
        "content_hash=excluded.content_hash";
    char buf[512], hash[65];
    int n = snprintf(buf, sizeof buf, "%lld|%s|%s|%s|%s|%.17g|%.17g|%d", (long long)record_id, gpu, model,
                     eco_precision_name(p), corpus, ppl_fp16, ppl_quant, tokens_evaluated);
    eco_sha256_hex(buf, n > 0 && (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1, hash);
    store_upsert state;
    eco_err e = keyed_state(x, find, source, hash, &state, NULL);
    if (e) return e;
    if (res) *res = state;
    if (state == STORE_UNCHANGED) return ECO_OK;
    sqlite3_stmt *st = store_stmt(x->s, put);
    if (!st) return eco_last_error_code();
    int i = 1;
    store_bind_text(st, i++, source, false);
    if (record_id > 0) sqlite3_bind_int64(st, i++, record_id);
    else sqlite3_bind_null(st, i++);
    store_bind_text(st, i++, gpu, false);
    store_bind_text(st, i++, model, false);
    store_bind_text(st, i++, eco_precision_name(p), false);
    store_bind_text(st, i++, corpus, false);
    store_bind_double(st, i++, ppl_fp16);
    store_bind_double(st, i++, ppl_quant);
    if (tokens_evaluated > 0) sqlite3_bind_int(st, i++, tokens_evaluated);
    else sqlite3_bind_null(st, i++);
    store_bind_text(st, i++, hash, false);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? ECO_OK : store_db_fail(x->s, "storing a quality row");
}

static eco_err put_link(ctx *x, const char *source, int64_t record_id, const char *reason)
{
    static const char put[] = "INSERT INTO import_links (source, record_id, reason, import_id) VALUES (?,?,?,?) "
                              "ON CONFLICT(source) DO UPDATE SET record_id = excluded.record_id, reason = excluded.reason, "
                              "import_id = excluded.import_id";
    sqlite3_stmt *st = store_stmt(x->s, put);
    if (!st) return eco_last_error_code();
    store_bind_text(st, 1, source, false);
    sqlite3_bind_int64(st, 2, record_id);
    store_bind_text(st, 3, reason, false);
    sqlite3_bind_int64(st, 4, x->import_id);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE) return store_db_fail(x->s, "storing a link");
    x->rep->rows_linked++;
    return ECO_OK;
}

/* The reader's message without its "file:line: " prefix (reject adds its own). */
static const char *csv_msg(void)
{
    const char *m = eco_last_error(), *p = strstr(m, ": ");
    return p ? p + 2 : m;
}

/* The next well-formed data row: counts every row read, rejects (file:line) malformed CSV and, when n_fields is
 * not 0, rows with another field count, and moves on. *got is false at the end of the file. */
static eco_err next_row(ctx *x, eco_csv *c, size_t n_fields, eco_csv_row *row, bool *got)
{
    for (;;) {
        bool eof;
        eco_err e = eco_csv_next(c, row, &eof);
        if (eof) { *got = false; return ECO_OK; }
        x->rep->rows_read++;
        if (e) {
            if (e == ECO_ENOMEM || (e = reject(x, row->line, "malformed CSV: %s", csv_msg()))) return e;
            continue;
        }
        if (n_fields && row->n_fields != n_fields) {
            if ((e = reject(x, row->line, "expected %zu fields, got %zu", n_fields, row->n_fields))) return e;
            continue;
        }
        *got = true;
        return ECO_OK;
    }
}

static bool parse_cv_from_note(const char *note, double *cv)
{
    const char *p = strstr(note, "CV ");
    if (!p) return false;
    char *end;
    double v = strtod(p + 3, &end);
    if (end == p + 3 || *end != '%' || !(v >= 0) || !isfinite(v)) return false;
    *cv = v;
    return true;
}

/* ---------------------------------------------------------------- measured.csv */

static eco_err import_measured(ctx *x, const manifest_entry *entries, size_t n_entries, const header *h,
                               eco_csv *c)
{
    static const char *const need[] = {"gpu", "arch", "vram_gb", "model", "params_b", "precision", "energy_fp16_j1k",
                                       "energy_quant_j1k", "n_runs", "n_trials", "energy_quant_std_j1k", "note"};
    int ci[12];
    for (size_t i = 0; i < 12; i++)
        if ((ci[i] = col(h, need[i])) < 0) return eco_fail(ECO_EFORMAT, "%s: no column '%s'", x->file, need[i]);
    eco_csv_row row;
    bool eof;
    for (;;) {
        eco_err e = eco_csv_next(c, &row, &eof);
        if (eof) break;
        if (e) {
            if (e == ECO_ENOMEM) return e;
            x->rep->rows_read++;
            if ((e = reject(x, row.line, "malformed CSV: %s", csv_msg()))) return e;
            continue;
        }
        x->rep->rows_read++;
        if (row.n_fields != h->n) {
            if ((e = reject(x, row.line, "expected %zu fields, got %zu", h->n, row.n_fields))) return e;
            continue;
        }
        const manifest_entry *m = NULL;
        for (size_t i = 0; i < n_entries && !m; i++)
            if (entry_matches(&entries[i], h, &row)) m = &entries[i];
        if (!m) {
            if ((e = reject(x, row.line, "no manifest entry describes the protocol of gpu '%s'", fld(&row, ci[0]))))
                return e;
            continue;
        }
        eco_record r;
        memset(&r, 0, sizeof r);
        double params, ef, eq, sd = NAN;
        int n_runs, n_trials;
        const char *bad = NULL;
        char badval[64] = "";
        eco_precision p;
        if (!parse_num(fld(&row, ci[4]), &params)) bad = "params_b", snprintf(badval, sizeof badval, "%s", fld(&row, ci[4]));
        else if (!parse_num(fld(&row, ci[6]), &ef)) bad = "energy_fp16_j1k", snprintf(badval, sizeof badval, "%s", fld(&row, ci[6]));
        else if (!parse_num(fld(&row, ci[7]), &eq)) bad = "energy_quant_j1k", snprintf(badval, sizeof badval, "%s", fld(&row, ci[7]));
        else if (!parse_int(fld(&row, ci[8]), &n_runs)) bad = "n_runs", snprintf(badval, sizeof badval, "%s", fld(&row, ci[8]));
        else if (!parse_int(fld(&row, ci[9]), &n_trials)) bad = "n_trials", snprintf(badval, sizeof badval, "%s", fld(&row, ci[9]));
        else if (*fld(&row, ci[10]) && !parse_num(fld(&row, ci[10]), &sd))
            bad = "energy_quant_std_j1k", snprintf(badval, sizeof badval, "%s", fld(&row, ci[10]));
        if (bad) {
            if ((e = reject(x, row.line, "%s '%s' is not a number", bad, badval))) return e;
            continue;
        }
        if (!map_precision(m->precision_map, fld(&row, ci[5]), &p) || p == ECO_PREC_FP16) {
            if ((e = reject(x, row.line, "unknown precision '%s' (this file maps %s)", fld(&row, ci[5]), m->precision_map)))
                return e;
            continue;
        }
        if (!(ef > 0) || !(eq > 0) || (isfinite(sd) && sd < 0)) {
            if ((e = reject(x, row.line, "energies must be positive (fp16 %g, quant %g, sd %g)", ef, eq, sd))) return e;
            continue;
        }
        if (n_runs < 1 || n_trials < 1) {
            if ((e = reject(x, row.line, "n_runs and n_trials must be >= 1 (got %d, %d)", n_runs, n_trials))) return e;
            continue;
        }
        double vram = 0;
        if (*fld(&row, ci[2]) && !parse_num(fld(&row, ci[2]), &vram)) vram = 0;
        snprintf(r.gpu, sizeof r.gpu, "%s", fld(&row, ci[0]));
        snprintf(r.arch, sizeof r.arch, "%s", fld(&row, ci[1]));
        snprintf(r.model, sizeof r.model, "%s", fld(&row, ci[3]));
        r.vram_gb = vram;
        r.params_b = params;
        r.precision = p;
        r.batch = 1;
        r.e_fp16_mj = ef;
        r.e_quant_mj = eq;
        r.e_fp16_sd_mj = NAN;
        r.e_quant_sd_mj = sd;
        r.cv_pct = NAN;
        const char *src_note = fld(&row, ci[11]);
        if (!parse_cv_from_note(src_note, &r.cv_pct) && isfinite(sd)) r.cv_pct = 100.0 * sd / eq;
        r.n_trials = n_trials;
        r.n_iterations = m->iterations > 0 ? m->iterations : n_runs;
        r.tokens = m->tokens;
        r.basis = m->basis;
        snprintf(r.method, sizeof r.method, "%s", m->method);
        snprintf(r.backend, sizeof r.backend, "%s", m->backend);
        r.origin = ECO_ORIGIN_REFERENCE;
        snprintf(r.session, sizeof r.session, "%s", m->session);
        snprintf(r.source, sizeof r.source, "%s:%zu", x->file, row.line);
        r.single_trial = n_trials < 2;
        note_add(r.note, sizeof r.note, precision_note(p));
        note_add(r.note, sizeof r.note, m->note);
        if (src_note[0]) {
            char part[300];
            snprintf(part, sizeof part, "source: %s", src_note);
            note_add(r.note, sizeof r.note, part);
        }
        if (eco_record_check(&r)) {
            if ((e = reject(x, row.line, "malformed CSV: %s", csv_msg()))) return e;
            continue;
        }
        if ((e = session_from_entry(x, m, r.gpu, r.arch, NULL))) return e;
        if ((e = store_row(x, m, &r, row.line, src_note, NULL))) return e;
    }
    return ECO_OK;
}

/* ---------------------------------------------------------------- RTX 4090 session files */

typedef struct {
    size_t line;
    eco_record r;
    double ppl_q, ppl_f;
    int q_tokens;
    char corpus[80], date[32], software[96], hf_model[96];
} session_row;

static const char *const SESSION_COLS[] = {"model", "params_b", "precision", "gpu", "gpu_arch", "batch_size",
                                           "generated_tokens_per_iter", "decode_iterations", "energy_j_per_1k_tok",
                                           "fp16_energy_j_per_1k_tok", "n_trials", NULL};

/* Parses one row of the rtx4090_* format; returns false (after rejecting it) when it is malformed. */
static eco_err parse_session_row(ctx *x, const manifest_entry *m, const header *h, const eco_csv_row *row,
                                 session_row *out, bool *ok)
{
    *ok = false;
    memset(out, 0, sizeof *out);
    out->line = row->line;
    eco_record *r = &out->r;
    if (row->n_fields != h->n) return reject(x, row->line, "expected %zu fields, got %zu", h->n, row->n_fields);
    double params, eq, ef;
    int batch, tokens, iters, trials;
    const struct { const char *name; double *d; int *i; } nums[] = {
        {"params_b", &params, NULL}, {"energy_j_per_1k_tok", &eq, NULL}, {"fp16_energy_j_per_1k_tok", &ef, NULL},
        {"batch_size", NULL, &batch}, {"generated_tokens_per_iter", NULL, &tokens}, {"decode_iterations", NULL, &iters},
        {"n_trials", NULL, &trials},
    };
    for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++) {
        const char *v = fld(row, col(h, nums[i].name));
        if (nums[i].d ? !parse_num(v, nums[i].d) : !parse_int(v, nums[i].i))
            return reject(x, row->line, "%s '%s' is not a number", nums[i].name, v);
    }
    const char *prec = fld(row, col(h, "precision"));
    if (!map_precision(m->precision_map, prec, &r->precision) || r->precision == ECO_PREC_FP16)
        return reject(x, row->line, "unknown precision '%s' (this file maps %s)", prec, m->precision_map);
    if (!(eq > 0) || !(ef > 0)) return reject(x, row->line, "energies must be positive (fp16 %g, quant %g)", ef, eq);
    if (batch < 1 || tokens < 1 || iters < 1 || trials < 1)
        return reject(x, row->line, "batch_size, generated_tokens_per_iter, decode_iterations and n_trials must be >= 1");
    snprintf(r->gpu, sizeof r->gpu, "%s", m->gpu[0] ? m->gpu : fld(row, col(h, "gpu")));
    snprintf(r->arch, sizeof r->arch, "%s", fld(row, col(h, "gpu_arch")));
    snprintf(out->hf_model, sizeof out->hf_model, "%s", fld(row, col(h, "model")));
    snprintf(r->model, sizeof r->model, "%.*s", (int)sizeof r->model - 1, short_model(out->hf_model));
    r->vram_gb = m->vram_gb;
    r->params_b = params;
    r->batch = batch;
    r->e_fp16_mj = ef;
    r->e_quant_mj = eq;
    r->e_fp16_sd_mj = r->e_quant_sd_mj = r->cv_pct = NAN;
    r->n_trials = trials;
    r->n_iterations = iters;
    r->tokens = tokens;
    r->basis = m->basis;
    snprintf(r->method, sizeof r->method, "%s", m->method);
    snprintf(out->software, sizeof out->software, "torch %s; transformers %s; bitsandbytes %s; driver %s",
             fld(row, col(h, "torch")), fld(row, col(h, "transformers")), fld(row, col(h, "bitsandbytes")),
             fld(row, col(h, "nvidia_driver")));
    snprintf(r->backend, sizeof r->backend, "%s", out->software);
    r->origin = ECO_ORIGIN_REFERENCE;
    snprintf(r->session, sizeof r->session, "%s", m->session);
    snprintf(out->date, sizeof out->date, "%.10s", fld(row, col(h, "timestamp_utc")));
    out->ppl_q = out->ppl_f = NAN;
    double v;
    if (parse_num(fld(row, col(h, "perplexity")), &v) && v > 0) out->ppl_q = v;
    if (parse_num(fld(row, col(h, "fp16_perplexity")), &v) && v > 0) out->ppl_f = v;
    if (!parse_int(fld(row, col(h, "quality_tokens_evaluated")), &out->q_tokens)) out->q_tokens = 0;
    const char *sha = fld(row, col(h, "quality_corpus_sha256"));
    if (*sha) snprintf(out->corpus, sizeof out->corpus, "sha256:%.64s", sha);
    if (eco_record_check(r)) return reject(x, row->line, "%s", eco_last_error());
    *ok = true;
    return ECO_OK;
}

static eco_err check_cols(ctx *x, const header *h, const char *const *need)
{
    for (; *need; need++)
        if (col(h, *need) < 0) return eco_fail(ECO_EFORMAT, "%s: no column '%s'", x->file, *need);
    return ECO_OK;
}

static eco_err import_paired(ctx *x, const manifest_entry *m, const header *h, eco_csv *c)
{
    eco_err e = check_cols(x, h, SESSION_COLS);
    if (e) return e;
    eco_csv_row row;
    bool ok;
    session_row sr;
    for (;;) {
        bool got;
        if ((e = next_row(x, c, 0, &row, &got))) return e;
        if (!got) break;
        if ((e = parse_session_row(x, m, h, &row, &sr, &ok))) return e;
        if (!ok) continue;
        snprintf(sr.r.source, sizeof sr.r.source, "%s:%zu", x->file, row.line);
        sr.r.single_trial = sr.r.n_trials < 2;
        note_add(sr.r.note, sizeof sr.r.note, precision_note(sr.r.precision));
        note_add(sr.r.note, sizeof sr.r.note, "own same-session fp16 baseline");
        char part[160];
        snprintf(part, sizeof part, "run %s; model %s", fld(&row, col(h, "run_id")), sr.hf_model);
        note_add(sr.r.note, sizeof sr.r.note, part);
        if ((e = session_from_entry(x, m, sr.r.gpu, sr.r.arch, sr.software))) return e;
        int64_t id = 0;
        if ((e = store_row(x, m, &sr.r, row.line, fld(&row, col(h, "session")), &id))) return e;
        if (isfinite(sr.ppl_q) || isfinite(sr.ppl_f))
            if ((e = put_quality(x, sr.r.source, id, sr.r.gpu, sr.r.model, sr.r.precision,
                                 sr.corpus[0] ? sr.corpus : m->corpus, sr.ppl_f, sr.ppl_q, sr.q_tokens, NULL)))
                return e;
    }
    return ECO_OK;
}

/* Replicates: one record per (model, precision, params), the mean of its replicate rows. */
static eco_err import_replicates(ctx *x, const manifest_entry *m, const header *h, eco_csv *c)
{
    eco_err e = check_cols(x, h, SESSION_COLS);
    if (e) return e;
    session_row *rows = NULL;
    size_t n = 0;
    eco_csv_row row;
    bool ok;
    for (;;) {
        bool got;
        if ((e = next_row(x, c, 0, &row, &got))) goto out;
        if (!got) break;
        session_row *nr = realloc(rows, (n + 1) * sizeof *rows);
        if (!nr) { e = eco_fail(ECO_ENOMEM, "import: out of memory"); goto out; }
        rows = nr;
        if ((e = parse_session_row(x, m, h, &row, &rows[n], &ok))) goto out;
        if (ok) n++;
    }
    bool *done = calloc(n ? n : 1, sizeof *done);
    double *q = malloc((n ? n : 1) * sizeof *q), *f = malloc((n ? n : 1) * sizeof *f);
    if (!done || !q || !f) { free(done); free(q); free(f); e = eco_fail(ECO_ENOMEM, "import: out of memory"); goto out; }
    for (size_t i = 0; i < n && !e; i++) {
        if (done[i]) continue;
        const eco_record *a = &rows[i].r;
        size_t k = 0, first = rows[i].line, last = rows[i].line;
        bool contiguous = true, ppl_same = true;
        char lines[160] = "";
        for (size_t j = i; j < n; j++) {
            const eco_record *b = &rows[j].r;
            if (done[j] || strcmp(a->model, b->model) || a->precision != b->precision || a->params_b != b->params_b ||
                a->tokens != b->tokens || a->batch != b->batch)
                continue;
            done[j] = true;
            if (k && rows[j].line != last + 1) contiguous = false;
            last = rows[j].line;
            if (!(rows[j].ppl_q == rows[i].ppl_q) && (isfinite(rows[j].ppl_q) || isfinite(rows[i].ppl_q))) ppl_same = false;
            size_t len = strlen(lines);
            snprintf(lines + len, sizeof lines - len, "%s%zu", k ? "," : "", rows[j].line);
            q[k] = b->e_quant_mj;
            f[k] = b->e_fp16_mj;
            k++;
        }
        eco_record r = *a;
        if (contiguous && k > 1) snprintf(r.source, sizeof r.source, "%s:%zu-%zu", x->file, first, last);
        else snprintf(r.source, sizeof r.source, "%.64s:%.90s", x->file, lines);
        r.n_trials = (int)k;
        r.single_trial = k < 2;
        r.e_quant_mj = eco_mean(q, k);
        r.e_fp16_mj = eco_mean(f, k);
        r.e_quant_sd_mj = k > 1 ? eco_sd(q, k) : NAN;
        r.e_fp16_sd_mj = k > 1 ? eco_sd(f, k) : NAN;
        r.cv_pct = k > 1 ? eco_cv_pct(q, k) : NAN;
        r.note[0] = '\0';
        note_add(r.note, sizeof r.note, precision_note(r.precision));
        char part[320];
        snprintf(part, sizeof part, "mean of %zu replicates (lines %.100s), each with its own fp16 baseline; SD (n-1) and "
                 "CV across replicates", k, lines);
        note_add(r.note, sizeof r.note, part);
        note_add(r.note, sizeof r.note, m->note);
        if (!ppl_same) note_add(r.note, sizeof r.note, "perplexity differs across replicates: first kept");
        if ((e = session_from_entry(x, m, r.gpu, r.arch, rows[i].software))) break;
        int64_t id = 0;
        if ((e = store_row(x, m, &r, first, "", &id))) break;
        if (isfinite(rows[i].ppl_q) || isfinite(rows[i].ppl_f))
            e = put_quality(x, r.source, id, r.gpu, r.model, r.precision,
                            rows[i].corpus[0] ? rows[i].corpus : m->corpus, rows[i].ppl_f, rows[i].ppl_q,
                            rows[i].q_tokens, NULL);
    }
    free(done);
    free(q);
    free(f);
out:
    free(rows);
    return e;
}

/* The published summary of the replicates must agree with what we computed from them. */
static eco_err check_replicate_summary(ctx *x, const manifest_entry *m, const header *h, eco_csv *c)
{
    static const char *const need[] = {"model", "precision", "n_trials", "energy_j_per_1k_tok_mean",
                                       "energy_j_per_1k_tok_sd", "energy_cv_pct", "fp16_energy_j_per_1k_tok_mean",
                                       "fp16_energy_j_per_1k_tok_sd", NULL};
    static const char find[] =
        "SELECT id, source, n_trials, e_quant_mj, e_quant_sd_mj, cv_pct, e_fp16_mj, e_fp16_sd_mj FROM records "
        "WHERE session = ? AND model = ? AND precision = ? AND origin = 'reference' AND " LINKABLE;
    eco_err e = check_cols(x, h, need);
    if (e) return e;
    eco_csv_row row;
    for (;;) {
        bool got;
        if ((e = next_row(x, c, h->n, &row, &got))) return e;
        if (!got) break;
        double want[5];
        int trials;
        bool good = parse_int(fld(&row, col(h, "n_trials")), &trials);
        for (int i = 0; i < 5 && good; i++) good = parse_num(fld(&row, col(h, need[3 + i])), &want[i]);
        eco_precision p;
        if (!good || !map_precision(m->precision_map, fld(&row, col(h, "precision")), &p)) {
            if ((e = reject(x, row.line, "malformed summary row (numbers or precision)"))) return e;
            continue;
        }
        sqlite3_stmt *st = store_stmt(x->s, find);
        if (!st) return eco_last_error_code();
        store_bind_text(st, 1, m->session, false);
        store_bind_text(st, 2, short_model(fld(&row, col(h, "model"))), false);
        store_bind_text(st, 3, eco_precision_name(p), false);
        int rc = sqlite3_step(st);
        if (rc != SQLITE_ROW) {
            sqlite3_reset(st);
            if (rc != SQLITE_DONE) return store_db_fail(x->s, "checking a summary");
            if ((e = reject(x, row.line, "no replicate record for %s %s in session %s", fld(&row, col(h, "model")),
                            eco_precision_name(p), m->session)))
                return e;
            continue;
        }
        int64_t id = sqlite3_column_int64(st, 0);
        char source[160];
        store_column_text(st, 1, source, sizeof source);
        int have_trials = sqlite3_column_int(st, 2);
        /* order of the summary columns: mean, sd, cv, fp16 mean, fp16 sd */
        double have[5] = {store_column_double(st, 3), store_column_double(st, 4), store_column_double(st, 5),
                          store_column_double(st, 6), store_column_double(st, 7)};
        sqlite3_reset(st);
        /* The summary rounds to 3 decimals (CV to 2). */
        const double tol[5] = {0.0015, 0.0015, 0.0051, 0.0015, 0.0015};
        const char *what[5] = {"mean", "SD", "CV", "fp16 mean", "fp16 SD"};
        int bad = trials != have_trials ? 5 : -1;
        for (int i = 0; i < 5 && bad < 0; i++)
            if (!(fabs(have[i] - want[i]) <= tol[i])) bad = i;
        if (bad >= 0) {
            if (bad == 5) e = reject(x, row.line, "summary n_trials %d but %s has %d replicates", trials, source, have_trials);
            else e = reject(x, row.line, "summary %s %.3f disagrees with %.3f computed from the replicates (%s)",
                            what[bad], want[bad], have[bad], source);
            if (e) return e;
            continue;
        }
        char src[160], reason[256];
        snprintf(src, sizeof src, "%s:%zu", x->file, row.line);
        snprintf(reason, sizeof reason, "summary row agrees with the mean, SD and CV computed from the replicates of %s",
                 source);
        if ((e = put_link(x, src, id, reason))) return e;
    }
    return ECO_OK;
}

/* ---------------------------------------------------------------- per-config tables (ecocompute-ai) */

typedef struct {
    size_t line;
    char model[64];
    eco_precision p;
    double e, sd, cv, ppl;
    int n_runs;
} config_row;

/* A record repeating an already stored reference row from another file (same class, precision, model,
 * energies within the rounding of the two files). */
static eco_err find_duplicate(ctx *x, const eco_record *r, int64_t *id, char *src, size_t cap, int *n_trials)
{
    static const char sql[] =
        "SELECT id, source, model, n_trials FROM records WHERE origin = 'reference' AND arch = ? AND precision = ? "
        "AND source_file <> ? AND abs(e_fp16_mj - ?) <= 0.0051 + 1e-6 * ? AND abs(e_quant_mj - ?) <= 0.0051 + 1e-6 * ? "
        "AND " LINKABLE " ORDER BY id NOT IN (SELECT id FROM temp.import_touched), id"; /* a row this import gave first */
    *id = 0;
    sqlite3_stmt *st = store_stmt(x->s, sql);
    if (!st) return eco_last_error_code();
    store_bind_text(st, 1, r->arch, false);
    store_bind_text(st, 2, eco_precision_name(r->precision), false);
    store_bind_text(st, 3, x->file, false);
    sqlite3_bind_double(st, 4, r->e_fp16_mj);
    sqlite3_bind_double(st, 5, r->e_fp16_mj);
    sqlite3_bind_double(st, 6, r->e_quant_mj);
    sqlite3_bind_double(st, 7, r->e_quant_mj);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        char model[64];
        store_column_text(st, 2, model, sizeof model);
        if (!same_model(model, r->model)) continue;
        *id = sqlite3_column_int64(st, 0);
        store_column_text(st, 1, src, cap);
        if (n_trials) *n_trials = sqlite3_column_int(st, 3);
        break;
    }
    sqlite3_reset(st);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? ECO_OK : store_db_fail(x->s, "looking for duplicates");
}

/* n_trials of the campaign's stored rows for this model (the per-config tables do not give it), and the name those
 * rows spell it with (into name; "" when none), so one campaign's model is one model in every listing. */
static int campaign_trials(ctx *x, const char *session, const char *model, char *name, size_t cap)
{
    name[0] = '\0';
    static const char sql[] =
        "SELECT model, n_trials FROM records WHERE session = ? AND source_file <> ? AND " LINKABLE " ORDER BY id";
    sqlite3_stmt *st = store_stmt(x->s, sql);
    if (!st) { eco_clear_error(); return 0; }
    store_bind_text(st, 1, session, false);
    store_bind_text(st, 2, x->file, false);
    int trials = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        char m[64];
        store_column_text(st, 0, m, sizeof m);
        if (same_model(m, model)) { trials = sqlite3_column_int(st, 1); snprintf(name, cap, "%s", m); break; }
    }
    sqlite3_reset(st);
    return trials;
}

static eco_err import_config_table(ctx *x, const manifest_entry *m, const header *h, eco_csv *c)
{
    static const char *const energy_names[] = {"energy_j_1k", "energy_per_1k_tokens_mean", "energy_per_1k_tokens_j", NULL};
    static const char *const sd_names[] = {"energy_per_1k_tokens_std", "energy_j_1k_std", NULL};
    static const char *const cv_names[] = {"cv_percent", "cv_pct", NULL};
    static const char *const ppl_names[] = {"ppl", "perplexity", NULL};
    static const char *const runs_names[] = {"n_runs", NULL};
    int c_model = col(h, "model"), c_config = col(h, "config"), c_e = col_any(h, energy_names);
    int c_sd = col_any(h, sd_names), c_cv = col_any(h, cv_names), c_ppl = col_any(h, ppl_names),
        c_runs = col_any(h, runs_names);
    if (c_model < 0 || c_config < 0 || c_e < 0)
        return eco_fail(ECO_EFORMAT, "%s: needs columns model, config and an energy column", x->file);
    const char *arch;
    if (eco_arch_from_gpu_name(m->gpu, &arch)) return eco_fail_context("%s: manifest gpu: ", x->file);

    config_row *rows = NULL;
    size_t n = 0;
    eco_csv_row row;
    bool eof;
    eco_err e = ECO_OK;
    for (;;) {
        e = eco_csv_next(c, &row, &eof);
        if (eof) { e = ECO_OK; break; }
        x->rep->rows_read++;
        if (e) {
            if (e == ECO_ENOMEM || (e = reject(x, row.line, "malformed CSV: %s", csv_msg()))) goto out;
            continue;
        }
        if (row.n_fields != h->n) {
            if ((e = reject(x, row.line, "expected %zu fields, got %zu", h->n, row.n_fields))) goto out;
            continue;
        }
        config_row cr = {.line = row.line, .sd = NAN, .cv = NAN, .ppl = NAN};
        snprintf(cr.model, sizeof cr.model, "%s", fld(&row, c_model));
        if (!map_precision(m->precision_map, fld(&row, c_config), &cr.p)) {
            if ((e = reject(x, row.line, "unknown precision '%s' (this file maps %s)", fld(&row, c_config),
                            m->precision_map)))
                goto out;
            continue;
        }
        if (!parse_num(fld(&row, c_e), &cr.e) || !(cr.e > 0)) {
            if ((e = reject(x, row.line, "energy '%s' is not a positive number", fld(&row, c_e)))) goto out;
            continue;
        }
        if ((c_sd >= 0 && !parse_num(fld(&row, c_sd), &cr.sd)) || (c_cv >= 0 && !parse_num(fld(&row, c_cv), &cr.cv)) ||
            (c_ppl >= 0 && !parse_num(fld(&row, c_ppl), &cr.ppl)) ||
            (c_runs >= 0 && !parse_int(fld(&row, c_runs), &cr.n_runs)) || cr.sd < 0 || cr.cv < 0) {
            if ((e = reject(x, row.line, "SD, CV, perplexity or n_runs is not a valid number"))) goto out;
            continue;
        }
        if (!cr.model[0]) {
            if ((e = reject(x, row.line, "model is empty"))) goto out;
            continue;
        }
        config_row *nr = realloc(rows, (n + 1) * sizeof *rows);
        if (!nr) { e = eco_fail(ECO_ENOMEM, "import: out of memory"); goto out; }
        rows = nr;
        rows[n++] = cr;
    }
    for (size_t i = 0; i < n; i++) {
        const config_row *q = &rows[i];
        if (q->p == ECO_PREC_FP16) { x->rep->rows_baseline++; continue; }
        const config_row *base = NULL;
        for (size_t j = 0; j < n; j++)
            if (rows[j].p == ECO_PREC_FP16 && !strcmp(rows[j].model, q->model)) {
                if (base) { base = NULL; break; } /* ambiguous baseline */
                base = &rows[j];
            }
        if (!base) {
            if ((e = reject(x, q->line, "no single fp16 row for model '%s' in this file", q->model))) goto out;
            continue;
        }
        eco_record r;
        memset(&r, 0, sizeof r);
        snprintf(r.gpu, sizeof r.gpu, "%s", m->gpu);
        snprintf(r.arch, sizeof r.arch, "%s", arch);
        snprintf(r.model, sizeof r.model, "%s", q->model);
        if (!params_from_name(q->model, &r.params_b)) {
            if ((e = reject(x, q->line, "cannot read the model size from the name '%s'", q->model))) goto out;
            continue;
        }
        r.vram_gb = m->vram_gb;
        r.precision = q->p;
        r.batch = 1;
        r.e_fp16_mj = base->e;
        r.e_quant_mj = q->e;
        r.e_fp16_sd_mj = base->sd;
        r.e_quant_sd_mj = q->sd;
        r.cv_pct = isfinite(q->cv) ? q->cv : isfinite(q->sd) ? 100.0 * q->sd / q->e : NAN;
        r.n_iterations = m->iterations > 0 ? m->iterations : q->n_runs;
        r.tokens = m->tokens;
        r.basis = m->basis;
        snprintf(r.method, sizeof r.method, "%s", m->method);
        snprintf(r.backend, sizeof r.backend, "%s", m->backend);
        r.origin = ECO_ORIGIN_REFERENCE;
        snprintf(r.session, sizeof r.session, "%s", m->session);
        snprintf(r.source, sizeof r.source, "%s:%zu", x->file, q->line);

        int64_t dup;
        char dup_src[160] = "";
        int dup_trials = 0;
        if ((e = find_duplicate(x, &r, &dup, dup_src, sizeof dup_src, &dup_trials))) goto out;
        if (dup) {
            char reason[256];
            snprintf(reason, sizeof reason, "same GPU class, model, precision and energies (fp16 %.2f, %s %.2f) as %.100s: "
                     "one measurement, counted once", r.e_fp16_mj, eco_precision_name(r.precision), r.e_quant_mj,
                     dup_src);
            if ((e = put_link(x, r.source, dup, reason))) goto out;
            if (isfinite(q->ppl) && isfinite(base->ppl) &&
                (e = put_quality(x, r.source, dup, r.gpu, r.model, r.precision, m->corpus, base->ppl, q->ppl, 0, NULL)))
                goto out;
            continue;
        }
        char spelled[64];
        int trials = campaign_trials(x, m->session, r.model, spelled, sizeof spelled);
        r.n_trials = trials > 0 ? trials : 1;
        r.single_trial = r.n_trials < 2;
        note_add(r.note, sizeof r.note, precision_note(r.precision));
        if (spelled[0] && strcmp(spelled, r.model)) {
            char part[200];
            snprintf(part, sizeof part, "model named as in this campaign's other rows (this table says '%.60s')", r.model);
            note_add(r.note, sizeof r.note, part);
            snprintf(r.model, sizeof r.model, "%s", spelled);
        }
        char part[200];
        snprintf(part, sizeof part, "fp16 baseline from line %zu of the same table", base->line);
        note_add(r.note, sizeof r.note, part);
        if (trials > 0) note_add(r.note, sizeof r.note, "n_trials as for this campaign's measured.csv rows");
        else note_add(r.note, sizeof r.note, "n_trials not given: 1 assumed");
        note_add(r.note, sizeof r.note, m->note);
        if ((e = session_from_entry(x, m, r.gpu, r.arch, NULL))) goto out;
        int64_t id = 0;
        if ((e = store_row(x, m, &r, q->line, "", &id))) goto out;
        if (isfinite(q->ppl) && isfinite(base->ppl) &&
            (e = put_quality(x, r.source, id, r.gpu, r.model, r.precision, m->corpus, base->ppl, q->ppl, 0, NULL)))
            goto out;
    }
out:
    free(rows);
    return e;
}

/* Perplexity-only tables (fp16 and quantized rows of one model). */
static eco_err import_quality_table(ctx *x, const manifest_entry *m, const header *h, eco_csv *c)
{
    static const char *const model_names[] = {"model_name", "model", NULL};
    static const char *const ppl_names[] = {"perplexity", "ppl", NULL};
    static const char *const tok_names[] = {"total_tokens", "quality_tokens_evaluated", NULL};
    int c_model = col_any(h, model_names), c_config = col(h, "config"), c_ppl = col_any(h, ppl_names),
        c_tok = col_any(h, tok_names);
    if (c_model < 0 || c_config < 0 || c_ppl < 0)
        return eco_fail(ECO_EFORMAT, "%s: needs columns model_name, config and perplexity", x->file);
    config_row *rows = NULL;
    size_t n = 0;
    eco_csv_row row;
    bool eof;
    eco_err e;
    for (;;) {
        e = eco_csv_next(c, &row, &eof);
        if (eof) { e = ECO_OK; break; }
        x->rep->rows_read++;
        if (e) {
            if (e == ECO_ENOMEM || (e = reject(x, row.line, "malformed CSV: %s", csv_msg()))) goto out;
            continue;
        }
        config_row cr = {.line = row.line};
        if (row.n_fields != h->n) {
            if ((e = reject(x, row.line, "expected %zu fields, got %zu", h->n, row.n_fields))) goto out;
            continue;
        }
        if (!map_precision(m->precision_map, fld(&row, c_config), &cr.p)) {
            if ((e = reject(x, row.line, "unknown precision '%s' (this file maps %s)", fld(&row, c_config),
                            m->precision_map)))
                goto out;
            continue;
        }
        if (!parse_num(fld(&row, c_ppl), &cr.ppl) || !(cr.ppl > 0)) {
            if ((e = reject(x, row.line, "perplexity '%s' is not a positive number", fld(&row, c_ppl)))) goto out;
            continue;
        }
        if (c_tok >= 0 && !parse_int(fld(&row, c_tok), &cr.n_runs)) cr.n_runs = 0;
        snprintf(cr.model, sizeof cr.model, "%s", short_model(fld(&row, c_model)));
        config_row *nr = realloc(rows, (n + 1) * sizeof *rows);
        if (!nr) { e = eco_fail(ECO_ENOMEM, "import: out of memory"); goto out; }
        rows = nr;
        rows[n++] = cr;
    }
    for (size_t i = 0; i < n; i++) {
        if (rows[i].p == ECO_PREC_FP16) { x->rep->rows_baseline++; continue; }
        const config_row *base = NULL;
        for (size_t j = 0; j < n && !base; j++)
            if (rows[j].p == ECO_PREC_FP16 && !strcmp(rows[j].model, rows[i].model)) base = &rows[j];
        if (!base) {
            if ((e = reject(x, rows[i].line, "no fp16 row for model '%s'", rows[i].model))) goto out;
            continue;
        }
        char src[160];
        snprintf(src, sizeof src, "%s:%zu", x->file, rows[i].line);
        store_upsert res;
        if ((e = put_quality(x, src, 0, m->gpu, rows[i].model, rows[i].p, m->corpus, base->ppl, rows[i].ppl,
                             rows[i].n_runs, &res)))
            goto out;
        count(x, res);
    }
out:
    free(rows);
    return e;
}

/* ---------------------------------------------------------------- batch and phase tables */

static eco_err put_batch_row(ctx *x, const eco_batch_row *b)
{
    static const char find[] = "SELECT id, content_hash FROM batch_rows WHERE source = ?";
    static const char put[] =
        "INSERT INTO batch_rows (source, session, gpu, model, precision, batch, tokens, n_runs, e_mj, e_sd_mj, "
        "throughput_tok_s, avg_power_w, stat, content_hash) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?) "
        "ON CONFLICT(source) DO UPDATE SET session=excluded.session, gpu=excluded.gpu, model=excluded.model, "
        "precision=excluded.precision, batch=excluded.batch, tokens=excluded.tokens, n_runs=excluded.n_runs, "
        "e_mj=excluded.e_mj, e_sd_mj=excluded.e_sd_mj, throughput_tok_s=excluded.throughput_tok_s, "
        "avg_power_w=excluded.avg_power_w, stat=excluded.stat, content_hash=excluded.content_hash";
    char buf[512], hash[65];
    int n = snprintf(buf, sizeof buf, "%s|%s|%s|%s|%d|%d|%d|%.17g|%.17g|%.17g|%.17g|%s", b->session, b->gpu, b->model,
                     eco_precision_name(b->precision), b->batch, b->tokens, b->n_runs, b->e_mj, b->e_sd_mj,
                     b->throughput_tok_s, b->avg_power_w, b->stat);
    eco_sha256_hex(buf, n > 0 && (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1, hash);
    store_upsert state;
    eco_err e = keyed_state(x, find, b->source, hash, &state, NULL);
    if (e) return e;
    count(x, state);
    if (state == STORE_UNCHANGED) return ECO_OK;
    sqlite3_stmt *st = store_stmt(x->s, put);
    if (!st) return eco_last_error_code();
    int i = 1;
    store_bind_text(st, i++, b->source, false);
    store_bind_text(st, i++, b->session, true);
    store_bind_text(st, i++, b->gpu, false);
    store_bind_text(st, i++, b->model, false);
    store_bind_text(st, i++, eco_precision_name(b->precision), false);
    sqlite3_bind_int(st, i++, b->batch);
    sqlite3_bind_int(st, i++, b->tokens);
    sqlite3_bind_int(st, i++, b->n_runs);
    store_bind_double(st, i++, b->e_mj);
    store_bind_double(st, i++, b->e_sd_mj);
    store_bind_double(st, i++, b->throughput_tok_s);
    store_bind_double(st, i++, b->avg_power_w);
    store_bind_text(st, i++, b->stat, false);
    store_bind_text(st, i++, hash, false);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? ECO_OK : store_db_fail(x->s, "storing a batch row");
}

static eco_err batch_session(ctx *x, const manifest_entry *m)
{
    const char *arch;
    if (eco_arch_from_gpu_name(m->gpu, &arch)) return eco_fail_context("%s: manifest gpu: ", x->file);
    return session_from_entry(x, m, m->gpu, arch, NULL);
}

static eco_err import_batch_raw(ctx *x, const manifest_entry *m, const header *h, eco_csv *c)
{
    static const char *const batch_names[] = {"batch_size", "batch", NULL};
    static const char *const tok_names[] = {"tokens_generated", "max_new_tokens", NULL};
    int c_batch = col_any(h, batch_names), c_e = col(h, "energy_per_1k_tokens_j"), c_tok = col_any(h, tok_names),
        c_thr = col(h, "throughput_tok_s"), c_pow = col(h, "avg_power_w"), c_prec = col(h, "precision"),
        c_model = col(h, "model");
    if (c_batch < 0 || c_e < 0) return eco_fail(ECO_EFORMAT, "%s: needs columns batch_size and energy_per_1k_tokens_j", x->file);
    eco_err e = batch_session(x, m);
    if (e) return e;
    eco_csv_row row;
    for (;;) {
        bool got;
        if ((e = next_row(x, c, h->n, &row, &got))) return e;
        if (!got) return ECO_OK;
        eco_batch_row b;
        memset(&b, 0, sizeof b);
        b.e_sd_mj = b.throughput_tok_s = b.avg_power_w = NAN;
        if (!parse_int(fld(&row, c_batch), &b.batch) || b.batch < 1 || !parse_num(fld(&row, c_e), &b.e_mj) || !(b.e_mj > 0) ||
            (c_tok >= 0 && (!parse_int(fld(&row, c_tok), &b.tokens) || b.tokens < 0)) ||
            (c_thr >= 0 && !parse_num(fld(&row, c_thr), &b.throughput_tok_s)) ||
            (c_pow >= 0 && !parse_num(fld(&row, c_pow), &b.avg_power_w))) {
            if ((e = reject(x, row.line, "batch, energy, tokens, throughput or power is not a valid number"))) return e;
            continue;
        }
        const char *pv = c_prec >= 0 ? fld(&row, c_prec) : "";
        if (!map_precision(m->precision_map, pv, &b.precision)) {
            if ((e = reject(x, row.line, "unknown precision '%s' (this file maps %s)", pv, m->precision_map))) return e;
            continue;
        }
        snprintf(b.gpu, sizeof b.gpu, "%s", m->gpu);
        snprintf(b.model, sizeof b.model, "%s", c_model >= 0 ? fld(&row, c_model) : m->model);
        b.n_runs = 1;
        snprintf(b.stat, sizeof b.stat, "raw");
        snprintf(b.session, sizeof b.session, "%s", m->session);
        snprintf(b.source, sizeof b.source, "%s:%zu", x->file, row.line);
        if ((e = put_batch_row(x, &b))) return e;
    }
}

/* pandas' two-row header: line 1 metric, line 2 statistic, line 3 the index name ("batch_size"). */
static eco_err import_batch_summary(ctx *x, const manifest_entry *m, eco_csv *c, const eco_csv_row *first)
{
    char metric[64][48];
    size_t nm = first->n_fields < 64 ? first->n_fields : 64;
    for (size_t i = 0; i < nm; i++) snprintf(metric[i], sizeof metric[i], "%s", first->fields[i]);
    eco_csv_row row;
    bool eof;
    eco_err e = eco_csv_next(c, &row, &eof);
    if (e || eof || row.n_fields != first->n_fields)
        return e ? e : eco_fail(ECO_EFORMAT, "%s: expected a second header row of statistics", x->file);
    int c_e = -1, c_sd = -1, c_thr = -1, c_pow = -1;
    for (size_t i = 0; i < nm; i++) {
        const char *stat = row.fields[i];
        if (!strcmp(metric[i], "energy_per_1k_tokens_j") && !strcmp(stat, "mean")) c_e = (int)i;
        if (!strcmp(metric[i], "energy_per_1k_tokens_j") && !strcmp(stat, "std")) c_sd = (int)i;
        if (!strcmp(metric[i], "throughput_tok_s") && !strcmp(stat, "mean")) c_thr = (int)i;
        if (!strcmp(metric[i], "avg_power_w") && !strcmp(stat, "mean")) c_pow = (int)i;
    }
    if (c_e < 0) return eco_fail(ECO_EFORMAT, "%s: no energy_per_1k_tokens_j mean column", x->file);
    if ((e = batch_session(x, m))) return e;
    /* raw rows of a file this import re-read count only where it gave them again (the stale ones of its earlier
     * lines are removed after the first pass, by remove_stale_rows, so this is a second guard) */
    static const char raw_sql[] = "SELECT count(*), avg(e_mj) FROM batch_rows WHERE session = ? AND stat = 'raw' "
                                  "AND batch = ? AND model = ? AND (source IN (SELECT source FROM temp.import_sources) OR "
                                  "NOT " OF_A_FILE_READ("batch_rows.source") ")";
    for (;;) {
        e = eco_csv_next(c, &row, &eof);
        if (eof) return ECO_OK;
        if (e) {
            x->rep->rows_read++;
            if (e == ECO_ENOMEM || (e = reject(x, row.line, "malformed CSV: %s", csv_msg()))) return e;
            continue;
        }
        if (row.n_fields >= 1 && !strcmp(row.fields[0], "batch_size")) continue; /* the index-name row */
        x->rep->rows_read++;
        if (row.n_fields != first->n_fields) {
            if ((e = reject(x, row.line, "expected %zu fields, got %zu", first->n_fields, row.n_fields))) return e;
            continue;
        }
        eco_batch_row b;
        memset(&b, 0, sizeof b);
        b.e_sd_mj = b.throughput_tok_s = b.avg_power_w = NAN;
        if (!parse_int(row.fields[0], &b.batch) || b.batch < 1 || !parse_num(row.fields[c_e], &b.e_mj) || !(b.e_mj > 0) ||
            (c_sd >= 0 && !parse_num(row.fields[c_sd], &b.e_sd_mj)) ||
            (c_thr >= 0 && !parse_num(row.fields[c_thr], &b.throughput_tok_s)) ||
            (c_pow >= 0 && !parse_num(row.fields[c_pow], &b.avg_power_w))) {
            if ((e = reject(x, row.line, "batch, energy, SD, throughput or power is not a valid number"))) return e;
            continue;
        }
        if (!map_precision(m->precision_map, "", &b.precision)) {
            if ((e = reject(x, row.line, "the manifest gives no precision for this file"))) return e;
            continue;
        }
        snprintf(b.gpu, sizeof b.gpu, "%s", m->gpu);
        snprintf(b.model, sizeof b.model, "%s", m->model);
        b.tokens = m->tokens;
        snprintf(b.stat, sizeof b.stat, "mean");
        snprintf(b.session, sizeof b.session, "%s", m->session);
        snprintf(b.source, sizeof b.source, "%s:%zu", x->file, row.line);
        /* n and a cross-check from the raw rows of the same session, when they were imported */
        sqlite3_stmt *st = store_stmt(x->s, raw_sql);
        if (!st) return eco_last_error_code();
        store_bind_text(st, 1, m->session, false);
        sqlite3_bind_int(st, 2, b.batch);
        store_bind_text(st, 3, b.model, false);
        int raw_n = 0;
        double raw_mean = NAN;
        if (sqlite3_step(st) == SQLITE_ROW) {
            raw_n = sqlite3_column_int(st, 0);
            raw_mean = store_column_double(st, 1);
        }
        sqlite3_reset(st);
        if (raw_n > 0 && !(fabs(raw_mean - b.e_mj) <= 0.0051 + 1e-6 * b.e_mj)) {
            if ((e = reject(x, row.line, "summary mean %.2f disagrees with the mean %.2f of the %d raw rows", b.e_mj,
                            raw_mean, raw_n)))
                return e;
            continue;
        }
        b.n_runs = raw_n > 0 ? raw_n : 1;
        if ((e = put_batch_row(x, &b))) return e;
    }
}

static eco_err import_phase(ctx *x, const manifest_entry *m, const header *h, eco_csv *c)
{
    static const char *const need[] = {"model", "batch_size", "precision", "prefill_active_energy_j_per_call",
                                       "decode_active_energy_j_per_32_tokens", "decode_tokens_per_s",
                                       "prefill_energy_ratio_vs_fp16", "decode_energy_ratio_vs_fp16",
                                       "decode_speed_ratio_vs_fp16", NULL};
    static const char find[] = "SELECT id, content_hash FROM phase_rows WHERE source = ?";
    static const char put[] =
        "INSERT INTO phase_rows (source, session, gpu, model, precision, batch, prefill_active_j_per_call, "
        "decode_active_j_per_32_tok, decode_tok_s, prefill_ratio_vs_fp16, decode_ratio_vs_fp16, "
        "decode_speed_ratio_vs_fp16, content_hash) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT(source) DO UPDATE SET "
        "session=excluded.session, gpu=excluded.gpu, model=excluded.model, precision=excluded.precision, "
        "batch=excluded.batch, prefill_active_j_per_call=excluded.prefill_active_j_per_call, "
        "decode_active_j_per_32_tok=excluded.decode_active_j_per_32_tok, decode_tok_s=excluded.decode_tok_s, "
        "prefill_ratio_vs_fp16=excluded.prefill_ratio_vs_fp16, decode_ratio_vs_fp16=excluded.decode_ratio_vs_fp16, "
        "decode_speed_ratio_vs_fp16=excluded.decode_speed_ratio_vs_fp16, content_hash=excluded.content_hash";
    eco_err e = check_cols(x, h, need);
    if (e) return e;
    if ((e = batch_session(x, m))) return e;
    eco_csv_row row;
    for (;;) {
        bool got;
        if ((e = next_row(x, c, h->n, &row, &got))) return e;
        if (!got) return ECO_OK;
        int batch = 0;
        double v[6];
        bool good = parse_int(fld(&row, col(h, "batch_size")), &batch) && batch >= 1;
        for (int i = 0; i < 6 && good; i++) good = parse_num(fld(&row, col(h, need[3 + i])), &v[i]) && v[i] >= 0;
        eco_precision p;
        if (!good) {
            if ((e = reject(x, row.line, "batch or a phase energy/ratio is not a valid non-negative number"))) return e;
            continue;
        }
        if (!map_precision(m->precision_map, fld(&row, col(h, "precision")), &p)) {
            if ((e = reject(x, row.line, "unknown precision '%s' (this file maps %s)", fld(&row, col(h, "precision")),
                            m->precision_map)))
                return e;
            continue;
        }
        char src[160], buf[512], hash[65];
        snprintf(src, sizeof src, "%s:%zu", x->file, row.line);
        int n = snprintf(buf, sizeof buf, "%s|%s|%s|%s|%d|%.17g|%.17g|%.17g|%.17g|%.17g|%.17g", m->session, m->gpu,
                         fld(&row, col(h, "model")), eco_precision_name(p), batch, v[0], v[1], v[2], v[3], v[4], v[5]);
        eco_sha256_hex(buf, n > 0 && (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1, hash);
        store_upsert state;
        if ((e = keyed_state(x, find, src, hash, &state, NULL))) return e;
        count(x, state);
        if (state == STORE_UNCHANGED) continue;
        sqlite3_stmt *st = store_stmt(x->s, put);
        if (!st) return eco_last_error_code();
        int i = 1;
        store_bind_text(st, i++, src, false);
        store_bind_text(st, i++, m->session, true);
        store_bind_text(st, i++, m->gpu, false);
        store_bind_text(st, i++, fld(&row, col(h, "model")), false);
        store_bind_text(st, i++, eco_precision_name(p), false);
        sqlite3_bind_int(st, i++, batch);
        for (int k = 0; k < 6; k++) store_bind_double(st, i++, v[k]);
        store_bind_text(st, i++, hash, false);
        int rc = sqlite3_step(st);
        sqlite3_reset(st);
        if (rc != SQLITE_DONE) return store_db_fail(x->s, "storing a phase row");
    }
}

/* ---------------------------------------------------------------- one file, the whole folder */

/* Imports one file inside a transaction. Returns a fatal (database) error; file-level problems are logged
 * and returned through *file_err. */
static eco_err import_file(ctx *x, const char *dir, const manifest_entry *entries, size_t n_entries, eco_err *file_err)
{
    const manifest_entry *m = &entries[0];
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, m->file);
    x->file = m->file;
    char *data;
    size_t len;
    eco_err e = eco_store_read_file(path, ECO_STORE_MAX_FILE_BYTES, &data, &len);
    if (e) {
        *file_err = e;
        x->rep->files_failed++;
        char msg[512];
        snprintf(msg, sizeof msg, "%s", eco_last_error());
        if (!x->rep->first_error[0]) snprintf(x->rep->first_error, sizeof x->rep->first_error, "%s", msg);
        return store_log_import_error(x->s, x->import_id, m->file, 0, msg);
    }
    x->rep->files++;
    eco_csv *c = NULL;
    if ((e = eco_csv_open(data, len, m->file, &c))) { free(data); return e; }
    if ((e = store_exec(x->s, "BEGIN IMMEDIATE"))) { eco_csv_close(c); free(data); return e; }
    eco_csv_row first;
    bool eof;
    header h = {0};
    char *names = NULL;
    eco_err fe = eco_csv_next(c, &first, &eof);
    if (!fe && eof) fe = eco_fail(ECO_EFORMAT, "%s: empty file (no header)", m->file);
    if (!fe) {
        h.n = first.n_fields;
        /* The header's strings are overwritten by the next row: keep copies. */
        names = malloc(h.n * 64 + 1);
        if (!names) fe = eco_fail(ECO_ENOMEM, "import: out of memory");
        for (size_t i = 0; names && i < h.n; i++) {
            snprintf(names + 64 * i, 64, "%s", first.fields[i]);
            h.names[i] = names + 64 * i;
        }
    }
    if (!fe) {
        const char *k = m->kind;
        if (!strcmp(k, "measured")) fe = import_measured(x, entries, n_entries, &h, c);
        else if (!strcmp(k, "paired-rows")) fe = import_paired(x, m, &h, c);
        else if (!strcmp(k, "replicates")) fe = import_replicates(x, m, &h, c);
        else if (!strcmp(k, "replicate-summary")) fe = check_replicate_summary(x, m, &h, c);
        else if (!strcmp(k, "config-table")) fe = import_config_table(x, m, &h, c);
        else if (!strcmp(k, "quality-table")) fe = import_quality_table(x, m, &h, c);
        else if (!strcmp(k, "batch-raw")) fe = import_batch_raw(x, m, &h, c);
        else if (!strcmp(k, "batch-summary")) fe = import_batch_summary(x, m, c, &first);
        else if (!strcmp(k, "phase-summary")) fe = import_phase(x, m, &h, c);
    }
    eco_csv_close(c);
    free(data);
    free(names);
    if (fe && fe != ECO_EFORMAT && fe != ECO_ETOOBIG && fe != ECO_EINVAL && fe != ECO_ENOTFOUND) {
        /* database or memory failure: undo this file and stop */
        char msg[512];
        snprintf(msg, sizeof msg, "%s", eco_last_error());
        sqlite3_exec(x->s->db, "ROLLBACK", NULL, NULL, NULL);
        return eco_fail(fe, "%s", msg);
    }
    /* only a file read to its end says which of its stored rows it no longer holds (removed after every file) */
    if (!fe && (e = mark(x, "INSERT OR IGNORE INTO temp.import_read (file) VALUES (?)", m->file, 0))) {
        sqlite3_exec(x->s->db, "ROLLBACK", NULL, NULL, NULL);
        return e;
    }
    if (fe) {
        /* the file's structure is wrong (header, columns): reported, the rows read so far are kept */
        *file_err = fe;
        x->rep->files_failed++;
        char msg[512];
        snprintf(msg, sizeof msg, "%s", eco_last_error());
        if (!x->rep->first_error[0]) snprintf(x->rep->first_error, sizeof x->rep->first_error, "%s", msg);
        if ((e = store_log_import_error(x->s, x->import_id, m->file, 0, msg))) {
            sqlite3_exec(x->s->db, "ROLLBACK", NULL, NULL, NULL);
            return e;
        }
    }
    if ((e = store_exec(x->s, "COMMIT"))) {
        sqlite3_exec(x->s->db, "ROLLBACK", NULL, NULL, NULL);
        return e;
    }
    return ECO_OK;
}

static eco_err record_import(ctx *x, const char *dir, const char *manifest, bool start)
{
    static const char ins[] = "INSERT INTO imports (dir, manifest, started_at) VALUES (?,?,?)";
    static const char upd[] = "UPDATE imports SET files=?, rows_read=?, rows_inserted=?, rows_updated=?, "
                              "rows_unchanged=?, rows_rejected=?, rows_linked=?, files_failed=? WHERE id=?";
    sqlite3_stmt *st = store_stmt(x->s, start ? ins : upd);
    if (!st) return eco_last_error_code();
    if (start) {
        char now[32];
        store_now_utc(now);
        store_bind_text(st, 1, dir, false);
        store_bind_text(st, 2, manifest, false);
        store_bind_text(st, 3, now, false);
    } else {
        const eco_import_report *r = x->rep;
        const size_t v[] = {r->files, r->rows_read, r->rows_inserted, r->rows_updated, r->rows_unchanged,
                            r->rows_rejected, r->rows_linked, r->files_failed};
        for (int i = 0; i < 8; i++) sqlite3_bind_int64(st, i + 1, (sqlite3_int64)v[i]);
        sqlite3_bind_int64(st, 9, x->import_id);
    }
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE) return store_db_fail(x->s, "recording the import");
    if (start) x->import_id = sqlite3_last_insert_rowid(x->s->db);
    return ECO_OK;
}

eco_err eco_store_import_reference_dir_manifest(eco_store *s, const char *dir, const char *manifest_path,
                                                eco_import_report *report)
{
    memset(report, 0, sizeof *report);
    if (!s || !dir || !*dir) return eco_fail_field(ECO_EINVAL, "dir", "reference folder is empty");
    manifest_entry *entries;
    size_t n;
    eco_err e = load_manifest(manifest_path, &entries, &n);
    if (e) return e;
    ctx x = {.s = s, .rep = report};
    if ((e = record_import(&x, dir, manifest_path, true))) { free(entries); return e; }
    /* the rows this import stored or confirmed, and the files it read to their end (remove_stale_rows) */
    e = store_exec(s, "CREATE TEMP TABLE IF NOT EXISTS import_touched (id INTEGER PRIMARY KEY);"
                      "CREATE TEMP TABLE IF NOT EXISTS import_read (file TEXT PRIMARY KEY);"
                      "CREATE TEMP TABLE IF NOT EXISTS import_sources (source TEXT PRIMARY KEY);"
                      "CREATE TEMP TABLE IF NOT EXISTS import_pending (file TEXT PRIMARY KEY);"
                      "DELETE FROM temp.import_touched; DELETE FROM temp.import_read; DELETE FROM temp.import_sources;"
                      "DELETE FROM temp.import_pending");
    /* the files still to be read (LINKABLE) */
    for (size_t i = 0; i < n && !e; i++)
        if (store_kind_is_imported(entries[i].kind))
            e = mark(&x, "INSERT OR IGNORE INTO temp.import_pending (file) VALUES (?)", entries[i].file, 0);
    eco_err file_err = ECO_OK;
    manifest_entry *group = malloc((n ? n : 1) * sizeof *group);
    if (!group && !e) e = eco_fail(ECO_ENOMEM, "manifest: out of memory");
    /* Files whose rows stand alone first, then those checked or linked against them (a config table's rows that
     * repeat measured.csv's are linked to them), whatever the manifest's order. The stand-alone files' stale rows
     * go before the second pass: a row checked or linked against must be one their files still hold (a config row
     * linked to a measured row that is then removed would be lost, and a summary checked against old replicates
     * would be refused). */
    for (int pass = 0; pass < 2 && !e; pass++) {
        for (size_t i = 0; i < n && !e; i++) {
            const char *kind = entries[i].kind;
            if (!store_kind_is_imported(kind) || store_kind_is_dependent(kind) != (pass == 1)) continue;
            /* every entry of one file (measured.csv has one per campaign) is imported together, wherever it sits */
            bool seen = false;
            for (size_t k = 0; k < i; k++) seen = seen || !strcmp(entries[k].file, entries[i].file);
            if (seen) continue;
            size_t g = 0;
            for (size_t k = i; k < n; k++)
                if (!strcmp(entries[k].file, entries[i].file)) group[g++] = entries[k];
            eco_err fe = ECO_OK;
            e = mark(&x, "DELETE FROM temp.import_pending WHERE file = ?", entries[i].file, 0);
            if (!e) e = import_file(&x, dir, group, g, &fe);
            if (fe && !file_err) file_err = fe;
        }
        if (!e) e = remove_stale_rows(&x, pass == 1);
    }
    free(group);
    eco_err e2 = record_import(&x, dir, manifest_path, false);
    report->import_id = x.import_id;
    free(entries);
    if (e) return e;
    if (e2) return e2;
    if (file_err) return eco_fail(file_err, "%s", report->first_error);
    return ECO_OK;
}

eco_err eco_store_import_reference_dir(eco_store *s, const char *dir, eco_import_report *report)
{
    char manifest[1024];
    snprintf(manifest, sizeof manifest, "%s/manifest.csv", dir ? dir : "");
    return eco_store_import_reference_dir_manifest(s, dir, manifest, report);
}
