/* eco import --db FILE DIR | FILE.json: loads the reference folder (as its manifest.csv describes it) or stores a
 * replication (an energy.json, validated against the published schema). */
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/commands.h"
#include "eco/jsonschema.h"
#include "eco/measure.h"
#include "eco/paths.h"
#include "eco/store.h"

#define SCHEMA_REL "data/schema/energy.schema.json"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: eco import --db FILE [--manifest FILE] [--quiet] DIR\n"
            "       eco import --db FILE [--schema FILE] [--name NAME] REPLICATION.energy.json\n"
            "       eco import --db FILE --run [--schema FILE] RUN.energy.json   (our own measured run: its rows join the fit)\n"
            "DIR: a reference folder (data/reference) described by DIR/manifest.csv (or --manifest).\n"
            "  Prints files and rows read / inserted / updated / unchanged / linked / rejected, each rejected\n"
            "  row as file:line: reason, and duplicates linked to the row they repeat. Re-importing is a no-op;\n"
            "  an edited file replaces its earlier measurement rows and links (nothing counted twice); its quality,\n"
            "  batch and phase rows are updated by line, and a file left out of the manifest keeps its rows.\n"
            "FILE.json: stores the raw document as a replication once it validates against the schema and its\n"
            "  figures agree with each other (eco validate); an invalid or example document is refused and nothing\n"
            "  is stored (schema: --schema, $ECO_SCHEMA, <exe dir>/../" SCHEMA_REL " or $ECO_SOURCE_DIR/" SCHEMA_REL ";\n"
            "  without a schema the document is stored as not validated).\n"
            "Exit status: 0 imported (even with rejected rows), 1 nothing imported, an invalid document, or a file\n"
            "that could not be read, 2 usage.\n");
}

static bool find_schema(const char *given, char *buf, size_t cap)
{
    if (given) { snprintf(buf, cap, "%s", given); return true; }
    return eco_find_data_file(ECO_ENERGY_SCHEMA_REL, "ECO_SCHEMA", buf, cap);
}

/* Reads an energy.json and validates it (eco_energy_validate: the published schema, then consistency). Returns 0, or 1 after printing why the
 * file cannot be used at all (unreadable, not a JSON object, broken schema). */
static int load_document(const char *path, const char *schema_arg, char **doc, size_t *len, json_t **j,
                         eco_validation *status, char *message, size_t cap)
{
    if (eco_store_read_file(path, ECO_STORE_MAX_FILE_BYTES, doc, len)) {
        fprintf(stderr, "eco import: %s\n", eco_last_error());
        return 1;
    }
    json_error_t jerr;
    *j = json_loadb(*doc, *len, JSON_REJECT_DUPLICATES, &jerr);
    if (!*j || !json_is_object(*j)) {
        if (*j) fprintf(stderr, "eco import: %s: an energy.json must be a JSON object\n", path);
        else fprintf(stderr, "eco import: %s:%d:%d: not JSON: %s\n", path, jerr.line, jerr.column, jerr.text);
        json_decref(*j);
        free(*doc);
        return 1;
    }
    *status = ECO_VALIDATION_UNVALIDATED;
    message[0] = '\0';
    char schema_path[PATH_MAX + 64];
    if (!find_schema(schema_arg, schema_path, sizeof schema_path)) {
        snprintf(message, cap, "schema %s not found: not validated", SCHEMA_REL);
        fprintf(stderr, "eco import: warning: %s\n", message);
        return 0;
    }
    eco_schema *sc;
    if (eco_schema_compile_file(schema_path, 0, &sc)) {
        fprintf(stderr, "eco import: schema %s: %s\n", schema_path, eco_last_error());
        json_decref(*j);
        free(*doc);
        return 1;
    }
    eco_schema_errors errs;
    eco_schema_errors_init(&errs);
    eco_err ve = eco_energy_validate(sc, *j, &errs); /* the schema, then what its figures say of each other */
    *status = ve == ECO_OK ? ECO_VALIDATION_VALID : ECO_VALIDATION_INVALID;
    for (size_t i = 0; i < errs.count; i++) {
        fprintf(stderr, "%s: %s: %s\n", path, errs.items[i].instance_path[0] ? errs.items[i].instance_path : "/",
                errs.items[i].message);
        if (i == 0)
            snprintf(message, cap, "%s: %s", errs.items[0].instance_path[0] ? errs.items[0].instance_path : "/",
                     errs.items[0].message);
    }
    if (*status == ECO_VALIDATION_INVALID && !message[0]) snprintf(message, cap, "%s", eco_last_error());
    eco_schema_errors_free(&errs);
    eco_schema_free(sc);
    return 0;
}

