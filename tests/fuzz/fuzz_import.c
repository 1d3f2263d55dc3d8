/* libFuzzer target: the reference-dataset import (src/store/import.c) with one of its files replaced by the input.
 * The reference folder is copied with a twin of each config table added (see add_twins).
 * The first byte picks the file (its low 7 bits: the manifest's imported files, in order, twins last; 0x7f: the
 * manifest itself, for which only the store-wide promises hold) and the store (its top bit: an empty store, a first
 * import; else one that already holds the real dataset, as when `eco import` is run again after someone edits a
 * file); the rest is that file's new content. The import must keep these promises:
 *   - a bad file or row is refused with a documented code and a message, logged once per rejected row or failed
 *     file in import_errors, and blamed on the file that holds it (or a file checked against it);
 *   - the rows of the other stand-alone files stay exactly as they were (nothing else is lost);
 *   - every stored record passes eco_record_check;
 *   - importing the same folder again changes nothing (no insert, update or removal; same rejections);
 *   - putting the real file back and importing gives back the store of the real dataset, byte for byte (stale rows
 *     removed, links and perplexities reattached).
 * Seeds: tests/fuzz/corpus/fuzz_import, each real file behind its index byte, and a few damaged ones. */
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "eco/record.h"
#include "eco/store.h"
#include "fuzz_source_root.h"
#include "store/internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_FILES 32

typedef struct {
    char name[160];
    bool dependent; /* read after the others, linked to or checked against their rows */
    char *original;
    size_t original_len;
} data_file;

/* A dump of the store's dataset tables: one line per row, "<table>\t<source>\t<columns...>", sorted. Row ids are
 * left out (rows re-inserted after a removal get new ids); a link or perplexity names its record by source. */
typedef struct {
    char **lines;
    size_t n, cap;
} snapshot;

static struct {
    bool ready;
    char dir[512];
    eco_store *store; /* holds the real dataset between inputs */
    eco_store *cur;   /* the store an input is imported into: that one, or an empty one */
    data_file files[MAX_FILES];
    size_t n_files;
    data_file manifest; /* picked by the first byte's low 7 bits all set */
    snapshot baseline;
} g;

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "fuzz_import: ");
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n");
    abort();
}

static void write_bytes(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f || (len && fwrite(data, 1, len, f) != len) || fclose(f)) fail("cannot write %s: %s", path, strerror(errno));
}

/* The manifest's imported files, each once, with their kind's dependence. */
static void read_manifest(const char *dir)
{
    char path[700];
    snprintf(path, sizeof path, "%s/manifest.csv", dir);
    char *text;
    size_t len;
    if (eco_store_read_file(path, ECO_STORE_MAX_FILE_BYTES, &text, &len)) fail("%s", eco_last_error());
    eco_csv *c;
    if (eco_csv_open(text, len, "manifest.csv", &c)) fail("%s", eco_last_error());
    eco_csv_row row;
    bool eof = false;
    int col_file = -1, col_kind = -1;
    for (bool header = true;; header = false) {
        if (eco_csv_next(c, &row, &eof)) fail("manifest: %s", eco_last_error());
        if (eof) break;
        if (header) {
            for (size_t i = 0; i < row.n_fields; i++) {
                if (!strcmp(row.fields[i], "file")) col_file = (int)i;
                if (!strcmp(row.fields[i], "kind")) col_kind = (int)i;
            }
            if (col_file < 0 || col_kind < 0) fail("manifest: no file or kind column");
            continue;
        }
        const char *file = row.fields[col_file], *kind = row.fields[col_kind];
        if (!store_kind_is_imported(kind)) continue;
        bool seen = false;
        for (size_t i = 0; i < g.n_files; i++) seen = seen || !strcmp(g.files[i].name, file);
        if (seen) continue;
        if (g.n_files == MAX_FILES) fail("manifest: more than %d files", MAX_FILES);
        data_file *f = &g.files[g.n_files++];
        snprintf(f->name, sizeof f->name, "%s", file);
        f->dependent = store_kind_is_dependent(kind);
    }
    eco_csv_close(c);
    free(text);
}

/* Copies every plain file of the reference folder into the work folder. */
static void copy_reference(const char *src)
{
    DIR *d = opendir(src);
    if (!d) fail("cannot open %s", src);
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char from[4600], to[1024];
        snprintf(from, sizeof from, "%s/%s", src, e->d_name);
        snprintf(to, sizeof to, "%s/%s", g.dir, e->d_name);
        char *text;
        size_t len;
        if (eco_store_read_file(from, ECO_STORE_MAX_FILE_BYTES, &text, &len)) continue; /* a folder */
        write_bytes(to, text, len);
        free(text);
    }
    closedir(d);
}

