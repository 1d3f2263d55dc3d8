/* Opening, migrations, records, sessions, replications and runs. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "eco/model.h"
#include "store/internal.h"

/* ---------------------------------------------------------------- schema
 * One entry per user_version. Never edit a released entry: append a new one. */
/* SQL: the string at a JSON path of a document (a column or a parameter), NULL when it is not a string or not JSON. */
#define DOC_TEXT_AT(doc, path) \
    "(CASE WHEN json_valid(" doc ") AND json_type(" doc ", '" path "') = 'text' THEN json_extract(" doc ", '" path "') END)"

static const char *const migrations[] = {
    /* 1: sessions, records, import errors */
    "CREATE TABLE sessions ("
    "  id TEXT PRIMARY KEY, gpu TEXT NOT NULL, arch TEXT NOT NULL, date TEXT NOT NULL DEFAULT '',"
    "  software TEXT NOT NULL DEFAULT '', tokens INTEGER NOT NULL DEFAULT 0 CHECK (tokens >= 0),"
    "  basis TEXT NOT NULL DEFAULT 'unknown' CHECK (basis IN ('gross','net','unknown')),"
    "  method TEXT NOT NULL DEFAULT 'unknown', source TEXT NOT NULL DEFAULT '', note TEXT NOT NULL DEFAULT ''"
    ") STRICT;"
    "CREATE TABLE records ("
    "  id INTEGER PRIMARY KEY,"
    "  origin TEXT NOT NULL CHECK (origin IN ('reference','run','replication')),"
    "  source TEXT NOT NULL, source_file TEXT NOT NULL DEFAULT '', source_line INTEGER NOT NULL DEFAULT 0,"
    "  content_hash TEXT NOT NULL,"
    "  gpu TEXT NOT NULL, arch TEXT NOT NULL, vram_gb REAL, model TEXT NOT NULL,"
    "  params_b REAL NOT NULL CHECK (params_b > 0), precision TEXT NOT NULL, batch INTEGER NOT NULL DEFAULT 1,"
    "  e_fp16_mj REAL NOT NULL CHECK (e_fp16_mj > 0), e_quant_mj REAL NOT NULL CHECK (e_quant_mj > 0),"
    "  e_fp16_sd_mj REAL, e_quant_sd_mj REAL, cv_pct REAL,"
    "  n_trials INTEGER NOT NULL CHECK (n_trials >= 1), n_iterations INTEGER NOT NULL DEFAULT 0,"
    "  tokens INTEGER NOT NULL DEFAULT 0, basis TEXT NOT NULL, method TEXT NOT NULL, protocol TEXT NOT NULL,"
    "  backend TEXT NOT NULL DEFAULT '', session TEXT REFERENCES sessions(id),"
    "  synthetic_weights INTEGER NOT NULL DEFAULT 0, single_trial INTEGER NOT NULL DEFAULT 0,"
    "  note TEXT NOT NULL DEFAULT '',"
    "  UNIQUE (origin, source, gpu, model, precision, batch)"
    ") STRICT;"
    "CREATE INDEX records_arch_precision ON records(arch, precision);"
    "CREATE TABLE import_errors ("
    "  id INTEGER PRIMARY KEY, import_id INTEGER NOT NULL DEFAULT 0, file TEXT NOT NULL, line INTEGER NOT NULL,"
    "  message TEXT NOT NULL, at TEXT NOT NULL"
    ") STRICT;",

    /* 2: raw energy.json documents */
    "CREATE TABLE replications ("
    "  id INTEGER PRIMARY KEY, name TEXT NOT NULL, sha256 TEXT NOT NULL UNIQUE, doc TEXT NOT NULL,"
    "  validation TEXT NOT NULL CHECK (validation IN ('unvalidated','valid','invalid')),"
    "  validation_message TEXT NOT NULL DEFAULT '', submitted_at TEXT NOT NULL"
    ") STRICT;"
    "CREATE TABLE runs ("
    "  id INTEGER PRIMARY KEY, run_id TEXT NOT NULL UNIQUE, sha256 TEXT NOT NULL, doc TEXT NOT NULL,"
    "  stored_at TEXT NOT NULL"
    ") STRICT;",

    /* 3: flags and source notes on records; import log, duplicate links, quality, batch and phase tables */
    "ALTER TABLE records ADD COLUMN flags TEXT NOT NULL DEFAULT '';"
    "ALTER TABLE records ADD COLUMN raw_note TEXT NOT NULL DEFAULT '';"
    "CREATE TABLE imports ("
    "  id INTEGER PRIMARY KEY, dir TEXT NOT NULL, manifest TEXT NOT NULL, started_at TEXT NOT NULL,"
    "  files INTEGER NOT NULL DEFAULT 0, rows_read INTEGER NOT NULL DEFAULT 0,"
    "  rows_inserted INTEGER NOT NULL DEFAULT 0, rows_updated INTEGER NOT NULL DEFAULT 0,"
    "  rows_unchanged INTEGER NOT NULL DEFAULT 0, rows_rejected INTEGER NOT NULL DEFAULT 0,"
    "  rows_linked INTEGER NOT NULL DEFAULT 0, files_failed INTEGER NOT NULL DEFAULT 0"
    ") STRICT;"
    "CREATE TABLE import_links ("
    "  id INTEGER PRIMARY KEY, source TEXT NOT NULL UNIQUE,"
    "  record_id INTEGER NOT NULL REFERENCES records(id) ON DELETE CASCADE, reason TEXT NOT NULL"
    ") STRICT;"
    "CREATE TABLE quality ("
    "  id INTEGER PRIMARY KEY, source TEXT NOT NULL UNIQUE,"
    "  record_id INTEGER REFERENCES records(id) ON DELETE SET NULL,"
    "  gpu TEXT NOT NULL, model TEXT NOT NULL, precision TEXT NOT NULL, corpus TEXT NOT NULL DEFAULT '',"
    "  ppl_fp16 REAL, ppl_quant REAL, tokens_evaluated INTEGER, content_hash TEXT NOT NULL"
    ") STRICT;"
    "CREATE TABLE batch_rows ("
    "  id INTEGER PRIMARY KEY, source TEXT NOT NULL UNIQUE, session TEXT REFERENCES sessions(id),"
    "  gpu TEXT NOT NULL, model TEXT NOT NULL, precision TEXT NOT NULL, batch INTEGER NOT NULL CHECK (batch >= 1),"
    "  tokens INTEGER NOT NULL DEFAULT 0, n_runs INTEGER NOT NULL DEFAULT 1,"
    "  e_mj REAL NOT NULL CHECK (e_mj > 0), e_sd_mj REAL, throughput_tok_s REAL, avg_power_w REAL,"
    "  stat TEXT NOT NULL CHECK (stat IN ('raw','mean')), content_hash TEXT NOT NULL"
    ") STRICT;"
    "CREATE TABLE phase_rows ("
    "  id INTEGER PRIMARY KEY, source TEXT NOT NULL UNIQUE, session TEXT REFERENCES sessions(id),"
    "  gpu TEXT NOT NULL, model TEXT NOT NULL, precision TEXT NOT NULL, batch INTEGER NOT NULL CHECK (batch >= 1),"
    "  prefill_active_j_per_call REAL NOT NULL, decode_active_j_per_32_tok REAL NOT NULL, decode_tok_s REAL,"
    "  prefill_ratio_vs_fp16 REAL, decode_ratio_vs_fp16 REAL, decode_speed_ratio_vs_fp16 REAL,"
    "  content_hash TEXT NOT NULL"
    ") STRICT;",
    /* the import that made or last confirmed a link, so an import lists its own links only */
    "ALTER TABLE import_links ADD COLUMN import_id INTEGER NOT NULL DEFAULT 0;",
    /* 5: a replication's run id, card and model beside its document: listed without reading every document, and
     * one run stored once */
    "ALTER TABLE replications ADD COLUMN run_id TEXT;"
    "ALTER TABLE replications ADD COLUMN gpu TEXT;"
    "ALTER TABLE replications ADD COLUMN model TEXT;"
    "UPDATE replications SET run_id = " DOC_TEXT_AT("doc", "$.run_id") ", gpu = " DOC_TEXT_AT("doc", "$.environment.gpu.name")
    ", model = " DOC_TEXT_AT("doc", "$.weights.model") ";"
    "CREATE INDEX replications_run_id ON replications (run_id);",
};

