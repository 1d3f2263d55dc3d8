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
#include "eco/store.h"

#define SCHEMA_REL "data/schema/energy.schema.json"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: eco import --db FILE [--manifest FILE] [--quiet] DIR\n"
            "       eco import --db FILE [--schema FILE] [--name NAME] REPLICATION.energy.json\n"
            "DIR: a reference folder (data/reference) described by DIR/manifest.csv (or --manifest).\n"
            "  Prints files and rows read / inserted / updated / unchanged / linked / rejected, each rejected\n"
            "  row as file:line: reason, and duplicates linked to the row they repeat. Re-importing is a no-op.\n"
            "FILE.json: stores the raw document as a replication after it parses as a JSON object, with its\n"
            "  schema validation status (schema: --schema, $ECO_SCHEMA, <exe dir>/../" SCHEMA_REL
            " or $ECO_SOURCE_DIR/" SCHEMA_REL ").\n"
            "Exit status: 0 imported (even with rejected rows), 1 nothing imported, an invalid document, or a file\n"
            "that could not be read, 2 usage.\n");
}

static bool readable(const char *p) { return access(p, R_OK) == 0; }

static bool find_schema(const char *given, char *buf, size_t cap)
{
    if (given) { snprintf(buf, cap, "%s", given); return true; }
    const char *env = getenv("ECO_SCHEMA");
    if (env && *env) { snprintf(buf, cap, "%s", env); return true; }
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) *slash = '\0';
        static const char *const rel[] = {"../" SCHEMA_REL, "../share/ecocompute/schema/energy.schema.json",
                                          "../../" SCHEMA_REL};
        for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++) {
            snprintf(buf, cap, "%s/%s", exe, rel[i]);
            if (readable(buf)) return true;
        }
    }
    const char *src = getenv("ECO_SOURCE_DIR");
    if (src && *src) {
        snprintf(buf, cap, "%s/" SCHEMA_REL, src);
        if (readable(buf)) return true;
    }
    return false;
}

static int import_replication(eco_store *s, const char *path, const char *schema_arg, const char *name)
{
    char *doc;
    size_t len;
    if (eco_store_read_file(path, ECO_STORE_MAX_FILE_BYTES, &doc, &len)) {
        fprintf(stderr, "eco import: %s\n", eco_last_error());
        return 1;
    }
    json_error_t jerr;
    json_t *j = json_loadb(doc, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!j || !json_is_object(j)) {
        if (j) fprintf(stderr, "eco import: %s: an energy.json must be a JSON object\n", path);
        else fprintf(stderr, "eco import: %s:%d:%d: not JSON: %s\n", path, jerr.line, jerr.column, jerr.text);
        json_decref(j);
        free(doc);
        return 1;
    }
    eco_validation status = ECO_VALIDATION_UNVALIDATED;
    char message[512] = "";
    char schema_path[PATH_MAX + 64];
    if (!find_schema(schema_arg, schema_path, sizeof schema_path)) {
        snprintf(message, sizeof message, "schema %s not found: not validated", SCHEMA_REL);
        fprintf(stderr, "eco import: warning: %s\n", message);
    } else {
        eco_schema *sc;
        if (eco_schema_compile_file(schema_path, 0, &sc)) {
            fprintf(stderr, "eco import: schema %s: %s\n", schema_path, eco_last_error());
            json_decref(j);
            free(doc);
            return 1;
        }
        eco_schema_errors errs;
        eco_schema_errors_init(&errs);
        eco_err ve = eco_schema_validate(sc, j, &errs);
        status = ve == ECO_OK ? ECO_VALIDATION_VALID : ECO_VALIDATION_INVALID;
        for (size_t i = 0; i < errs.count; i++) {
            fprintf(stderr, "%s: %s: %s\n", path, errs.items[i].instance_path[0] ? errs.items[i].instance_path : "/",
                    errs.items[i].message);
            if (i == 0)
                snprintf(message, sizeof message, "%s: %s",
                         errs.items[0].instance_path[0] ? errs.items[0].instance_path : "/", errs.items[0].message);
        }
        if (status == ECO_VALIDATION_INVALID && !message[0]) snprintf(message, sizeof message, "%s", eco_last_error());
        eco_schema_errors_free(&errs);
        eco_schema_free(sc);
    }
    json_decref(j);
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
    eco_import_error *errs = NULL;
    size_t n = 0;
    if (rep.import_id > 0 && eco_store_list_import_errors(s, rep.import_id, &errs, &n) == ECO_OK)
        for (size_t i = 0; i < n; i++)
            printf("rejected: %s:%zu: %s\n", errs[i].file, errs[i].line, errs[i].message);
    free(errs);
    if (!quiet) {
        eco_import_link *links = NULL;
        if (eco_store_list_links(s, &links, &n) == ECO_OK)
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
    bool quiet = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { usage(stdout); return 0; }
        const char **slot = !strcmp(a, "--db") ? &db : !strcmp(a, "--manifest") ? &manifest
                            : !strcmp(a, "--schema") ? &schema : !strcmp(a, "--name") ? &name : NULL;
        if (slot) {
            if (++i >= argc) { fprintf(stderr, "eco import: %s needs a value\n", a); return 2; }
            *slot = argv[i];
        } else if (!strcmp(a, "--quiet") || !strcmp(a, "-q")) quiet = true;
        else if (a[0] == '-' && a[1]) { fprintf(stderr, "eco import: unknown option '%s'\n", a); usage(stderr); return 2; }
        else if (path) { fprintf(stderr, "eco import: one folder or file at a time ('%s' and '%s')\n", path, a); return 2; }
        else path = a;
    }
    if (!db) { fprintf(stderr, "eco import: --db FILE is required\n"); usage(stderr); return 2; }
    if (!path) { fprintf(stderr, "eco import: give a reference folder or an energy.json\n"); usage(stderr); return 2; }
    struct stat st;
    if (stat(path, &st) != 0) { fprintf(stderr, "eco import: %s: no such file or folder\n", path); return 1; }
    eco_store *s;
    if (eco_store_open(db, &s)) {
        fprintf(stderr, "eco import: %s\n", eco_last_error());
        return 1;
    }
    int rc = S_ISDIR(st.st_mode) ? import_dir(s, path, manifest, quiet) : import_replication(s, path, schema, name);
    eco_store_close(s);
    return rc;
}