/* A twin of every config table (twin-<file>, same manifest fields, listed last): the real manifest gives each
 * campaign one table, so without twins no config row could repeat another config table's row, and the links
 * between dependent files would go untested. */
static void add_twins(void)
{
    char path[700];
    snprintf(path, sizeof path, "%s/manifest.csv", g.dir);
    char *text;
    size_t len;
    if (eco_store_read_file(path, ECO_STORE_MAX_FILE_BYTES, &text, &len)) fail("%s", eco_last_error());
    FILE *out = fopen(path, "ab");
    if (!out) fail("cannot append to %s", path);
    if (len && text[len - 1] != '\n') fputc('\n', out);
    for (const char *line = text; line < text + len;) {
        const char *end = memchr(line, '\n', (size_t)(text + len - line));
        if (!end) end = text + len;
        const char *comma = memchr(line, ',', (size_t)(end - line));
        static const char kind[] = ",config-table,";
        if (comma && (size_t)(end - comma) > strlen(kind) && !strncmp(comma, kind, strlen(kind))) {
            char name[160], from[1024], to[1024];
            snprintf(name, sizeof name, "%.*s", (int)(comma - line), line);
            fprintf(out, "twin-%.*s\n", (int)(end - line), line);
            snprintf(from, sizeof from, "%s/%s", g.dir, name);
            snprintf(to, sizeof to, "%s/twin-%s", g.dir, name);
            char *table;
            size_t n;
            if (eco_store_read_file(from, ECO_STORE_MAX_FILE_BYTES, &table, &n)) fail("%s", eco_last_error());
            write_bytes(to, table, n);
            free(table);
        }
        line = end + 1;
    }
    if (fclose(out)) fail("cannot write %s", path);
    free(text);
}

/* Each imported file's real content, written back after an input replaced it. */
static void load_originals(void)
{
    for (size_t i = 0; i < g.n_files; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", g.dir, g.files[i].name);
        if (eco_store_read_file(path, ECO_STORE_MAX_FILE_BYTES, &g.files[i].original, &g.files[i].original_len))
            fail("%s is in the manifest but cannot be read: %s", g.files[i].name, eco_last_error());
    }
    char path[700];
    snprintf(g.manifest.name, sizeof g.manifest.name, "manifest.csv");
    snprintf(path, sizeof path, "%s/manifest.csv", g.dir);
    if (eco_store_read_file(path, ECO_STORE_MAX_FILE_BYTES, &g.manifest.original, &g.manifest.original_len))
        fail("%s", eco_last_error());
}

static void add_line(snapshot *s, char *line)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 256;
        s->lines = realloc(s->lines, s->cap * sizeof *s->lines);
        if (!s->lines) fail("out of memory");
    }
    s->lines[s->n++] = line;
}

static int by_text(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static void snapshot_free(snapshot *s)
{
    for (size_t i = 0; i < s->n; i++) free(s->lines[i]);
    free(s->lines);
    memset(s, 0, sizeof *s);
}

/* Rows of one query as lines; every column except those named id, import_id and record_id, and a quality row's
 * content hash (it covers the record id, so that a re-inserted record's perplexity follows it). */
static void dump_query(snapshot *s, const char *table, const char *sql)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(g.cur->db, sql, -1, &st, NULL) != SQLITE_OK) fail("%s: %s", sql, sqlite3_errmsg(g.cur->db));
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        char *line = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&line, &len);
        if (!f) fail("out of memory");
        fprintf(f, "%s", table);
        for (int i = 0; i < sqlite3_column_count(st); i++) {
            const char *name = sqlite3_column_name(st, i);
            if (!strcmp(name, "id") || !strcmp(name, "import_id") || !strcmp(name, "record_id")) continue;
            if (!strcmp(table, "quality") && !strcmp(name, "content_hash")) continue;
            switch (sqlite3_column_type(st, i)) {
            case SQLITE_NULL: fprintf(f, "\tNULL"); break;
            case SQLITE_INTEGER: fprintf(f, "\t%lld", (long long)sqlite3_column_int64(st, i)); break;
            case SQLITE_FLOAT: fprintf(f, "\t%.17g", sqlite3_column_double(st, i)); break;
            default: fprintf(f, "\t%s", (const char *)sqlite3_column_text(st, i)); break;
            }
        }
        if (fclose(f)) fail("out of memory");
        add_line(s, line);
    }
    if (rc != SQLITE_DONE) fail("%s: %s", sql, sqlite3_errmsg(g.cur->db));
    sqlite3_finalize(st);
}

