/* The embedded SQLite store: reference rows, our runs and submitted replications, with provenance.
 * (Owned by the store work; the functions below are the contract other modules code against.) */
#ifndef ECO_STORE_H
#define ECO_STORE_H

#include <stdbool.h>
#include <stddef.h>

#include "eco/err.h"
#include "eco/record.h"

typedef struct eco_store eco_store;

/* Opens (creating and migrating as needed) the database at `path` (WAL, STRICT tables). */
eco_err eco_store_open(const char *path, eco_store **out);
void eco_store_close(eco_store *s);

typedef struct {
    size_t files, rows_read, rows_inserted, rows_unchanged, rows_rejected;
    char first_error[512]; /* "measured.csv:12: params_b 'x' is not a number" */
} eco_import_report;

/* Imports the reference dataset folder (data/reference). Idempotent: a second import inserts nothing.
 * A malformed row is reported (file:line) and skipped; every other row is kept. */
eco_err eco_store_import_reference_dir(eco_store *s, const char *dir, eco_import_report *report);

typedef struct {
    const char *arch;      /* NULL = any */
    const char *precision; /* canonical precision name, NULL = any */
    const char *gpu;       /* NULL = any */
    const char *protocol;  /* eco_record_protocol_key, NULL = any */
    int origin;            /* -1 = any, else eco_record_origin */
} eco_record_filter;

/* All records matching `filter`, in a stable order (arch, precision, params_b, gpu, source). Caller frees *out. */
eco_err eco_store_query_records(eco_store *s, const eco_record_filter *filter, eco_record **out, size_t *count);
eco_err eco_store_insert_record(eco_store *s, const eco_record *r, bool *inserted);

#endif