static int import_replication(eco_store *s, const char *path, const char *schema_arg, const char *name)
{
    char *doc, message[512];
    size_t len;
    json_t *j;
    eco_validation status;
    if (load_document(path, schema_arg, &doc, &len, &j, &status, message, sizeof message)) return 1;
    if (eco_energy_is_example(j)) {
        fprintf(stderr, "eco import: %s: an example document (\"example\": true, or the examples' GPU or host) is not a "
                        "measurement; nothing stored\n", path);
        json_decref(j);
        free(doc);
        return 1;
    }
    json_decref(j);
    if (status == ECO_VALIDATION_INVALID) { /* as POST /v1/replications: an invalid document is refused, not kept */
        fprintf(stderr, "eco import: %s: not a valid energy.json (%s); nothing stored\n", path, message);
        free(doc);
        return 1;
    }
    const char *base = strrchr(path, '/');
    int64_t id = 0;
    bool inserted = false;
    eco_err e = eco_store_add_replication(s, name ? name : base ? base + 1 : path, doc, len, status, message, &id,
                                          &inserted);
    free(doc);
    if (e) {
        fprintf(stderr, "eco import: %s\n", eco_last_error());
        return 1;
    }
    printf("replication #%lld %s: %s (%s)\n", (long long)id, inserted ? "stored" : "already stored",
           eco_validation_name(status), path);
    return status == ECO_VALIDATION_INVALID ? 1 : 0;
}

/* The same measurement stored under another run id (a re-exported copy with a new id, or with its card renamed):
 * its rows would count twice. Energies equal to the last bit on another card are a copy, not a measurement. */
static eco_err same_measurement_stored(eco_store *s, const eco_record *rows, size_t n)
{
    eco_record_filter f = eco_record_filter_any();
    f.origin = ECO_ORIGIN_RUN;
    f.model = rows[0].model;
    eco_record *have = NULL;
    size_t m = 0;
    eco_err e = eco_store_query_records(s, &f, &have, &m);
    for (size_t i = 0; !e && i < m; i++)
        for (size_t k = 0; k < n; k++)
            if (strcmp(have[i].session, rows[k].session) && have[i].precision == rows[k].precision &&
                have[i].e_fp16_mj == rows[k].e_fp16_mj && have[i].e_quant_mj == rows[k].e_quant_mj) {
                e = eco_fail_field(ECO_EINVAL, "run_id", "the same measurement (%s %s, %g and %g mJ a token) is stored as run %s "
                                   "(%s, on %s): under two run ids it would count twice",
                                   rows[k].model, eco_precision_name(rows[k].precision), rows[k].e_fp16_mj, rows[k].e_quant_mj,
                                   have[i].session, have[i].source, have[i].gpu);
                break;
            }
    free(have);
    return e;
}

