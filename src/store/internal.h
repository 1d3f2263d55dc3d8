/* Shared by the store's own files (store.c, import.c, export.c); not part of the public API. */
#ifndef ECO_STORE_INTERNAL_H
#define ECO_STORE_INTERNAL_H

#include <sqlite3.h>

#include "eco/store.h"

#define STORE_STMT_CACHE 64

struct eco_store {
    sqlite3 *db;
    char path[512];
    struct {
        const char *sql; /* identity of a static SQL string */
        sqlite3_stmt *st;
    } cache[STORE_STMT_CACHE];
    size_t n_cache;
};

/* The prepared statement for `sql` (a string literal: cached by address), reset with bindings cleared.
 * NULL with the error set when it cannot be prepared. */
sqlite3_stmt *store_stmt(eco_store *s, const char *sql);
/* Sets the error from the connection's message: "<path>: <what>: <sqlite message>". */
eco_err store_db_fail(eco_store *s, const char *what);
eco_err store_exec(eco_store *s, const char *sql);
/* Binds a text (NULL/"" -> NULL when null_if_empty) or a double (NAN -> NULL). */
int store_bind_text(sqlite3_stmt *st, int i, const char *v, bool null_if_empty);
int store_bind_double(sqlite3_stmt *st, int i, double v);
double store_column_double(sqlite3_stmt *st, int i); /* NULL -> NAN */
void store_column_text(sqlite3_stmt *st, int i, char *buf, size_t cap);
void store_now_utc(char out[32]);

typedef enum { STORE_INSERTED = 0, STORE_UPDATED, STORE_UNCHANGED } store_upsert;

typedef struct {
    const char *source_file; /* file name without folder, "" for runs */
    size_t source_line;
    const char *raw_note;    /* the source's own note, kept whole */
} store_record_meta;

/* Insert, update (content changed) or leave a record, keyed by (origin, source, gpu, model, precision, batch). */
eco_err store_upsert_record(eco_store *s, const eco_record *r, const store_record_meta *meta, store_upsert *res,
                            int64_t *id);
eco_err store_upsert_session(eco_store *s, const eco_session *ss);
eco_err store_log_import_error(eco_store *s, int64_t import_id, const char *file, size_t line, const char *msg);
/* Manifest kinds whose files the import reads (not "fit-reference" or "corpus", which are only listed), and those of
 * them whose rows are linked to or checked against other files' rows, so read after the others. */
bool store_kind_is_imported(const char *kind);
bool store_kind_is_dependent(const char *kind);
/* Maps the current row of a statement selecting STORE_RECORD_COLUMNS into r. */
void store_read_record(sqlite3_stmt *st, eco_record *r);
/* WHERE clause and bindings for a record filter; returns the number of '?' placeholders written. */
size_t store_filter_sql(const eco_record_filter *f, char *where, size_t cap);
void store_filter_bind(sqlite3_stmt *st, const eco_record_filter *f, int first);

#define STORE_RECORD_COLUMNS                                                                                       \
    "gpu, arch, vram_gb, model, params_b, precision, batch, e_fp16_mj, e_quant_mj, e_fp16_sd_mj, e_quant_sd_mj, "  \
    "cv_pct, n_trials, n_iterations, tokens, basis, method, backend, origin, session, source, synthetic_weights, " \
    "single_trial, note"
/* What store_read_record reads: the stored columns and the flags. */
#define STORE_RECORD_SELECT STORE_RECORD_COLUMNS ", flags"

#endif
