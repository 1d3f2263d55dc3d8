/* Fixed inputs of the fuzz targets (the energy schema, the examples), from the source tree: $ECO_SOURCE_DIR under
 * CTest and `make fuzz`, otherwise the tree this file was compiled from (CMake compiles by absolute path), else ".". */
#ifndef ECO_FUZZ_SOURCE_ROOT_H
#define ECO_FUZZ_SOURCE_ROOT_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eco/jsonschema.h"

/* path = <source root>/rel */
static inline void fuzz_source_path(char *path, size_t cap, const char *rel)
{
    char root[4096];
    const char *src = getenv("ECO_SOURCE_DIR");
    if (src) snprintf(root, sizeof root, "%s", src);
    else {
        snprintf(root, sizeof root, "%s", __FILE__);
        char *cut = strstr(root, "/tests/fuzz/");
        if (cut) *cut = '\0';
        else snprintf(root, sizeof root, ".");
    }
    snprintf(path, cap, "%s/%s", root, rel);
}

/* The published energy.json schema, compiled; aborts (naming the target) when it cannot be. */
static inline eco_schema *fuzz_energy_schema(const char *target)
{
    char path[4200];
    fuzz_source_path(path, sizeof path, "data/schema/energy.schema.json");
    eco_schema *s = NULL;
    if (eco_schema_compile_file(path, ECO_SCHEMA_STRICT, &s)) {
        fprintf(stderr, "%s: %s\n", target, eco_last_error());
        abort();
    }
    return s;
}

#endif
