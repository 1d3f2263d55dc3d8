/* libFuzzer target: the CSV reader. Checks that it terminates, never reads out of bounds and keeps its
 * invariants (at least one field per row, line numbers never go back, fields are NUL-terminated strings
 * inside the reader's buffer). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "eco/store.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    eco_csv *c;
    if (eco_csv_open((const char *)data, size, "fuzz.csv", &c) != ECO_OK) return 0;
    eco_csv_row row;
    bool eof = false;
    size_t last_line = 0, total = 0;
    /* every call consumes input or ends it, so size + 2 calls always suffice */
    for (size_t guard = 0; guard < size + 2; guard++) {
        eco_err e = eco_csv_next(c, &row, &eof);
        if (eof) break;
        if (row.line < last_line) abort();
        last_line = row.line;
        if (e) continue;
        if (row.n_fields < 1 || row.n_fields > ECO_CSV_MAX_FIELDS) abort();
        for (size_t i = 0; i < row.n_fields; i++) total += strlen(row.fields[i]);
    }
    if (!eof) abort(); /* did not terminate within the bound */
    if (total > size) abort(); /* unescaping never grows the text */
    eco_csv_close(c);
    return 0;
}
