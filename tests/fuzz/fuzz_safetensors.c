/* libFuzzer target: the safetensors header parser and layout checks over arbitrary bytes; every tensor the
 * parser accepts must lie inside the buffer and convert without reading past it. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "eco/model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* a private copy, so ASan catches reads past `size` */
    uint8_t *buf = malloc(size ? size : 1);
    if (!buf) return 0;
    if (size) memcpy(buf, data, size);
    eco_safetensors *st;
    if (eco_safetensors_parse(buf, size, "fuzz", &st) == ECO_OK) {
        for (size_t i = 0; i < eco_safetensors_count(st); i++) {
            const eco_st_tensor *t = eco_safetensors_at(st, i);
            if (t->data < buf || t->data + t->size_bytes > buf + size) abort();
            if (eco_safetensors_find(st, t->name) == NULL) abort();
            uint64_t n = t->nelem < 64 ? t->nelem : 64;
            float out[64];
            (void)eco_st_tensor_read_f32(t, 0, n, out);
            (void)eco_st_tensor_read_f32(t, t->nelem, 1, out); /* out of range: must fail, not read */
        }
        (void)eco_safetensors_metadata(st, "format");
        eco_safetensors_close(st);
    }
    free(buf);
    return 0;
}
