/* eco report FILE: the Markdown report of an energy.json (ours or a replication's). The document is validated
 * first (schema, then what its figures say of each other): an invalid one is still rendered, under a banner that
 * lists its problems, and the command exits 1, so a report never passes off broken figures as a measurement. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "eco/json.h"
#include "eco/jsonschema.h"
#include "eco/measure.h"
#include "eco/paths.h"

#define SHOWN_PROBLEMS 5

/* Schema and consistency findings into errs; false (after saying why) when the schema cannot be used at all. */
static bool check(const json_t *doc, eco_schema_errors *errs)
{
    char path[PATH_MAX + 64];
    eco_schema *sc = NULL;
    if (!eco_find_data_file(ECO_ENERGY_SCHEMA_REL, "ECO_SCHEMA", path, sizeof path)) {
        fprintf(stderr, "eco report: warning: the energy.json schema was not found (set ECO_SCHEMA): figures checked "
                        "against each other only\n");
    } else if (eco_schema_compile_file(path, 0, &sc)) {
        fprintf(stderr, "eco report: schema %s: %s\n", path, eco_last_error());
        return false;
    }
    eco_energy_validate(sc, doc, errs);
    eco_schema_free(sc);
    eco_clear_error();
    return true;
}

int eco_cmd_report(int argc, char **argv)
{
    if (argc != 2 || !strcmp(argv[1], "--help")) {
        fputs("usage: eco report ENERGY_JSON   ('-' = stdin; prints the Markdown report on stdout)\n"
              "An invalid document is reported under a banner listing its problems, with exit status 1.\n",
              argc == 2 ? stdout : stderr);
        return argc == 2 ? 0 : 2;
    }
    json_t *doc;
    if (eco_json_load_file(argv[1], 0, &doc)) {
        fprintf(stderr, "eco report: %s\n", eco_last_error());
        return 2;
    }
    eco_schema_errors errs;
    eco_schema_errors_init(&errs);
    if (!check(doc, &errs)) {
        json_decref(doc);
        eco_schema_errors_free(&errs);
        return 2;
    }
    char *md = NULL;
    eco_err e = eco_energy_report_md(doc, &md);
    json_decref(doc);
    if (e) {
        fprintf(stderr, "eco report: %s\n", eco_last_error());
        eco_schema_errors_free(&errs);
        return 2;
    }
    size_t problems = errs.count + errs.dropped;
    if (problems) {
        printf("> **Not a valid energy.json: %zu problem%s.** The figures below are shown as written and are not a "
               "measurement to rely on.\n",
               problems, problems == 1 ? "" : "s");
        for (size_t i = 0; i < errs.count; i++) {
            if (i < SHOWN_PROBLEMS) { /* the document's keys and values reach these: as Markdown text */
                char *path = eco_markdown_escape(errs.items[i].instance_path[0] ? errs.items[i].instance_path : "/", true);
                char *msg = eco_markdown_escape(errs.items[i].message, false);
                printf("> - `%s`: %s\n", path ? path : "?", msg ? msg : "?");
                free(path);
                free(msg);
            }
            fprintf(stderr, "%s: %s: %s\n", argv[1], errs.items[i].instance_path[0] ? errs.items[i].instance_path : "/",
                    errs.items[i].message);
        }
        if (problems > SHOWN_PROBLEMS) printf("> - ... and %zu more (`eco validate %s`)\n", problems - SHOWN_PROBLEMS, argv[1]);
        printf("\n");
    }
    fputs(md, stdout);
    free(md);
    eco_schema_errors_free(&errs);
    return problems ? 1 : 0;
}
