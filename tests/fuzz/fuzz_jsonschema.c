/* Arbitrary bytes as JSON: validated against our energy.json schema, and compiled as a schema that then
 * validates itself and the energy example. Invariants checked on every run: the verdict-only and
 * error-collecting modes agree, valid means no errors, and every error's instance_path resolves to a value
 * of the instance. */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eco/json.h"
#include "eco/jsonschema.h"
#include "fuzz_source_root.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static eco_schema *energy;
static json_t *example;

static void load_once(void)
{
    static int done;
    if (done) return;
    done = 1;
    energy = fuzz_energy_schema("fuzz_jsonschema");
    char path[4200];
    fuzz_source_path(path, sizeof path, "data/schema/examples/energy.example.cpu-no-meter.json");
    if (eco_json_load_file(path, 0, &example)) {
        fprintf(stderr, "fuzz_jsonschema: %s\n", eco_last_error());
        abort();
    }
}

/* Resolves an RFC 6901 pointer; NULL when it does not name a value. */
static const json_t *resolve(const json_t *doc, const char *ptr)
{
    if (!*ptr) return doc;
    if (*ptr != '/') return NULL;
    char tok[4096];
    while (*ptr == '/') {
        ptr++;
        size_t n = 0;
        while (*ptr && *ptr != '/') {
            char c = *ptr++;
            if (c == '~') {
                if (*ptr == '0') c = '~';
                else if (*ptr == '1') c = '/';
                else return NULL;
                ptr++;
            }
            if (n + 1 >= sizeof tok) return NULL;
            tok[n++] = c;
        }
        tok[n] = '\0';
        if (json_is_object(doc)) doc = json_object_getn(doc, tok, n);
        else if (json_is_array(doc)) {
            char *end;
            unsigned long i = strtoul(tok, &end, 10);
            doc = (n && !*end) ? json_array_get(doc, i) : NULL;
        } else return NULL;
        if (!doc) return NULL;
    }
    return doc;
}

static void check(const eco_schema *s, const json_t *inst)
{
    eco_err quick = eco_schema_validate(s, inst, NULL);
    eco_schema_errors errs;
    eco_schema_errors_init(&errs);
    errs.max = 20;
    eco_err full = eco_schema_validate(s, inst, &errs);
    if ((quick == ECO_OK) != (full == ECO_OK)) abort();
    if (full == ECO_OK && (errs.count || errs.dropped)) abort();
    if (full == ECO_EINVAL && errs.count == 0) abort();
    if (full != ECO_OK && full != ECO_EINVAL && full != ECO_ETOOBIG && full != ECO_ENOMEM) abort();
    for (size_t i = 0; i < errs.count; i++) {
        const eco_schema_error *e = &errs.items[i];
        if (!e->keyword || !e->message || !*e->message || !e->schema_path) abort();
        /* propertyNames and additionalProperties point at the property, which exists; all others at a value. */
        if (!resolve(inst, e->instance_path)) abort();
    }
    eco_schema_errors_free(&errs);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    load_once();
    json_t *doc;
    if (eco_json_loadb((const char *)data, size, "fuzz", 1 << 20, &doc)) return 0;
    check(energy, doc);
    eco_schema *s;
    if (eco_schema_compile(doc, &s) == ECO_OK) {
        check(s, doc);
        check(s, example);
        eco_schema_free(s);
    }
    json_decref(doc);
    return 0;
}