static void take_snapshot(snapshot *s)
{
    memset(s, 0, sizeof *s);
    /* the source first, so a file's rows are the lines with "<table>\t<file>:" in front */
    dump_query(s, "records", "SELECT source AS key, * FROM records");
    dump_query(s, "links", "SELECT l.source AS key, l.*, r.source AS linked FROM import_links l "
                           "LEFT JOIN records r ON r.id = l.record_id");
    dump_query(s, "quality", "SELECT q.source AS key, q.*, r.source AS linked FROM quality q "
                             "LEFT JOIN records r ON r.id = q.record_id");
    dump_query(s, "batch", "SELECT source AS key, * FROM batch_rows");
    dump_query(s, "phase", "SELECT source AS key, * FROM phase_rows");
    dump_query(s, "sessions", "SELECT id AS key, * FROM sessions");
    if (s->n) qsort(s->lines, s->n, sizeof *s->lines, by_text); /* an empty store has no lines (NULL) */
}

/* Whether a line is a row from `file` (its source is "<file>:<line>"). */
static bool line_of_file(const char *line, const char *file)
{
    const char *tab = strchr(line, '\t');
    size_t n = strlen(file);
    return tab && !strncmp(tab + 1, file, n) && tab[1 + n] == ':';
}

/* Lines equal, or (file != NULL) the lines of that file equal. */
static void expect_same(const snapshot *want, const snapshot *got, const char *file, const char *when)
{
    size_t i = 0, k = 0;
    for (;;) {
        while (file && i < want->n && !line_of_file(want->lines[i], file)) i++;
        while (file && k < got->n && !line_of_file(got->lines[k], file)) k++;
        if (i == want->n || k == got->n) break;
        if (strcmp(want->lines[i], got->lines[k])) fail("%s: %s\n  want: %s\n  got:  %s", when, file ? file : "store",
                                                         want->lines[i], got->lines[k]);
        i++, k++;
    }
    if (i != want->n) fail("%s: %s lost a row: %s", when, file ? file : "store", want->lines[i]);
    if (k != got->n) fail("%s: %s gained a row: %s", when, file ? file : "store", got->lines[k]);
}

static void set_up(void)
{
    char src[4200];
    fuzz_source_path(src, sizeof src, "data/reference");
    const char *tmp = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    snprintf(g.dir, sizeof g.dir, "%s/eco-fuzz-import-XXXXXX", tmp);
    if (!mkdtemp(g.dir)) fail("mkdtemp %s: %s", g.dir, strerror(errno));
    copy_reference(src);
    add_twins();
    read_manifest(g.dir);
    if (!g.n_files) fail("the manifest lists no imported file");
    load_originals();
    char db[600];
    snprintf(db, sizeof db, "%s/store.db", g.dir);
    if (eco_store_open(db, &g.store)) fail("%s", eco_last_error());
    g.cur = g.store;
    eco_import_report rep;
    if (eco_store_import_reference_dir(g.store, g.dir, &rep) || rep.rows_rejected || rep.files_failed)
        fail("the real dataset does not import cleanly: %s", rep.first_error);
    take_snapshot(&g.baseline);
    g.ready = true;
}

static void tear_down(void)
{
    if (!g.ready) return;
    eco_store_close(g.store);
    DIR *d = opendir(g.dir);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", g.dir, e->d_name);
        unlink(path);
    }
    if (d) closedir(d);
    rmdir(g.dir);
}

/* What the import documents: a file's structure (EFORMAT, EINVAL, ENOTFOUND), size (ETOOBIG), or a file the
 * manifest names that cannot be read (EIO). */
static bool known_file_error(eco_err e)
{
    return e == ECO_OK || e == ECO_EFORMAT || e == ECO_ETOOBIG || e == ECO_EINVAL || e == ECO_ENOTFOUND || e == ECO_EIO;
}

/* Every error this import logged: one per rejected row or failed file, each from the replaced file or, when that
 * one stands alone, from a file checked against it. */
