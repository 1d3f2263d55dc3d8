/* eco validate FILE...: checks energy.json documents against our published schema
 * (data/schema/energy.schema.json). Exit 0 all valid, 1 any invalid, 2 usage, I/O or malformed JSON. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/commands.h"
#include "eco/json.h"
#include "eco/jsonschema.h"
#include "eco/measure.h"
#include "eco/paths.h"

#define SCHEMA_REL "data/schema/energy.schema.json"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: eco validate [--schema PATH] [--schema-only] [--json] [--quiet] FILE...\n"
            "Validates energy.json files ('-' = stdin) against the energy.json schema (JSON Schema 2020-12), then\n"
            "checks what their figures say of each other (keyword \"consistency\": delta_pct from the results, one\n"
            "result per precision, intervals, pairs within blocks, verdicts, plausible mJ a token).\n"
            "  --schema PATH  schema to use; default: $ECO_SCHEMA, else <exe dir>/../" SCHEMA_REL ",\n"
            "                 <exe dir>/../share/ecocompute/schema/energy.schema.json, $ECO_SOURCE_DIR/" SCHEMA_REL "\n"
            "  --json         one JSON document on stdout: [{file, valid, errors: [{instance_path, schema_path,\n"
            "                 keyword, message}]}]\n"
            "  --schema-only  skip the consistency checks\n"
            "  --quiet        print nothing for valid files\n"
            "Prints 'FILE: valid' or one line per error 'FILE: /json/pointer: message'.\n"
            "Exit status: 0 all valid, 1 some file invalid, 2 usage, I/O or malformed JSON.\n");
}

int eco_cmd_validate(int argc, char **argv)
{
    const char *schema_path = NULL;
    int as_json = 0, quiet = 0, consistency = 1, first = 1;
    for (; first < argc; first++) {
        const char *a = argv[first];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { usage(stdout); return 0; }
        if (!strcmp(a, "--json")) as_json = 1;
        else if (!strcmp(a, "--quiet") || !strcmp(a, "-q")) quiet = 1;
        else if (!strcmp(a, "--schema-only")) consistency = 0;
        else if (!strcmp(a, "--schema")) {
            if (++first >= argc) { fprintf(stderr, "eco validate: --schema needs a path\n"); return 2; }
            schema_path = argv[first];
        } else if (!strncmp(a, "--schema=", 9)) schema_path = a + 9;
        else if (!strcmp(a, "--")) { first++; break; }
        else if (a[0] == '-' && a[1]) { fprintf(stderr, "eco validate: unknown option '%s'\n", a); usage(stderr); return 2; }
        else break;
    }
    if (first >= argc) { fprintf(stderr, "eco validate: no file given\n"); usage(stderr); return 2; }

    char found[PATH_MAX + 64];
    if (!schema_path) {
        if (!eco_find_data_file(ECO_ENERGY_SCHEMA_REL, "ECO_SCHEMA", found, sizeof found)) {
            fprintf(stderr, "eco validate: cannot find " SCHEMA_REL "; pass --schema PATH or set ECO_SCHEMA\n");
            return 2;
        }
        schema_path = found;
    }
    eco_schema *schema;
    if (eco_schema_compile_file(schema_path, 0, &schema)) {
        fprintf(stderr, "eco validate: schema %s\n", eco_last_error());
        return 2;
    }

    int status = 0;
    json_t *report = as_json ? json_array() : NULL;
    eco_schema_errors errs;
    eco_schema_errors_init(&errs);
    for (int i = first; i < argc; i++) {
        const char *file = argv[i];
        json_t *doc;
        eco_err rc = eco_json_load_file(file, ECO_JSON_MAX_BYTES, &doc);
        if (rc) {
            fprintf(stderr, "%s\n", eco_last_error());
            if (report) /* the documented shape, one error for the whole document, plus "error" as before */
                json_array_append_new(report, json_pack("{s:s, s:b, s:[{s:s, s:s, s:s, s:s}], s:i, s:s}", "file", file, "valid", 0,
                                                        "errors", "instance_path", "", "schema_path", "", "keyword",
                                                        rc == ECO_EFORMAT ? "malformed-json" : "unreadable", "message",
                                                        eco_last_error(), "errors_dropped", 0, "error", eco_last_error()));
            status = 2;
            continue;
        }
        eco_schema_errors_clear(&errs);
        rc = consistency ? eco_energy_validate(schema, doc, &errs) : eco_schema_validate(schema, doc, &errs);
        json_decref(doc);
        if (rc != ECO_OK && rc != ECO_EINVAL && !errs.count) {
            fprintf(stderr, "%s: %s\n", file, eco_last_error());
            status = 2;
            continue;
        }
        if (rc != ECO_OK && status == 0) status = 1;
        if (report) {
            json_t *list = json_array();
            for (size_t e = 0; e < errs.count; e++)
                json_array_append_new(list, json_pack("{s:s, s:s, s:s, s:s}", "instance_path",
                                                      errs.items[e].instance_path, "schema_path",
                                                      errs.items[e].schema_path, "keyword", errs.items[e].keyword,
                                                      "message", errs.items[e].message));
            json_array_append_new(report, json_pack("{s:s, s:b, s:o, s:I}", "file", file, "valid", rc == ECO_OK,
                                                    "errors", list, "errors_dropped", (json_int_t)errs.dropped));
            continue;
        }
        if (rc == ECO_OK) {
            if (!quiet) printf("%s: valid\n", file);
            continue;
        }
        for (size_t e = 0; e < errs.count; e++)
            printf("%s: %s: %s\n", file, *errs.items[e].instance_path ? errs.items[e].instance_path : "(root)",
                   errs.items[e].message);
        if (errs.dropped) printf("%s: ... and %zu more errors\n", file, errs.dropped);
    }
    eco_schema_errors_free(&errs);
    eco_schema_free(schema);
    if (report) {
        char *text = json_dumps(report, JSON_INDENT(2));
        if (text) puts(text);
        free(text);
        json_decref(report);
    }
    fflush(stdout);
    return status;
}