#define N_MIGRATIONS ((int)(sizeof migrations / sizeof migrations[0]))

int eco_store_schema_version(void) { return N_MIGRATIONS; }

/* ---------------------------------------------------------------- helpers */

/* SQL eco_same_model(a, b): one model however spelled (eco_same_model), for the records filter */
static void sql_same_model(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    (void)argc;
    sqlite3_result_int(ctx, eco_same_model((const char *)sqlite3_value_text(argv[0]), (const char *)sqlite3_value_text(argv[1])));
}

/* The connection's last failure as an eco_err: locked by another writer past the busy timeout, or no room on the
 * disk, is EBUSY (nothing lost, worth retrying); anything else EIO. */
static eco_err db_err_code(const eco_store *s)
{
    int rc = s->db ? sqlite3_errcode(s->db) & 0xff : SQLITE_ERROR;
    return rc == SQLITE_BUSY || rc == SQLITE_LOCKED || rc == SQLITE_FULL ? ECO_EBUSY : ECO_EIO;
}

eco_err store_db_fail(eco_store *s, const char *what)
{
    return eco_fail(db_err_code(s), "%s: %s: %s", s->path, what, s->db ? sqlite3_errmsg(s->db) : "no connection");
}

eco_err store_exec(eco_store *s, const char *sql)
{
    char *msg = NULL;
    if (sqlite3_exec(s->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        eco_err e = eco_fail(db_err_code(s), "%s: %s", s->path, msg ? msg : sqlite3_errmsg(s->db));
        sqlite3_free(msg);
        return e;
    }
    return ECO_OK;
}

sqlite3_stmt *store_stmt(eco_store *s, const char *sql)
{
    for (size_t i = 0; i < s->n_cache; i++)
        if (s->cache[i].sql == sql) {
            sqlite3_reset(s->cache[i].st);
            sqlite3_clear_bindings(s->cache[i].st);
            return s->cache[i].st;
        }
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v3(s->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &st, NULL) != SQLITE_OK) {
        store_db_fail(s, "preparing a statement");
        return NULL;
    }
    if (s->n_cache < STORE_STMT_CACHE) {
        s->cache[s->n_cache].sql = sql;
        s->cache[s->n_cache].st = st;
        s->n_cache++;
    } else {
        /* cannot happen with the fixed set of statements; fail loudly rather than leak */
        sqlite3_finalize(st);
        eco_fail(ECO_ESTATE, "store: statement cache full");
        return NULL;
    }
    return st;
}

int store_bind_text(sqlite3_stmt *st, int i, const char *v, bool null_if_empty)
{
    if (!v || (null_if_empty && !*v)) return sqlite3_bind_null(st, i);
    return sqlite3_bind_text(st, i, v, -1, SQLITE_TRANSIENT);
}

int store_bind_double(sqlite3_stmt *st, int i, double v)
{
    return isfinite(v) ? sqlite3_bind_double(st, i, v) : sqlite3_bind_null(st, i);
}

double store_column_double(sqlite3_stmt *st, int i)
{
    return sqlite3_column_type(st, i) == SQLITE_NULL ? NAN : sqlite3_column_double(st, i);
}

void store_column_text(sqlite3_stmt *st, int i, char *buf, size_t cap)
{
    const unsigned char *t = sqlite3_column_text(st, i);
    snprintf(buf, cap, "%s", t ? (const char *)t : "");
}

void store_now_utc(char out[32])
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static eco_err pragma_int(eco_store *s, const char *sql, int *out)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK) return store_db_fail(s, "reading the schema");
    int rc = sqlite3_step(st);
    *out = rc == SQLITE_ROW ? sqlite3_column_int(st, 0) : 0;
    sqlite3_finalize(st);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? ECO_OK : store_db_fail(s, "reading the schema");
}

int eco_store_user_version(eco_store *s)
{
    int v = -1;
    return pragma_int(s, "PRAGMA user_version", &v) == ECO_OK ? v : -1;
}

static eco_err migrate(eco_store *s, int target)
{
    int have;
    eco_err e = pragma_int(s, "PRAGMA user_version", &have);
    if (e) return e;
    if (have > N_MIGRATIONS)
        return eco_fail(ECO_EUNSUPPORTED, "%s: schema version %d was written by a newer eco (this build knows up to %d)",
                        s->path, have, N_MIGRATIONS);
    if (have == 0) {
        int tables;
        if ((e = pragma_int(s, "SELECT count(*) FROM sqlite_schema WHERE type = 'table'", &tables))) return e;
        if (tables > 0)
            return eco_fail(ECO_EFORMAT, "%s: not an eco store (it has tables but no schema version)", s->path);
    }
    for (int v = have + 1; v <= target; v++) {
        if ((e = store_exec(s, "BEGIN IMMEDIATE"))) return eco_fail_context("migrating to schema %d: ", v);
        char set[64];
        snprintf(set, sizeof set, "PRAGMA user_version = %d", v);
        if ((e = store_exec(s, migrations[v - 1])) || (e = store_exec(s, set))) {
            sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
            return eco_fail_context("migrating to schema %d: ", v);
        }
        if ((e = store_exec(s, "COMMIT"))) return eco_fail_context("migrating to schema %d: ", v);
    }
    return ECO_OK;
}

eco_err eco_store_open_version(const char *path, int version, eco_store **out)
{
    *out = NULL;
    if (!path || !*path) return eco_fail_field(ECO_EINVAL, "db", "database path is empty");
    if (version < 1 || version > N_MIGRATIONS)
        return eco_fail(ECO_EINVAL, "schema version %d is not in 1..%d", version, N_MIGRATIONS);
    if (sqlite3_libversion_number() < 3037000)
        return eco_fail(ECO_EUNSUPPORTED, "SQLite %s is too old: STRICT tables need 3.37 or newer",
                        sqlite3_libversion());
    eco_store *s = calloc(1, sizeof *s);
    if (!s) return eco_fail(ECO_ENOMEM, "store: out of memory");
    snprintf(s->path, sizeof s->path, "%s", path);
    if (sqlite3_open_v2(path, &s->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) != SQLITE_OK) {
        eco_err e = store_db_fail(s, "cannot open");
        eco_store_close(s);
        return e;
    }
    sqlite3_extended_result_codes(s->db, 1);
    sqlite3_busy_timeout(s->db, 5000);
    sqlite3_create_function(s->db, "eco_same_model", 2, SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL, sql_same_model, NULL, NULL);
    eco_err e;
    /* journal_mode answers with the mode in force (a read-only medium or :memory: keeps its own). */
    if ((e = store_exec(s, "PRAGMA journal_mode = WAL")) || (e = store_exec(s, "PRAGMA foreign_keys = ON")) ||
        /* FULL: a commit (an acknowledged submission) survives a power loss too, not only a crash; the store is
         * written rarely, so the extra sync costs nothing that matters */
        (e = store_exec(s, "PRAGMA synchronous = FULL")) || (e = migrate(s, version))) {
        eco_store_close(s);
        return e;
    }
    *out = s;
    return ECO_OK;
}