static void check_errors(const eco_import_report *rep, const data_file *replaced)
{
    if (!rep->import_id) return; /* the manifest was refused: nothing was imported, nothing logged */
    eco_import_error *errs;
    size_t n;
    if (eco_store_list_import_errors(g.cur, rep->import_id, &errs, &n)) fail("%s", eco_last_error());
    if (n != rep->rows_rejected + rep->files_failed)
        fail("%zu errors logged for %zu rejected rows and %zu failed files", n, rep->rows_rejected, rep->files_failed);
    for (size_t i = 0; i < n; i++) {
        if (!errs[i].message[0]) fail("%s:%zu: an error without a message", errs[i].file, errs[i].line);
        if (replaced == &g.manifest || !strcmp(errs[i].file, replaced->name)) continue; /* a manifest moves blame */
        bool dependent = false;
        for (size_t k = 0; k < g.n_files; k++) dependent = dependent || (g.files[k].dependent && !strcmp(g.files[k].name, errs[i].file));
        if (replaced->dependent || !dependent)
            fail("an error in %s, which was not replaced: %s:%zu: %s", errs[i].file, errs[i].file, errs[i].line,
                 errs[i].message);
    }
    free(errs);
}

static void check_records(void)
{
    eco_record *r;
    size_t n;
    if (eco_store_query_records(g.cur, NULL, &r, &n)) fail("%s", eco_last_error());
    for (size_t i = 0; i < n; i++)
        if (eco_record_check(&r[i])) fail("stored record %s fails its check: %s", r[i].source, eco_last_error());
    free(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!g.ready) {
        set_up();
        atexit(tear_down);
    }
    if (size < 1) return 0;
    unsigned pick = data[0] & 0x7f;
    const data_file *f = pick == 0x7f ? &g.manifest : &g.files[pick % g.n_files];
    /* the first byte's top bit: into an empty store (a first import of a damaged folder) */
    bool empty = data[0] & 0x80;
    char fresh[600];
    snprintf(fresh, sizeof fresh, "%s/empty.db", g.dir);
    if (empty) {
        static const char *const suffixes[] = {"", "-wal", "-shm"};
        for (int i = 0; i < 3; i++) {
            char p[640];
            snprintf(p, sizeof p, "%s%s", fresh, suffixes[i]);
            unlink(p);
        }
        if (eco_store_open(fresh, &g.cur)) fail("%s", eco_last_error());
    }
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", g.dir, f->name);
    write_bytes(path, data + 1, size - 1);

    eco_import_report first, again, back;
    eco_err e = eco_store_import_reference_dir(g.cur, g.dir, &first);
    if (!known_file_error(e)) fail("%s: the import failed with %s: %s", f->name, eco_err_name(e), eco_last_error());
    if (e && (!eco_last_error()[0] || (first.import_id && !first.first_error[0])))
        fail("%s: refused without a message", f->name);
    if (!e && first.files_failed) fail("%s: %zu files failed but the import returned OK", f->name, first.files_failed);
    check_errors(&first, f);
    check_records();
    snapshot edited;
    take_snapshot(&edited);
    for (size_t i = 0; i < g.n_files && f != &g.manifest; i++)
        if (&g.files[i] != f && !g.files[i].dependent) expect_same(&g.baseline, &edited, g.files[i].name, "another file");

    eco_err e2 = eco_store_import_reference_dir(g.cur, g.dir, &again);
    if (e2 != e) fail("%s: a second import returned %s, the first %s", f->name, eco_err_name(e2), eco_err_name(e));
    if (again.rows_inserted || again.rows_updated || again.rows_removed || again.rows_rejected != first.rows_rejected ||
        again.rows_linked != first.rows_linked)
        fail("%s: a second import of the same files inserted %zu, updated %zu, removed %zu, rejected %zu (first %zu), "
             "linked %zu (first %zu)", f->name, again.rows_inserted, again.rows_updated, again.rows_removed,
             again.rows_rejected, first.rows_rejected, again.rows_linked, first.rows_linked);
    snapshot twice;
    take_snapshot(&twice);
    expect_same(&edited, &twice, NULL, "second import");
    snapshot_free(&twice);
    snapshot_free(&edited);

    write_bytes(path, f->original, f->original_len);
    if (eco_store_import_reference_dir(g.cur, g.dir, &back) || back.rows_rejected || back.files_failed)
        fail("%s: the real file back does not import cleanly: %s", f->name, back.first_error);
    snapshot restored;
    take_snapshot(&restored);
    expect_same(&g.baseline, &restored, NULL, "real file back");
    snapshot_free(&restored);
    if (empty) {
        eco_store_close(g.cur);
        g.cur = g.store;
    }
    return 0;
}
