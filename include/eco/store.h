/* The embedded SQLite store: reference rows, our runs and submitted replications, with provenance.
 * Also the CSV reader used for every CSV the project ingests (untrusted input: bounded, fuzzed). */
#ifndef ECO_STORE_H
#define ECO_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "eco/err.h"
#include "eco/record.h"

/* ---------------------------------------------------------------- CSV (RFC 4180 with the usual leniencies) */

#define ECO_CSV_MAX_FIELDS 1024

/* One parsed row. `fields` point into the reader's buffer and stay valid until the next eco_csv_next. */
typedef struct {
    const char *fields[ECO_CSV_MAX_FIELDS];
    size_t n_fields;
    size_t line; /* 1-based physical line the row starts on (quoted newlines advance it) */
} eco_csv_row;

typedef struct eco_csv eco_csv;

/* Reads rows from `data` (not copied: it must outlive the reader). Skips a UTF-8 BOM; accepts LF, CRLF and
 * lone CR line ends, quoted fields with "" escapes, commas and newlines inside quotes. `name` prefixes errors. */
eco_err eco_csv_open(const char *data, size_t len, const char *name, eco_csv **out);
void eco_csv_close(eco_csv *c);
/* Next non-blank row: ECO_OK with *eof = false, or *eof = true at the end. ECO_EFORMAT ("name:LINE: ...") for an
 * unterminated quote, a quote inside an unquoted field, text after a closing quote or a NUL byte; ECO_ETOOBIG over
 * ECO_CSV_MAX_FIELDS. After an error the reader resumes at the next line. */
eco_err eco_csv_next(eco_csv *c, eco_csv_row *row, bool *eof);

/* Reads a whole file, refusing files over max_bytes (ECO_ETOOBIG) and unreadable ones (ECO_EIO). The buffer is
 * NUL-terminated; free() it. */
eco_err eco_store_read_file(const char *path, size_t max_bytes, char **out, size_t *len);
#define ECO_STORE_MAX_FILE_BYTES ((size_t)16 << 20)

/* SHA-256 of data as 64 lower-case hex digits + NUL. */
void eco_sha256_hex(const void *data, size_t len, char out[65]);
/* SHA-256 of a file's bytes, read in 1 MB pieces. */
eco_err eco_sha256_file_hex(const char *path, char out[65]);

/* ---------------------------------------------------------------- the store */

typedef struct eco_store eco_store;

/* Opens (creating and migrating as needed) the database at `path` (WAL, STRICT tables, foreign keys,
 * busy timeout). A database written by a newer eco (user_version above ours) is refused. */
eco_err eco_store_open(const char *path, eco_store **out);
/* SQLite's quick_check over the whole file: EFORMAT naming the first problem when the file is damaged. */
eco_err eco_store_check_integrity(eco_store *s);
/* Same, applying migrations only up to `version` (tests of upgrades from old databases). */
eco_err eco_store_open_version(const char *path, int version, eco_store **out);
void eco_store_close(eco_store *s);
int eco_store_schema_version(void); /* the newest schema this build writes */
int eco_store_user_version(eco_store *s);

typedef struct {
    size_t files, rows_read, rows_inserted, rows_unchanged, rows_rejected;
    char first_error[512]; /* "measured.csv:12: params_b 'x' is not a number" */
    /* extensions */
    size_t rows_updated;  /* same key, changed content: updated in place */
    size_t rows_linked;   /* duplicates of rows from another file: linked, not inserted */
    size_t files_failed;  /* missing, too big or unreadable files (their rows are not counted) */
    size_t rows_baseline; /* fp16 rows of per-config tables, used as the baseline of the other rows */
    int64_t import_id;    /* key of this import in the imports and import_errors tables */
    size_t rows_removed;  /* stored rows of a re-read file that it no longer holds (a row edited away, lines moved) */
} eco_import_report;

/* Imports the reference dataset folder (data/reference) as its manifest.csv describes it. Idempotent: a second
 * import inserts nothing. A malformed row is reported (file:line, in import_errors) and skipped; every other row
 * is kept. A file that is missing, unreadable or over ECO_STORE_MAX_FILE_BYTES is reported and skipped, the other
 * files are imported, and the call then returns that file's error (ECO_EIO / ECO_ETOOBIG). */