eco_err eco_store_open(const char *path, eco_store **out) { return eco_store_open_version(path, N_MIGRATIONS, out); }

void eco_store_close(eco_store *s)
{
    if (!s) return;
    for (size_t i = 0; i < s->n_cache; i++) sqlite3_finalize(s->cache[i].st);
    if (s->db) sqlite3_close(s->db);
    free(s);
}

/* ---------------------------------------------------------------- records */

eco_record_filter eco_record_filter_any(void)
{
    eco_record_filter f;
    memset(&f, 0, sizeof f);
    f.origin = -1;
    return f;
}

static const char *nz(const char *s) { return s ? s : ""; }

/* Canonical text of every stored field, so a changed row gets a new hash. */
static void record_hash(const eco_record *r, const store_record_meta *m, char out[65])
{
    char buf[4096];
    int n = snprintf(buf, sizeof buf,
                     "%s\x1f%s\x1f%.17g\x1f%s\x1f%.17g\x1f%s\x1f%d\x1f%.17g\x1f%.17g\x1f%.17g\x1f%.17g\x1f%.17g\x1f%d"
                     "\x1f%d\x1f%d\x1f%s\x1f%s\x1f%s\x1f%s\x1f%s\x1f%s\x1f%d\x1f%d\x1f%s\x1f%s\x1f%zu\x1f%s\x1f%s",
                     r->gpu, r->arch, r->vram_gb, r->model, r->params_b, eco_precision_name(r->precision), r->batch,
                     r->e_fp16_mj, r->e_quant_mj, r->e_fp16_sd_mj, r->e_quant_sd_mj, r->cv_pct, r->n_trials,
                     r->n_iterations, r->tokens, eco_energy_basis_name(r->basis), r->method, r->backend,
                     eco_record_origin_name(r->origin), r->session, r->source, r->synthetic_weights, r->single_trial,
                     r->note, nz(m->source_file), m->source_line, r->flags, nz(m->raw_note));
    eco_sha256_hex(buf, n > 0 && (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1, out);
}

static const char SQL_RECORD_FIND[] =
    "SELECT id, content_hash FROM records WHERE origin = ? AND source = ? AND gpu = ? AND model = ? AND precision = ? "
    "AND batch = ?";
static const char SQL_RECORD_INSERT[] =
    "INSERT INTO records (content_hash, source_file, source_line, flags, raw_note, protocol, " STORE_RECORD_COLUMNS
    ") VALUES (?,?,?,?,?,?, ?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)";
static const char SQL_RECORD_UPDATE[] =
    "UPDATE records SET content_hash=?, source_file=?, source_line=?, flags=?, raw_note=?, protocol=?, gpu=?, arch=?, "
    "vram_gb=?, model=?, params_b=?, precision=?, batch=?, e_fp16_mj=?, e_quant_mj=?, e_fp16_sd_mj=?, "
    "e_quant_sd_mj=?, cv_pct=?, n_trials=?, n_iterations=?, tokens=?, basis=?, method=?, backend=?, origin=?, "
    "session=?, source=?, synthetic_weights=?, single_trial=?, note=? WHERE id=?";

static void bind_record(sqlite3_stmt *st, const eco_record *r, const store_record_meta *m, const char *hash)
{
    char protocol[96];
    eco_record_protocol_key(r, protocol, sizeof protocol);
    int i = 1;
    store_bind_text(st, i++, hash, false);
    store_bind_text(st, i++, nz(m->source_file), false);
    sqlite3_bind_int64(st, i++, (sqlite3_int64)m->source_line);
    store_bind_text(st, i++, r->flags, false);
    store_bind_text(st, i++, nz(m->raw_note), false);
    store_bind_text(st, i++, protocol, false);
    store_bind_text(st, i++, r->gpu, false);
    store_bind_text(st, i++, r->arch, false);
    store_bind_double(st, i++, r->vram_gb > 0 ? r->vram_gb : NAN);
    store_bind_text(st, i++, r->model, false);
    store_bind_double(st, i++, r->params_b);
    store_bind_text(st, i++, eco_precision_name(r->precision), false);
    sqlite3_bind_int(st, i++, r->batch);
    store_bind_double(st, i++, r->e_fp16_mj);
    store_bind_double(st, i++, r->e_quant_mj);
    store_bind_double(st, i++, r->e_fp16_sd_mj);
    store_bind_double(st, i++, r->e_quant_sd_mj);
    store_bind_double(st, i++, r->cv_pct);
    sqlite3_bind_int(st, i++, r->n_trials);
    sqlite3_bind_int(st, i++, r->n_iterations);
    sqlite3_bind_int(st, i++, r->tokens);
    store_bind_text(st, i++, eco_energy_basis_name(r->basis), false);
    store_bind_text(st, i++, r->method[0] ? r->method : "unknown", false);
    store_bind_text(st, i++, r->backend, false);
    store_bind_text(st, i++, eco_record_origin_name(r->origin), false);
    store_bind_text(st, i++, r->session, true);
    store_bind_text(st, i++, r->source, false);
    sqlite3_bind_int(st, i++, r->synthetic_weights);
    sqlite3_bind_int(st, i++, r->single_trial);
    store_bind_text(st, i++, r->note, false);
}

eco_err store_upsert_record(eco_store *s, const eco_record *r, const store_record_meta *meta, store_upsert *res,
                            int64_t *id)
{
    eco_err e = eco_record_check(r);
    if (e) return e;
    if (r->batch < 1) return eco_fail_field(ECO_EINVAL, "batch", "batch must be >= 1, got %d", r->batch);
    if (!r->source[0]) return eco_fail_field(ECO_EINVAL, "source", "a record needs a source (provenance)");
    if (!r->gpu[0] || !r->model[0]) return eco_fail_field(ECO_EINVAL, "gpu", "a record needs a gpu and a model");
    store_record_meta empty = {0};
    if (!meta) meta = &empty;
    char hash[65];
    record_hash(r, meta, hash);

    sqlite3_stmt *st = store_stmt(s, SQL_RECORD_FIND);
    if (!st) return eco_last_error_code();
    store_bind_text(st, 1, eco_record_origin_name(r->origin), false);
    store_bind_text(st, 2, r->source, false);
    store_bind_text(st, 3, r->gpu, false);
    store_bind_text(st, 4, r->model, false);
    store_bind_text(st, 5, eco_precision_name(r->precision), false);
    sqlite3_bind_int(st, 6, r->batch);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        int64_t found = sqlite3_column_int64(st, 0);
        char old[65];
        store_column_text(st, 1, old, sizeof old);
        sqlite3_reset(st);
        if (id) *id = found;
        if (!strcmp(old, hash)) { *res = STORE_UNCHANGED; return ECO_OK; }
        sqlite3_stmt *up = store_stmt(s, SQL_RECORD_UPDATE);
        if (!up) return eco_last_error_code();
        bind_record(up, r, meta, hash);
        sqlite3_bind_int64(up, 31, found);
        rc = sqlite3_step(up);
        sqlite3_reset(up);
        if (rc != SQLITE_DONE) return store_db_fail(s, "updating a record");
        *res = STORE_UPDATED;
        return ECO_OK;
    }
    sqlite3_reset(st);
    if (rc != SQLITE_DONE) return store_db_fail(s, "looking up a record");
    sqlite3_stmt *ins = store_stmt(s, SQL_RECORD_INSERT);
    if (!ins) return eco_last_error_code();
    bind_record(ins, r, meta, hash);
    rc = sqlite3_step(ins);
    sqlite3_reset(ins);
    if (rc != SQLITE_DONE) {
        if (rc == SQLITE_CONSTRAINT_FOREIGNKEY)
            return eco_fail_field(ECO_ENOTFOUND, "session", "%s: session '%s' is not in the store", s->path,
                                  r->session);
        return store_db_fail(s, "inserting a record");
    }
    if (id) *id = sqlite3_last_insert_rowid(s->db);
    *res = STORE_INSERTED;
    return ECO_OK;
}

