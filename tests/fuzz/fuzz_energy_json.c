/* libFuzzer target: a document as an energy.json through everything that accepts one. Every document: the
 * validator (schema, then consistency), the Markdown report (eco report renders any document) and the example
 * test must return without a crash. A document the validator accepts must also give dataset rows (or refuse a
 * run without a GPU meter), each of which passes the record check, and its rows' flags must fit. Seeds: the
 * schema's examples (tests/fuzz/corpus/fuzz_energy_json), whose deep structure random bytes would not find. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "eco/json.h"
#include "eco/jsonschema.h"
#include "eco/measure.h"
#include "eco/record.h"
#include "fuzz_source_root.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static eco_schema *energy;

static void load_once(void)
{
    if (!energy) energy = fuzz_energy_schema("fuzz_energy_json");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    load_once();
    json_t *doc;
    if (eco_json_loadb((const char *)data, size, "fuzz", 1 << 20, &doc)) return 0;
    eco_schema_errors errs;
    eco_schema_errors_init(&errs);
    errs.max = 20;
    eco_err v = eco_energy_validate(energy, doc, &errs);
    if (v == ECO_OK && (errs.count || errs.dropped)) abort();
    if (v == ECO_EINVAL && errs.count == 0) abort();
    eco_schema_errors_free(&errs);
    char *md = NULL;
    if (eco_energy_report_md(doc, &md) == ECO_OK && (!md || !*md)) abort();
    free(md);
    (void)eco_energy_is_example(doc);
    if (v == ECO_OK) {
        eco_record *rows = NULL;
        size_t n = 0;
        eco_err e = eco_energy_records(doc, "fuzz.energy.json", &rows, &n);
        if (e == ECO_OK) {
            for (size_t i = 0; i < n; i++)
                if (eco_record_check(&rows[i]) != ECO_OK) abort();
        } else if (e != ECO_EUNSUPPORTED) abort();
        free(rows);
        char flags[160];
        eco_energy_record_flags(doc, "nf4", flags, sizeof flags);
        if (strlen(flags) >= sizeof flags) abort();
    }
    json_decref(doc);
    return 0;
}