eco_err eco_store_import_reference_dir(eco_store *s, const char *dir, eco_import_report *report);
/* Same with a manifest from elsewhere (e.g. importing ../shared/reference with data/reference/manifest.csv). */
eco_err eco_store_import_reference_dir_manifest(eco_store *s, const char *dir, const char *manifest_path,
                                                eco_import_report *report);

typedef struct {
    const char *arch;      /* NULL = any */
    const char *precision; /* canonical precision name, NULL = any */
    const char *gpu;       /* NULL = any */
    const char *protocol;  /* eco_record_protocol_key, NULL = any */
    int origin;            /* -1 = any, else eco_record_origin */
    /* extensions (zero = any) */
    const char *session;     /* session id */
    const char *source_file; /* e.g. "measured.csv": exactly the anchor's fit input */
    const char *model;
} eco_record_filter;

/* The reference dataset's citation and licence (CC BY 4.0), for every answer that serves its rows. */
const char *eco_reference_attribution(void);

/* A filter that matches everything (origin = -1). */
eco_record_filter eco_record_filter_any(void);

/* All records matching `filter` (NULL = all), in a stable order (arch, precision, params_b, gpu, source).
 * Caller frees *out. */
eco_err eco_store_query_records(eco_store *s, const eco_record_filter *filter, eco_record **out, size_t *count);
/* Inserts or updates a record keyed by (origin, source, gpu, model, precision, batch): *inserted is true for a new
 * row, false for an existing one (updated in place when its content changed). The record is checked first. */
eco_err eco_store_insert_record(eco_store *s, const eco_record *r, bool *inserted);

/* Flags and quality attached to a record (NULL flags = ""), looked up by its source and precision. */
typedef struct {
    char source[ECO_SOURCE_SIZE];
    char precision[16];
    char flags[160];       /* e.g. "fp16-back-derived", or a run's "throttled fp16:throttled" */
    double ppl_fp16, ppl_quant; /* NAN when no quality row */
    char quality_corpus[80];
} eco_record_extra;

typedef struct {
    char id[ECO_SESSION_SIZE], gpu[ECO_GPU_NAME_SIZE], arch[16], date[32], software[128];
    int tokens;
    eco_energy_basis basis;
    char method[32];
    char source[ECO_SOURCE_SIZE];
    char note[1280]; /* a run session's note carries the engine design */
} eco_session;

eco_err eco_store_list_sessions(eco_store *s, eco_session **out, size_t *count);
/* Inserts or updates a session (records name their session, so it must exist first). */
eco_err eco_store_upsert_session(eco_store *s, const eco_session *session);

typedef struct {
    int64_t import_id;
    char file[160];
    size_t line; /* 0 = the whole file */
    char message[512];
    char at[32]; /* UTC, ISO 8601 */
} eco_import_error;

/* Import errors of one import (import_id > 0) or of all imports (0), in order. Caller frees *out. */
eco_err eco_store_list_import_errors(eco_store *s, int64_t import_id, eco_import_error **out, size_t *count);

typedef struct {
    char source[160];        /* the duplicate row, "ecocompute-ai_a800_summary.csv:3" */
    char linked_source[160]; /* the record it repeats, "measured.csv:28" */
    char reason[256];
} eco_import_link;

eco_err eco_store_list_links(eco_store *s, eco_import_link **out, size_t *count);
/* The links one import made or confirmed (eco_import_report.import_id; 0: every import's, as eco_store_list_links). */
eco_err eco_store_list_import_links(eco_store *s, int64_t import_id, eco_import_link **out, size_t *count);

/* Batch-scaling rows (energy per generated token vs batch size) and phase rows (prefill/decode). */
typedef struct {
    char gpu[64], model[64];
    eco_precision precision;
    int batch, tokens, n_runs;
    double e_mj;          /* energy per generated token, mJ (= J per 1k tokens) */
    double e_sd_mj;       /* NAN for raw rows */
    double throughput_tok_s, avg_power_w;
    char stat[8];         /* "raw" (one run) or "mean" */
    char session[64], source[160];
} eco_batch_row;

eco_err eco_store_query_batch_rows(eco_store *s, const char *gpu, const char *model, eco_batch_row **out,
                                   size_t *count);

