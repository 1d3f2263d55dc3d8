/* eco export --db FILE --format csv|json [filters]: records of the store on stdout. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/commands.h"
#include "eco/record.h"
#include "eco/store.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: eco export --db FILE [--format csv|json] [--arch A] [--precision P] [--gpu G] [--model M]\n"
            "                  [--session ID] [--source-file NAME] [--origin reference|run]\n"
            "Writes the records (with delta %%, protocol, flags and perplexity) to stdout; CSV by default.\n"
            "--source-file measured.csv selects exactly the anchor's curve-fitting input. --gpu matches any case and\n"
            "the NVML name (H200 finds NVIDIA H200); --model any spelling of a preset (name, HF id, short id).\n");
}

int eco_cmd_export(int argc, char **argv)
{
    const char *db = NULL, *format = "csv", *precision = NULL, *origin = NULL;
    eco_record_filter f = eco_record_filter_any();
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { usage(stdout); return 0; }
        const char **slot = !strcmp(a, "--db") ? &db : !strcmp(a, "--format") ? &format
                            : !strcmp(a, "--arch") ? &f.arch : !strcmp(a, "--precision") ? &precision
                            : !strcmp(a, "--gpu") ? &f.gpu : !strcmp(a, "--model") ? &f.model
                            : !strcmp(a, "--session") ? &f.session : !strcmp(a, "--source-file") ? &f.source_file
                            : !strcmp(a, "--origin") ? &origin : NULL;
        if (!slot) { fprintf(stderr, "eco export: unknown argument '%s'\n", a); usage(stderr); return 2; }
        if (++i >= argc) { fprintf(stderr, "eco export: %s needs a value\n", a); return 2; }
        *slot = argv[i];
    }
    if (!db) { fprintf(stderr, "eco export: --db FILE is required\n"); usage(stderr); return 2; }
    eco_export_format fmt;
    if (!strcmp(format, "csv")) fmt = ECO_EXPORT_CSV;
    else if (!strcmp(format, "json")) fmt = ECO_EXPORT_JSON;
    else { fprintf(stderr, "eco export: --format must be csv or json, got '%s'\n", format); return 2; }
    if (f.arch && !eco_arch_is_known(f.arch)) {
        fprintf(stderr, "eco export: --arch must be turing, ampere, ada, hopper or blackwell, got '%s'\n", f.arch);
        return 2;
    }
    if (precision) {
        eco_precision p;
        if (eco_precision_parse(precision, &p)) { fprintf(stderr, "eco export: --precision: %s\n", eco_last_error()); return 2; }
        f.precision = eco_precision_name(p);
    }
    if (origin) {
        if (!strcmp(origin, "reference")) f.origin = ECO_ORIGIN_REFERENCE;
        else if (!strcmp(origin, "run")) f.origin = ECO_ORIGIN_RUN;
        else if (!strcmp(origin, "replication")) {
            fprintf(stderr, "eco export: submitted replications are stored as documents, not measurement rows "
                            "(GET /v1/replications lists them; `eco import --run` makes a run's rows)\n");
            return 2;
        }
        else { fprintf(stderr, "eco export: --origin must be reference or run\n"); return 2; }
    }
    /* exporting must not create an empty database by accident */
    if (access(db, R_OK) != 0) { fprintf(stderr, "eco export: %s: no such database\n", db); return 1; }
    eco_store *s;
    if (eco_store_open(db, &s)) { fprintf(stderr, "eco export: %s\n", eco_last_error()); return 1; }
    size_t n;
    eco_err e = eco_store_export_records(s, &f, fmt, stdout, &n);
    eco_store_close(s);
    if (e) { fprintf(stderr, "eco export: %s\n", eco_last_error()); return 1; }
    if (fflush(stdout)) { fprintf(stderr, "eco export: write error\n"); return 1; }
    return 0;
}