eco_err eco_store_insert_record(eco_store *s, const eco_record *r, bool *inserted)
{
    store_upsert res = STORE_INSERTED;
    eco_err e = store_upsert_record(s, r, NULL, &res, NULL);
    if (inserted) *inserted = !e && res == STORE_INSERTED;
    return e;
}

void store_read_record(sqlite3_stmt *st, eco_record *r)
{
    memset(r, 0, sizeof *r);
    char buf[64];
    int i = 0;
    store_column_text(st, i++, r->gpu, sizeof r->gpu);
    store_column_text(st, i++, r->arch, sizeof r->arch);
    r->vram_gb = store_column_double(st, i++);
    if (isnan(r->vram_gb)) r->vram_gb = 0;
    store_column_text(st, i++, r->model, sizeof r->model);
    r->params_b = sqlite3_column_double(st, i++);
    store_column_text(st, i++, buf, sizeof buf);
    if (eco_precision_parse(buf, &r->precision)) eco_clear_error(); /* rows were checked on the way in */
    r->batch = sqlite3_column_int(st, i++);
    r->e_fp16_mj = store_column_double(st, i++);
    r->e_quant_mj = store_column_double(st, i++);
    r->e_fp16_sd_mj = store_column_double(st, i++);
    r->e_quant_sd_mj = store_column_double(st, i++);
    r->cv_pct = store_column_double(st, i++);
    r->n_trials = sqlite3_column_int(st, i++);
    r->n_iterations = sqlite3_column_int(st, i++);
    r->tokens = sqlite3_column_int(st, i++);
    store_column_text(st, i++, buf, sizeof buf);
    r->basis = !strcmp(buf, "gross") ? ECO_BASIS_GROSS : !strcmp(buf, "net") ? ECO_BASIS_NET : ECO_BASIS_UNKNOWN;
    store_column_text(st, i++, r->method, sizeof r->method);
    store_column_text(st, i++, r->backend, sizeof r->backend);
    store_column_text(st, i++, buf, sizeof buf);
    r->origin = !strcmp(buf, "run") ? ECO_ORIGIN_RUN : !strcmp(buf, "replication") ? ECO_ORIGIN_REPLICATION
                                                                                    : ECO_ORIGIN_REFERENCE;
    store_column_text(st, i++, r->session, sizeof r->session);
    store_column_text(st, i++, r->source, sizeof r->source);
    r->synthetic_weights = sqlite3_column_int(st, i++) != 0;
    r->single_trial = sqlite3_column_int(st, i++) != 0;
    store_column_text(st, i++, r->note, sizeof r->note);
    store_column_text(st, i++, r->flags, sizeof r->flags);
}

size_t store_filter_sql(const eco_record_filter *f, char *where, size_t cap)
{
    size_t n = 0, w = 0;
    where[0] = '\0';
    if (!f) return 0;
    /* gpu in any case and also by its NVML name ("H200" finds "NVIDIA H200"), a model by any spelling of its preset
     * (eco_same_model, registered on the connection): a filter that silently finds nothing reads as "no data".
     * Narrower than /v1/measurements for cards only, which it also resolves through the hardware table. */
    const struct { const char *v, *test; } cols[] = {
        {f->arch, "arch = ?"}, {f->precision, "precision = ?"},
        {f->gpu, "(gpu = ? COLLATE NOCASE OR gpu = 'NVIDIA ' || ? COLLATE NOCASE)"}, {f->protocol, "protocol = ?"},
        {f->session, "session = ?"}, {f->source_file, "source_file = ?"}, {f->model, "eco_same_model(model, ?)"},
    };
    for (size_t i = 0; i < sizeof cols / sizeof cols[0]; i++) {
        if (!cols[i].v) continue;
        w += (size_t)snprintf(where + w, w < cap ? cap - w : 0, "%s %s", n ? " AND" : " WHERE", cols[i].test);
        n++;
    }
    if (f->origin >= 0) {
        w += (size_t)snprintf(where + w, w < cap ? cap - w : 0, "%s origin = ?", n ? " AND" : " WHERE");
        n++;
    }
    return n;
}

void store_filter_bind(sqlite3_stmt *st, const eco_record_filter *f, int first)
{
    if (!f) return;
    const char *vals[] = {f->arch, f->precision, f->gpu, f->protocol, f->session, f->source_file, f->model};
    int i = first;
    for (size_t k = 0; k < sizeof vals / sizeof vals[0]; k++) {
        if (!vals[k]) continue;
        store_bind_text(st, i++, vals[k], false);
        if (k == 2) store_bind_text(st, i++, vals[k], false); /* gpu: its test has two placeholders */
    }
    if (f->origin >= 0) store_bind_text(st, i++, eco_record_origin_name((eco_record_origin)f->origin), false);
}

static eco_err check_filter(const eco_record_filter *f)
{
    if (!f) return ECO_OK;
    if (f->origin < -1 || f->origin > ECO_ORIGIN_REPLICATION)
        return eco_fail_field(ECO_EINVAL, "origin", "origin must be -1 (any), 0, 1 or 2; got %d", f->origin);
    if (f->precision) {
        eco_precision p;
        if (eco_precision_parse(f->precision, &p)) return eco_last_error_code();
        if (strcmp(f->precision, eco_precision_name(p)))
            return eco_fail_field(ECO_EINVAL, "precision", "use the canonical precision name '%s', not '%s'",
                                  eco_precision_name(p), f->precision);
    }
    return ECO_OK;
}

/* Steps a prepared query to its end, appending one zeroed element of `size` bytes per row filled by `fill`.
 * The statement is reset (cached statements stay usable). */
typedef void (*store_fill_fn)(sqlite3_stmt *st, void *elem);

static eco_err collect_rows(eco_store *s, sqlite3_stmt *st, size_t size, store_fill_fn fill, const char *what,
                            void **out, size_t *count)
{
    size_t n = 0, cap = 0;
    char *v = NULL;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (n == cap) {
            cap = cap ? 2 * cap : 16;
            char *nv = realloc(v, cap * size);
            if (!nv) { free(v); sqlite3_reset(st); return eco_fail(ECO_ENOMEM, "store: out of memory"); }
            v = nv;
        }
        void *x = v + n++ * size;
        memset(x, 0, size);
        fill(st, x);
    }
    sqlite3_reset(st);
    if (rc != SQLITE_DONE) { free(v); return store_db_fail(s, what); }
    *out = v;
    *count = n;
    return ECO_OK;
}

static void fill_record(sqlite3_stmt *st, void *elem) { store_read_record(st, elem); }