/* A run's session row, from its first dataset row. */
static eco_err store_session(eco_store *s, const json_t *j, const eco_record *r, const char *source)
{
    eco_session ss;
    memset(&ss, 0, sizeof ss);
    const char *created = json_string_value(json_object_get(j, "created_utc"));
    snprintf(ss.id, sizeof ss.id, "%s", r->session);
    snprintf(ss.gpu, sizeof ss.gpu, "%s", r->gpu);
    snprintf(ss.arch, sizeof ss.arch, "%s", r->arch);
    snprintf(ss.date, sizeof ss.date, "%.31s", created ? created : "");
    snprintf(ss.software, sizeof ss.software, "%s", r->backend);
    ss.tokens = r->tokens;
    ss.basis = r->basis;
    snprintf(ss.method, sizeof ss.method, "%s", r->method);
    snprintf(ss.source, sizeof ss.source, "%s", source);
    snprintf(ss.note, sizeof ss.note, "%s", r->note);
    return eco_store_upsert_session(s, &ss);
}

/* One of our own measured runs: the document (keyed by run_id) and its rows, which then join the fit; all stored
 * in one transaction or none. */
static int import_run(eco_store *s, const char *path, const char *schema_arg)
{
    char *doc, message[512];
    size_t len;
    json_t *j;
    eco_validation status;
    if (load_document(path, schema_arg, &doc, &len, &j, &status, message, sizeof message)) return 1;
    const char *run_id = json_string_value(json_object_get(j, "run_id"));
    const char *base = strrchr(path, '/'), *name = base ? base + 1 : path;
    eco_record *rows = NULL;
    size_t n = 0, inserted_rows = 0;
    int rc = 1;
    if (status != ECO_VALIDATION_VALID) fprintf(stderr, "eco import: %s: a run must validate (%s)\n", path, message);
    else if (!run_id) fprintf(stderr, "eco import: %s: a run needs a run_id\n", path);
    else if (eco_energy_is_example(j))
        fprintf(stderr, "eco import: %s: an example document (\"example\": true, or the examples' GPU or host) is not a "
                        "measurement; nothing stored\n", path);
    else if (eco_energy_records(j, name, &rows, &n)) fprintf(stderr, "eco import: %s\n", eco_last_error());
    else if (n == 0) fprintf(stderr, "eco import: %s: no measured comparison in the run\n", path);
    else if (eco_store_begin(s)) fprintf(stderr, "eco import: %s\n", eco_last_error());
    else {
        bool inserted = false, taken = false;
        char stored_as[ECO_SOURCE_SIZE] = "";
        eco_err e = eco_store_add_run(s, run_id, doc, len, &inserted);
        if (!e) e = eco_store_run_source(s, run_id, stored_as, sizeof stored_as);
        /* another run's file of the same name (every run's default is energy.json): this one's rows carry its id */
        if (!e && !stored_as[0]) e = eco_store_run_file_taken(s, name, run_id, &taken);
        if (!e && taken) snprintf(stored_as, sizeof stored_as, "%s@%s", name, run_id);
        /* the same run from a copy elsewhere: its rows keep the name they were first stored under, not a second set */
        if (!e && stored_as[0] && strcmp(stored_as, name)) {
            free(rows);
            rows = NULL;
            e = eco_energy_records(j, stored_as, &rows, &n);
        }
        if (!e && inserted) e = same_measurement_stored(s, rows, n);
        if (!e) e = store_session(s, j, &rows[0], stored_as[0] ? stored_as : name);
        for (size_t i = 0; i < n && !e; i++) {
            bool ins = false;
            e = eco_store_insert_record(s, &rows[i], &ins);
            inserted_rows += ins;
        }
        if (!e) e = eco_store_commit(s);
        if (e) {
            eco_store_rollback(s);
            fprintf(stderr, "eco import: %s: %s; nothing stored\n", path, eco_last_error());
        } else {
            printf("run %s %s: %zu row(s), %zu new (%s)\n", run_id, inserted ? "stored" : "already stored", n, inserted_rows, path);
            rc = 0;
        }
    }
    free(rows);
    json_decref(j);
    free(doc);
    return rc;
}