typedef struct {
    char gpu[64], model[64];
    eco_precision precision;
    int batch;
    double prefill_active_j_per_call, decode_active_j_per_32_tok, decode_tok_s;
    double prefill_ratio_vs_fp16, decode_ratio_vs_fp16, decode_speed_ratio_vs_fp16;
    char session[64], source[160];
} eco_phase_row;

eco_err eco_store_query_phase_rows(eco_store *s, eco_phase_row **out, size_t *count);

/* ---------------------------------------------------------------- replications and runs (raw energy.json) */

typedef enum { ECO_VALIDATION_UNVALIDATED = 0, ECO_VALIDATION_VALID, ECO_VALIDATION_INVALID } eco_validation;
const char *eco_validation_name(eco_validation v); /* "unvalidated", "valid", "invalid" */

typedef struct {
    int64_t id;
    char name[160];        /* file name or submitter-given label */
    char sha256[65];
    eco_validation validation;
    char validation_message[512];
    char submitted_at[32];
    char run_id[ECO_SESSION_SIZE], gpu[ECO_GPU_NAME_SIZE], model[ECO_MODEL_NAME_SIZE]; /* "" when the document has none */
    char *doc;             /* the raw document, by eco_store_get_replication only (owned; free it) */
} eco_replication;

/* Stores the raw document (validation is the caller's). Keyed by its SHA-256: the same bytes again give
 * *inserted = false and leave the first row unchanged. A valid document with the run_id of a stored valid one but
 * other bytes is refused (EINVAL, field run_id): one run, one replication. */
eco_err eco_store_add_replication(eco_store *s, const char *name, const char *doc, size_t len,
                                  eco_validation validation, const char *validation_message, int64_t *id,
                                  bool *inserted);
/* A page of replications in id order, without their documents; *total counts them all. */
eco_err eco_store_list_replications(eco_store *s, size_t offset, size_t limit, eco_replication **out, size_t *count,
                                    size_t *total);
/* One replication with its document (ENOTFOUND when there is none of that id). */
eco_err eco_store_get_replication(eco_store *s, int64_t id, eco_replication *out);
void eco_store_free_replications(eco_replication *r, size_t count);

/* Our own measured energy.json documents, keyed by run id. The same document again is a no-op (*inserted false);
 * another document under a stored run id is ECO_EINVAL (field "run_id") and the stored one is kept: a run's
 * measurements are never replaced silently. */
eco_err eco_store_add_run(eco_store *s, const char *run_id, const char *doc, size_t len, bool *inserted);
/* One transaction around several writes (a run and its rows): all or none. Rollback keeps the last error. */
eco_err eco_store_begin(eco_store *s);
eco_err eco_store_commit(eco_store *s);
void eco_store_rollback(eco_store *s);

/* The source file name a stored run's rows were imported under ("" when it has none; "<file>@<run_id>" when another
 * run had the file name first), so the same run read from a copy elsewhere updates those rows rather than adding a
 * second set. Rows stored before run ids were kept whole are found by their first 63 bytes. */
eco_err eco_store_run_source(eco_store *s, const char *run_id, char *buf, size_t cap);
/* Whether rows of another run than run_id are stored under the file name file (as "<file>#<precision>"): the new
 * run's rows are then named "<file>@<run_id>" (every run's default file name is energy.json). */
eco_err eco_store_run_file_taken(eco_store *s, const char *file, const char *run_id, bool *taken);
eco_err eco_store_get_run(eco_store *s, const char *run_id, char **doc_out);

/* Row count of a store table ("records", "sessions", "quality", "batch_rows", "phase_rows", "import_links",
 * "import_errors", "replications", "runs", "imports"). */
eco_err eco_store_count(eco_store *s, const char *table, size_t *count);

/* ---------------------------------------------------------------- export */

typedef enum { ECO_EXPORT_CSV = 0, ECO_EXPORT_JSON } eco_export_format;

/* Writes the records matching `filter` (NULL = all) with their delta, protocol, flags and perplexity. CSV: a
 * header and one row per record (RFC 4180 quoting). JSON: {"records":[...],"count":N,"attribution":"..."}. */
eco_err eco_store_export_records(eco_store *s, const eco_record_filter *filter, eco_export_format format, FILE *out,
                                 size_t *count);
/* Flags and perplexity of the record with this source and precision (ECO_ENOTFOUND when none). */
eco_err eco_store_record_extra(eco_store *s, const char *source, const char *precision, eco_record_extra *out);

#endif