static void fill_session(sqlite3_stmt *st, void *elem)
{
    eco_session *x = elem;
    char basis[16];
    store_column_text(st, 0, x->id, sizeof x->id);
    store_column_text(st, 1, x->gpu, sizeof x->gpu);
    store_column_text(st, 2, x->arch, sizeof x->arch);
    store_column_text(st, 3, x->date, sizeof x->date);
    store_column_text(st, 4, x->software, sizeof x->software);
    x->tokens = sqlite3_column_int(st, 5);
    store_column_text(st, 6, basis, sizeof basis);
    x->basis = !strcmp(basis, "gross") ? ECO_BASIS_GROSS : !strcmp(basis, "net") ? ECO_BASIS_NET : ECO_BASIS_UNKNOWN;
    store_column_text(st, 7, x->method, sizeof x->method);
    store_column_text(st, 8, x->source, sizeof x->source);
    store_column_text(st, 9, x->note, sizeof x->note);
}

static void fill_import_error(sqlite3_stmt *st, void *elem)
{
    eco_import_error *x = elem;
    x->import_id = sqlite3_column_int64(st, 0);
    store_column_text(st, 1, x->file, sizeof x->file);
    x->line = (size_t)sqlite3_column_int64(st, 2);
    store_column_text(st, 3, x->message, sizeof x->message);
    store_column_text(st, 4, x->at, sizeof x->at);
}

static void fill_link(sqlite3_stmt *st, void *elem)
{
    eco_import_link *x = elem;
    store_column_text(st, 0, x->source, sizeof x->source);
    store_column_text(st, 1, x->linked_source, sizeof x->linked_source);
    store_column_text(st, 2, x->reason, sizeof x->reason);
}

/* Columns 0-3 of the batch and phase tables: the configuration a row describes. */
static void fill_config_key(sqlite3_stmt *st, char (*gpu)[64], char (*model)[64], eco_precision *precision, int *batch)
{
    char prec[16];
    store_column_text(st, 0, *gpu, sizeof *gpu);
    store_column_text(st, 1, *model, sizeof *model);
    store_column_text(st, 2, prec, sizeof prec);
    if (eco_precision_parse(prec, precision)) eco_clear_error();
    *batch = sqlite3_column_int(st, 3);
}

static void fill_batch_row(sqlite3_stmt *st, void *elem)
{
    eco_batch_row *x = elem;
    fill_config_key(st, &x->gpu, &x->model, &x->precision, &x->batch);
    x->tokens = sqlite3_column_int(st, 4);
    x->n_runs = sqlite3_column_int(st, 5);
    x->e_mj = store_column_double(st, 6);
    x->e_sd_mj = store_column_double(st, 7);
    x->throughput_tok_s = store_column_double(st, 8);
    x->avg_power_w = store_column_double(st, 9);
    store_column_text(st, 10, x->stat, sizeof x->stat);
    store_column_text(st, 11, x->session, sizeof x->session);
    store_column_text(st, 12, x->source, sizeof x->source);
}

static void fill_phase_row(sqlite3_stmt *st, void *elem)
{
    eco_phase_row *x = elem;
    fill_config_key(st, &x->gpu, &x->model, &x->precision, &x->batch);
    x->prefill_active_j_per_call = store_column_double(st, 4);
    x->decode_active_j_per_32_tok = store_column_double(st, 5);
    x->decode_tok_s = store_column_double(st, 6);
    x->prefill_ratio_vs_fp16 = store_column_double(st, 7);
    x->decode_ratio_vs_fp16 = store_column_double(st, 8);
    x->decode_speed_ratio_vs_fp16 = store_column_double(st, 9);
    store_column_text(st, 10, x->session, sizeof x->session);
    store_column_text(st, 11, x->source, sizeof x->source);
}

eco_err eco_store_query_records(eco_store *s, const eco_record_filter *filter, eco_record **out, size_t *count)
{
    *out = NULL;
    *count = 0;
    eco_err e = check_filter(filter);
    if (e) return e;
    char where[512], sql[1024];
    store_filter_sql(filter, where, sizeof where);
    snprintf(sql, sizeof sql, "SELECT " STORE_RECORD_SELECT " FROM records%s ORDER BY arch, precision, params_b, gpu, "
             "source_file, source_line, source, model, batch", where);
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK) return store_db_fail(s, "querying records");
    store_filter_bind(st, filter, 1);
    eco_err e2 = collect_rows(s, st, sizeof(eco_record), fill_record, "querying records", (void **)out, count);
    sqlite3_finalize(st);
    return e2;
}

eco_err eco_store_record_extra(eco_store *s, const char *source, const char *precision, eco_record_extra *out)
{
    static const char sql[] =
        "SELECT r.source, r.precision, r.flags, q.ppl_fp16, q.ppl_quant, q.corpus FROM records r "
        "LEFT JOIN quality q ON q.record_id = r.id WHERE r.source = ? AND r.precision = ? ORDER BY q.id LIMIT 1";
    memset(out, 0, sizeof *out);
    out->ppl_fp16 = out->ppl_quant = NAN;
    sqlite3_stmt *st = store_stmt(s, sql);
    if (!st) return eco_last_error_code();
    store_bind_text(st, 1, source, false);
    store_bind_text(st, 2, precision, false);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        store_column_text(st, 0, out->source, sizeof out->source);
        store_column_text(st, 1, out->precision, sizeof out->precision);
        store_column_text(st, 2, out->flags, sizeof out->flags);
        out->ppl_fp16 = store_column_double(st, 3);
        out->ppl_quant = store_column_double(st, 4);
        store_column_text(st, 5, out->quality_corpus, sizeof out->quality_corpus);
    }
    sqlite3_reset(st);
    if (rc == SQLITE_DONE)
        return eco_fail(ECO_ENOTFOUND, "no record with source '%s' and precision '%s'", source, precision);
    return rc == SQLITE_ROW ? ECO_OK : store_db_fail(s, "reading a record");
}

/* ---------------------------------------------------------------- sessions, import log, links */

eco_err eco_store_upsert_session(eco_store *s, const eco_session *ss) { return store_upsert_session(s, ss); }

eco_err store_upsert_session(eco_store *s, const eco_session *ss)
{
    static const char sql[] =
        "INSERT INTO sessions (id, gpu, arch, date, software, tokens, basis, method, source, note) "
        "VALUES (?,?,?,?,?,?,?,?,?,?) ON CONFLICT(id) DO UPDATE SET gpu=excluded.gpu, arch=excluded.arch, "
        "date=excluded.date, software=excluded.software, tokens=excluded.tokens, basis=excluded.basis, "
        "method=excluded.method, source=excluded.source, note=excluded.note "
        "WHERE (gpu, arch, date, software, tokens, basis, method, source, note) IS NOT "
        "(excluded.gpu, excluded.arch, excluded.date, excluded.software, excluded.tokens, excluded.basis, "
        "excluded.method, excluded.source, excluded.note)";
    if (!ss->id[0]) return eco_fail_field(ECO_EINVAL, "session", "session id is empty");
    sqlite3_stmt *st = store_stmt(s, sql);
    if (!st) return eco_last_error_code();
    int i = 1;
    store_bind_text(st, i++, ss->id, false);
    store_bind_text(st, i++, ss->gpu, false);
    store_bind_text(st, i++, ss->arch, false);
    store_bind_text(st, i++, ss->date, false);
    store_bind_text(st, i++, ss->software, false);
    sqlite3_bind_int(st, i++, ss->tokens);
    store_bind_text(st, i++, eco_energy_basis_name(ss->basis), false);
    store_bind_text(st, i++, ss->method[0] ? ss->method : "unknown", false);
    store_bind_text(st, i++, ss->source, false);
    store_bind_text(st, i++, ss->note, false);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? ECO_OK : store_db_fail(s, "writing a session");
}

