/* The source tree a fuzz target reads its fixed inputs from (schemas, examples): $ECO_SOURCE_DIR under CTest and
 * `make fuzz`, otherwise the tree this file was compiled from (CMake compiles by absolute path), else ".". */
#ifndef ECO_FUZZ_SOURCE_ROOT_H
#define ECO_FUZZ_SOURCE_ROOT_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static inline void fuzz_source_root(char *root, size_t cap)
{
    const char *src = getenv("ECO_SOURCE_DIR");
    if (src) {
        snprintf(root, cap, "%s", src);
        return;
    }
    snprintf(root, cap, "%s", __FILE__);
    char *cut = strstr(root, "/tests/fuzz/");
    if (cut) *cut = '\0';
    else snprintf(root, cap, ".");
}

#endif