static int import_dir(eco_store *s, const char *dir, const char *manifest, bool quiet)
{
    eco_import_report rep;
    eco_err e = manifest ? eco_store_import_reference_dir_manifest(s, dir, manifest, &rep)
                         : eco_store_import_reference_dir(s, dir, &rep);
    char fatal[512] = "";
    if (e) snprintf(fatal, sizeof fatal, "%s", eco_last_error());
    printf("import #%lld of %s\n", (long long)rep.import_id, dir);
    printf("files: %zu read, %zu failed\n", rep.files, rep.files_failed);
    printf("rows: %zu read, %zu inserted, %zu updated, %zu unchanged, %zu linked, %zu fp16 baselines, %zu rejected\n",
           rep.rows_read, rep.rows_inserted, rep.rows_updated, rep.rows_unchanged, rep.rows_linked, rep.rows_baseline,
           rep.rows_rejected);
    if (rep.rows_removed) printf("removed: %zu stored row(s) the re-read files no longer hold\n", rep.rows_removed);
    eco_import_error *errs = NULL;
    size_t n = 0;
    if (rep.import_id > 0 && eco_store_list_import_errors(s, rep.import_id, &errs, &n) == ECO_OK)
        for (size_t i = 0; i < n; i++)
            printf("rejected: %s:%zu: %s\n", errs[i].file, errs[i].line, errs[i].message);
    free(errs);
    if (!quiet) {
        eco_import_link *links = NULL;
        if (rep.import_id > 0 && eco_store_list_import_links(s, rep.import_id, &links, &n) == ECO_OK)
            for (size_t i = 0; i < n; i++)
                printf("linked: %s -> %s: %s\n", links[i].source, links[i].linked_source, links[i].reason);
        free(links);
    }
    if (e) {
        fprintf(stderr, "eco import: %s\n", fatal);
        return 1;
    }
    size_t accepted = rep.rows_inserted + rep.rows_updated + rep.rows_unchanged + rep.rows_linked;
    if (!accepted) {
        fprintf(stderr, "eco import: nothing could be imported from %s\n", dir);
        return 1;
    }
    return 0;
}

int eco_cmd_import(int argc, char **argv)
{
    const char *db = NULL, *manifest = NULL, *schema = NULL, *name = NULL, *path = NULL;
    bool quiet = false, run = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { usage(stdout); return 0; }
        const char **slot = !strcmp(a, "--db") ? &db : !strcmp(a, "--manifest") ? &manifest
                            : !strcmp(a, "--schema") ? &schema : !strcmp(a, "--name") ? &name : NULL;
        if (slot) {
            if (++i >= argc) { fprintf(stderr, "eco import: %s needs a value\n", a); return 2; }
            *slot = argv[i];
        } else if (!strcmp(a, "--quiet") || !strcmp(a, "-q")) quiet = true;
        else if (!strcmp(a, "--run")) run = true;
        else if (a[0] == '-' && a[1]) { fprintf(stderr, "eco import: unknown option '%s'\n", a); usage(stderr); return 2; }
        else if (path) { fprintf(stderr, "eco import: one folder or file at a time ('%s' and '%s')\n", path, a); return 2; }
        else path = a;
    }
    if (!db) { fprintf(stderr, "eco import: --db FILE is required\n"); usage(stderr); return 2; }
    if (!path) { fprintf(stderr, "eco import: give a reference folder or an energy.json\n"); usage(stderr); return 2; }
    struct stat st;
    if (stat(path, &st) != 0) { fprintf(stderr, "eco import: %s: no such file or folder\n", path); return 1; }
    if (run && S_ISDIR(st.st_mode)) {
        fprintf(stderr, "eco import: --run takes one energy.json, not a folder (%s): import runs one file at a time\n", path);
        return 2;
    }
    eco_store *s;
    if (eco_store_open(db, &s)) {
        fprintf(stderr, "eco import: %s\n", eco_last_error());
        return 1;
    }
    int rc = S_ISDIR(st.st_mode) ? import_dir(s, path, manifest, quiet)
             : run                ? import_run(s, path, schema)
                                  : import_replication(s, path, schema, name);
    eco_store_close(s);
    return rc;
}