eco_err eco_store_list_sessions(eco_store *s, eco_session **out, size_t *count)
{
    static const char sql[] =
        "SELECT id, gpu, arch, date, software, tokens, basis, method, source, note FROM sessions ORDER BY arch, gpu, date, id";
    *out = NULL;
    *count = 0;
    sqlite3_stmt *st = store_stmt(s, sql);
    if (!st) return eco_last_error_code();
    return collect_rows(s, st, sizeof(eco_session), fill_session, "listing sessions", (void **)out, count);
}

eco_err store_log_import_error(eco_store *s, int64_t import_id, const char *file, size_t line, const char *msg)
{
    static const char sql[] = "INSERT INTO import_errors (import_id, file, line, message, at) VALUES (?,?,?,?,?)";
    sqlite3_stmt *st = store_stmt(s, sql);
    if (!st) return eco_last_error_code();
    char now[32];
    store_now_utc(now);
    sqlite3_bind_int64(st, 1, import_id);
    store_bind_text(st, 2, file, false);
    sqlite3_bind_int64(st, 3, (sqlite3_int64)line);
    store_bind_text(st, 4, msg, false);
    store_bind_text(st, 5, now, false);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? ECO_OK : store_db_fail(s, "logging an import error");
}

eco_err eco_store_list_import_errors(eco_store *s, int64_t import_id, eco_import_error **out, size_t *count)
{
    static const char sql[] = "SELECT import_id, file, line, message, at FROM import_errors "
                              "WHERE ?1 = 0 OR import_id = ?1 ORDER BY id";
    *out = NULL;
    *count = 0;
    sqlite3_stmt *st = store_stmt(s, sql);
    if (!st) return eco_last_error_code();
    sqlite3_bind_int64(st, 1, import_id);
    return collect_rows(s, st, sizeof(eco_import_error), fill_import_error, "listing import errors", (void **)out, count);
}

eco_err eco_store_list_import_links(eco_store *s, int64_t import_id, eco_import_link **out, size_t *count)
{
    static const char sql[] = "SELECT l.source, r.source, l.reason FROM import_links l JOIN records r ON r.id = l.record_id "
                              "WHERE ?1 = 0 OR l.import_id = ?1 ORDER BY l.source";
    *out = NULL;
    *count = 0;
    sqlite3_stmt *st = store_stmt(s, sql);
    if (!st) return eco_last_error_code();
    sqlite3_bind_int64(st, 1, import_id);
    return collect_rows(s, st, sizeof(eco_import_link), fill_link, "listing links", (void **)out, count);
}

eco_err eco_store_list_links(eco_store *s, eco_import_link **out, size_t *count)
{
    return eco_store_list_import_links(s, 0, out, count);
}

eco_err eco_store_count(eco_store *s, const char *table, size_t *count)
{
    static const char *const tables[] = {"records", "sessions", "quality", "batch_rows", "phase_rows",
                                         "import_links", "import_errors", "replications", "runs", "imports"};
    *count = 0;
    for (size_t i = 0; table && i < sizeof tables / sizeof tables[0]; i++) {
        if (strcmp(table, tables[i])) continue;
        char sql[64];
        snprintf(sql, sizeof sql, "SELECT count(*) FROM %s", tables[i]);
        int n;
        eco_err e = pragma_int(s, sql, &n);
        if (!e) *count = (size_t)n;
        return e;
    }
    return eco_fail_field(ECO_EINVAL, "table", "unknown store table '%s'", table ? table : "(null)");
}

/* ---------------------------------------------------------------- batch and phase rows */

eco_err eco_store_query_batch_rows(eco_store *s, const char *gpu, const char *model, eco_batch_row **out,
                                   size_t *count)
{
    static const char sql[] =
        "SELECT gpu, model, precision, batch, tokens, n_runs, e_mj, e_sd_mj, throughput_tok_s, avg_power_w, stat, "
        "coalesce(session, ''), source FROM batch_rows WHERE (?1 IS NULL OR gpu = ?1) AND (?2 IS NULL OR model = ?2) "
        "ORDER BY gpu, model, precision, stat, batch, tokens, id";
    *out = NULL;
    *count = 0;
    sqlite3_stmt *st = store_stmt(s, sql);
    if (!st) return eco_last_error_code();
    store_bind_text(st, 1, gpu, false);
    store_bind_text(st, 2, model, false);
    return collect_rows(s, st, sizeof(eco_batch_row), fill_batch_row, "querying batch rows", (void **)out, count);
}

eco_err eco_store_query_phase_rows(eco_store *s, eco_phase_row **out, size_t *count)
{
    static const char sql[] =
        "SELECT gpu, model, precision, batch, prefill_active_j_per_call, decode_active_j_per_32_tok, decode_tok_s, "
        "prefill_ratio_vs_fp16, decode_ratio_vs_fp16, decode_speed_ratio_vs_fp16, coalesce(session, ''), source "
        "FROM phase_rows ORDER BY gpu, model, batch, precision, id";
    *out = NULL;
    *count = 0;
    sqlite3_stmt *st = store_stmt(s, sql);
    if (!st) return eco_last_error_code();
    return collect_rows(s, st, sizeof(eco_phase_row), fill_phase_row, "querying phase rows", (void **)out, count);
}

/* ---------------------------------------------------------------- replications and runs */

const char *eco_validation_name(eco_validation v)
{
    return v == ECO_VALIDATION_VALID ? "valid" : v == ECO_VALIDATION_INVALID ? "invalid" : "unvalidated";
}

/* Documents are stored as TEXT: refuse embedded NULs (they would truncate) and oversize input. */
static eco_err check_doc(const char *what, const char *doc, size_t len)
{
    if (!doc || !len) return eco_fail_field(ECO_EINVAL, what, "%s document is empty", what);
    if (len > ECO_STORE_MAX_FILE_BYTES)
        return eco_fail_field(ECO_ETOOBIG, what, "%s document of %zu bytes is over the limit of %zu", what, len,
                              ECO_STORE_MAX_FILE_BYTES);
    if (memchr(doc, '\0', len)) return eco_fail_field(ECO_EFORMAT, what, "%s document contains a NUL byte", what);
    return ECO_OK;
}

/* Whether two JSON values are the same, numbers by value (2.0 is 2: a re-serialised document may print either). */
static bool same_json_values(const json_t *a, const json_t *b)
{
    if (!a || !b) return a == b; /* a key one side lacks, or a document that did not parse */
    if (json_is_number(a) && json_is_number(b)) return json_number_value(a) == json_number_value(b);
    if (json_typeof(a) != json_typeof(b)) return false;
    if (json_is_array(a)) {
        if (json_array_size(a) != json_array_size(b)) return false;
        for (size_t i = 0; i < json_array_size(a); i++)
            if (!same_json_values(json_array_get(a, i), json_array_get(b, i))) return false;
        return true;
    }
    if (json_is_object(a)) {
        if (json_object_size(a) != json_object_size(b)) return false;
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)a, k, v) {
            if (!same_json_values(v, json_object_get(b, k))) return false;
        }
        return true;
    }
    return json_equal((json_t *)a, (json_t *)b);
}

