/* eco report FILE: the Markdown report of an energy.json (ours or a replication's). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "eco/json.h"
#include "eco/measure.h"

int eco_cmd_report(int argc, char **argv)
{
    if (argc != 2 || !strcmp(argv[1], "--help")) {
        fputs("usage: eco report ENERGY_JSON   (prints the Markdown report on stdout)\n", argc == 2 ? stdout : stderr);
        return argc == 2 ? 0 : 2;
    }
    json_t *doc;
    if (eco_json_load_file(argv[1], 0, &doc)) {
        fprintf(stderr, "eco report: %s\n", eco_last_error());
        return 2;
    }
    char *md;
    eco_err e = eco_energy_report_md(doc, &md);
    json_decref(doc);
    if (e) {
        fprintf(stderr, "eco report: %s\n", eco_last_error());
        return 2;
    }
    fputs(md, stdout);
    free(md);
    return 0;
}