/* The replication stored with these bytes (by their SHA-256): *found, and *id (may be NULL) when it is. */
static eco_err replication_by_hash(eco_store *s, const char *sha, int64_t *id, bool *found)
{
    sqlite3_stmt *st = store_stmt(s, "SELECT id FROM replications WHERE sha256 = ?");
    if (!st) return eco_last_error_code();
    store_bind_text(st, 1, sha, false);
    int rc = sqlite3_step(st);
    *found = rc == SQLITE_ROW;
    if (*found && id) *id = sqlite3_column_int64(st, 0);
    sqlite3_reset(st);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? ECO_OK : store_db_fail(s, "looking up a replication");
}

eco_err eco_store_add_replication(eco_store *s, const char *name, const char *doc, size_t len,
                                  eco_validation validation, const char *validation_message, int64_t *id,
                                  bool *inserted)
{
    /* a second server on the same file may store the same bytes between the lookup and the insert: no conflict */
    static const char ins[] =
        "INSERT INTO replications (name, sha256, doc, validation, validation_message, submitted_at, run_id, gpu, model) "
        "VALUES (?1,?2,?3,?4,?5,?6," DOC_TEXT_AT("?3", "$.run_id") "," DOC_TEXT_AT("?3", "$.environment.gpu.name") ","
        DOC_TEXT_AT("?3", "$.weights.model") ") ON CONFLICT(sha256) DO NOTHING";
    /* one run is one replication: other bytes under the run id of a valid stored one are refused (an invalid one
     * may be corrected and sent again) */
    static const char same_run[] = "SELECT id FROM replications WHERE validation = 'valid' AND run_id = " DOC_TEXT_AT("?1", "$.run_id");
    /* nor is it stored again without its run id, or under another: the same card (UUID) and the same results, to the
     * last digit of every sample, are the same measurement whatever the bytes around them */
    static const char same_card[] =
        "SELECT id, doc FROM replications WHERE validation = 'valid' AND json_valid(doc) AND json_valid(?1) AND "
        "json_extract(doc, '$.environment.gpu.uuid') IS json_extract(?1, '$.environment.gpu.uuid') ORDER BY id";
    if (inserted) *inserted = false;
    eco_err e = check_doc("replication", doc, len);
    if (e) return e;
    if ((unsigned)validation > ECO_VALIDATION_INVALID)
        return eco_fail_field(ECO_EINVAL, "validation", "unknown validation status %d", (int)validation);
    char sha[65];
    eco_sha256_hex(doc, len, sha);
    bool found;
    if ((e = replication_by_hash(s, sha, id, &found)) || found) return e;
    sqlite3_stmt *st;
    int rc;
    if (validation == ECO_VALIDATION_VALID) {
        if (!(st = store_stmt(s, same_run))) return eco_last_error_code();
        sqlite3_bind_text(st, 1, doc, (int)len, SQLITE_TRANSIENT);
        rc = sqlite3_step(st);
        int64_t other = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
        sqlite3_reset(st);
        if (rc != SQLITE_ROW && rc != SQLITE_DONE) return store_db_fail(s, "looking up a replication's run");
        if (other)
            return eco_fail_field(ECO_EINVAL, "run_id", "this run is stored as replication #%lld, with other bytes: a run is "
                                  "submitted once (a new measurement has its own run_id)", (long long)other);
        if (!(st = store_stmt(s, same_card))) return eco_last_error_code();
        sqlite3_bind_text(st, 1, doc, (int)len, SQLITE_TRANSIENT);
        json_t *mine = json_loadb(doc, len, 0, NULL);
        const json_t *results = json_object_get(mine, "results");
        while (json_is_array(results) && json_array_size(results) && !other && (rc = sqlite3_step(st)) == SQLITE_ROW) {
            json_t *theirs = json_loads((const char *)sqlite3_column_text(st, 1), 0, NULL);
            if (same_json_values(results, json_object_get(theirs, "results"))) other = sqlite3_column_int64(st, 0);
            json_decref(theirs);
        }
        json_decref(mine);
        sqlite3_reset(st);
        if (rc != SQLITE_ROW && rc != SQLITE_DONE) return store_db_fail(s, "looking up a replication's measurement");
        if (other)
            return eco_fail_field(ECO_EINVAL, "results", "these results (the same card, every sample alike) are stored as "
                                  "replication #%lld: one measurement is submitted once, whatever its run id",
                                  (long long)other);
    }
    st = store_stmt(s, ins);
    if (!st) return eco_last_error_code();
    char now[32];
    store_now_utc(now);
    store_bind_text(st, 1, name ? name : "", false);
    store_bind_text(st, 2, sha, false);
    sqlite3_bind_text(st, 3, doc, (int)len, SQLITE_TRANSIENT);
    store_bind_text(st, 4, eco_validation_name(validation), false);
    store_bind_text(st, 5, validation_message ? validation_message : "", false);
    store_bind_text(st, 6, now, false);
    rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE) return store_db_fail(s, "storing a replication");
    if (!sqlite3_changes(s->db)) { /* stored by the other server meanwhile: already stored */
        if ((e = replication_by_hash(s, sha, id, &found))) return e;
        return found ? ECO_OK : eco_fail(ECO_ESTATE, "replication %.12s: neither stored nor found", sha);
    }
    if (id) *id = sqlite3_last_insert_rowid(s->db);
    if (inserted) *inserted = true;
    return ECO_OK;
}

static void read_replication_row(sqlite3_stmt *st, eco_replication *x)
{
    memset(x, 0, sizeof *x);
    char val[16];
    x->id = sqlite3_column_int64(st, 0);
    store_column_text(st, 1, x->name, sizeof x->name);
    store_column_text(st, 2, x->sha256, sizeof x->sha256);
    store_column_text(st, 3, val, sizeof val);
    x->validation = !strcmp(val, "valid") ? ECO_VALIDATION_VALID
                    : !strcmp(val, "invalid") ? ECO_VALIDATION_INVALID : ECO_VALIDATION_UNVALIDATED;
    store_column_text(st, 4, x->validation_message, sizeof x->validation_message);
    store_column_text(st, 5, x->submitted_at, sizeof x->submitted_at);
    store_column_text(st, 6, x->run_id, sizeof x->run_id);
    store_column_text(st, 7, x->gpu, sizeof x->gpu);
    store_column_text(st, 8, x->model, sizeof x->model);
    /* sized for what a valid document holds; anything longer stays valid UTF-8 for the JSON answer */
    eco_utf8_cut_partial(x->name);
    eco_utf8_cut_partial(x->gpu);
    eco_utf8_cut_partial(x->model);
}

#define REPLICATION_COLUMNS "id, name, sha256, validation, validation_message, submitted_at, run_id, gpu, model"

eco_err eco_store_list_replications(eco_store *s, size_t offset, size_t limit, eco_replication **out, size_t *count,
                                    size_t *total)
{
    static const char sql[] = "SELECT " REPLICATION_COLUMNS " FROM replications ORDER BY id LIMIT ? OFFSET ?";
    *out = NULL;
    *count = 0;
    eco_err e = eco_store_count(s, "replications", total);
    if (e) return e;
    sqlite3_stmt *st = store_stmt(s, sql);
    if (!st) return eco_last_error_code();
    sqlite3_bind_int64(st, 1, (sqlite3_int64)(limit > INT64_MAX ? INT64_MAX : limit));
    sqlite3_bind_int64(st, 2, (sqlite3_int64)(offset > INT64_MAX ? INT64_MAX : offset));
    size_t n = 0, cap = 0;
    eco_replication *v = NULL;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (n == cap) {
            cap = cap ? 2 * cap : 8;
            eco_replication *nv = realloc(v, cap * sizeof *v);
            if (!nv) { eco_store_free_replications(v, n); sqlite3_reset(st); return eco_fail(ECO_ENOMEM, "store: out of memory"); }
            v = nv;
        }
        read_replication_row(st, &v[n++]);
    }
    sqlite3_reset(st);
    if (rc != SQLITE_DONE) { eco_store_free_replications(v, n); return store_db_fail(s, "listing replications"); }
    *out = v;
    *count = n;
    return ECO_OK;
}

eco_err eco_store_get_replication(eco_store *s, int64_t id, eco_replication *out)
{
    static const char sql[] = "SELECT " REPLICATION_COLUMNS ", doc FROM replications WHERE id = ?";
    memset(out, 0, sizeof *out);
    sqlite3_stmt *st = store_stmt(s, sql);
    if (!st) return eco_last_error_code();
    sqlite3_bind_int64(st, 1, id);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        read_replication_row(st, out);
        const unsigned char *doc = sqlite3_column_text(st, 9);
        out->doc = strdup(doc ? (const char *)doc : "");
    }
    sqlite3_reset(st);
    if (rc == SQLITE_DONE) return eco_fail_field(ECO_ENOTFOUND, "id", "no replication #%lld", (long long)id);
    if (rc != SQLITE_ROW) return store_db_fail(s, "reading a replication");
    return out->doc ? ECO_OK : eco_fail(ECO_ENOMEM, "store: out of memory");
}

void eco_store_free_replications(eco_replication *r, size_t count)
{
    for (size_t i = 0; r && i < count; i++) free(r[i].doc);
    free(r);
}

eco_err eco_store_add_run(eco_store *s, const char *run_id, const char *doc, size_t len, bool *inserted)
{
    static const char sql[] = "INSERT INTO runs (run_id, sha256, doc, stored_at) VALUES (?,?,?,?) "
                              "ON CONFLICT(run_id) DO NOTHING";
    if (inserted) *inserted = false;
    if (!run_id || !*run_id) return eco_fail_field(ECO_EINVAL, "run_id", "run id is empty");
    eco_err e = check_doc("run", doc, len);
    if (e) return e;
    size_t before;
    if ((e = eco_store_count(s, "runs", &before))) return e;
    char sha[65], now[32];
    eco_sha256_hex(doc, len, sha);
    store_now_utc(now);
    sqlite3_stmt *st = store_stmt(s, sql);
    if (!st) return eco_last_error_code();
    store_bind_text(st, 1, run_id, false);
    store_bind_text(st, 2, sha, false);
    sqlite3_bind_text(st, 3, doc, (int)len, SQLITE_TRANSIENT);
    store_bind_text(st, 4, now, false);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE) return store_db_fail(s, "storing a run");
    size_t after;
    if ((e = eco_store_count(s, "runs", &after))) return e;
    if (inserted) *inserted = after > before;
    if (after > before) return ECO_OK;
    /* stored before: the same document is a no-op; another one under this id would replace a measurement */
    sqlite3_stmt *q = store_stmt(s, "SELECT sha256 FROM runs WHERE run_id = ?");
    if (!q) return eco_last_error_code();
    store_bind_text(q, 1, run_id, false);
    char stored[65] = "";
    if (sqlite3_step(q) == SQLITE_ROW && sqlite3_column_text(q, 0))
        snprintf(stored, sizeof stored, "%s", (const char *)sqlite3_column_text(q, 0));
    sqlite3_reset(q);
    if (strcmp(stored, sha))
        return eco_fail_field(ECO_EINVAL, "run_id",
                              "run %s is already stored from another document (sha256 %.12s..., this one %.12s...): an "
                              "edited or re-measured run needs its own run_id; the stored run is unchanged",
                              run_id, stored, sha);
    return ECO_OK;
}

eco_err eco_store_begin(eco_store *s) { return store_exec(s, "BEGIN IMMEDIATE"); }
eco_err eco_store_commit(eco_store *s) { return store_exec(s, "COMMIT"); }
void eco_store_rollback(eco_store *s)
{
    char keep[512]; /* the error that made us roll back is the one to report */
    snprintf(keep, sizeof keep, "%s", eco_last_error());
    eco_err code = eco_last_error_code();
    store_exec(s, "ROLLBACK");
    if (code) eco_fail(code, "%s", keep);
}

eco_err eco_store_run_source(eco_store *s, const char *run_id, char *buf, size_t cap)
{
    if (cap) buf[0] = '\0';
    /* rows stored before run ids were kept whole hold its first 63 bytes as their session */
    sqlite3_stmt *st = store_stmt(s, "SELECT source FROM records WHERE origin = 'run' AND (session = ?1 OR (length(session) = 63 "
                                     "AND session = substr(?1, 1, 63))) ORDER BY session = ?1 DESC, id LIMIT 1");
    if (!st) return eco_last_error_code();
    store_bind_text(st, 1, run_id, false);
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0) && cap) {
        snprintf(buf, cap, "%s", (const char *)sqlite3_column_text(st, 0));
        char *hash = strrchr(buf, '#'); /* rows are "<file>#<precision>" */
        if (hash) *hash = '\0';
    }
    sqlite3_reset(st);
    return ECO_OK;
}

eco_err eco_store_check_integrity(eco_store *s)
{
    sqlite3_stmt *st = store_stmt(s, "PRAGMA quick_check(1)");
    if (!st) return eco_last_error_code();
    int rc = sqlite3_step(st);
    char verdict[256] = "";
    if (rc == SQLITE_ROW) store_column_text(st, 0, verdict, sizeof verdict);
    sqlite3_reset(st);
    for (char *c = verdict; *c; c++)
        if (*c == '\n') *c = ' ';
    if (rc != SQLITE_ROW) return store_db_fail(s, "checking the file");
    if (strcmp(verdict, "ok"))
        return eco_fail(ECO_EFORMAT, "%s: the file is damaged (%s): restore it from a copy, or rebuild it with `eco import`",
                        s->path, verdict);
    return ECO_OK;
}

eco_err eco_store_run_file_taken(eco_store *s, const char *file, const char *run_id, bool *taken)
{
    *taken = false;
    sqlite3_stmt *st = store_stmt(s, "SELECT 1 FROM records WHERE origin = 'run' AND session <> ?2 AND NOT (length(session) = 63 "
                                     "AND session = substr(?2, 1, 63)) AND substr(source, 1, length(?1) + 1) = ?1 || '#' LIMIT 1");
    if (!st) return eco_last_error_code();
    store_bind_text(st, 1, file, false);
    store_bind_text(st, 2, run_id, false);
    int rc = sqlite3_step(st);
    *taken = rc == SQLITE_ROW;
    sqlite3_reset(st);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? ECO_OK : store_db_fail(s, "looking up a run's file name");
}

eco_err eco_store_get_run(eco_store *s, const char *run_id, char **doc_out)
{
    static const char sql[] = "SELECT doc FROM runs WHERE run_id = ?";
    *doc_out = NULL;
    sqlite3_stmt *st = store_stmt(s, sql);
    if (!st) return eco_last_error_code();
    store_bind_text(st, 1, run_id, false);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        const unsigned char *t = sqlite3_column_text(st, 0);
        *doc_out = strdup(t ? (const char *)t : "");
    }
    sqlite3_reset(st);
    if (rc == SQLITE_DONE) return eco_fail(ECO_ENOTFOUND, "no run '%s' in the store", run_id ? run_id : "");
    if (rc != SQLITE_ROW) return store_db_fail(s, "reading a run");
    return *doc_out ? ECO_OK : eco_fail(ECO_ENOMEM, "store: out of memory");
}
