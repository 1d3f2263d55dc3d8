/* Private to src/fit: what fit.c and estimate.c share beyond the public header. */
#ifndef ECO_FIT_INTERNAL_H
#define ECO_FIT_INTERNAL_H

#include <stdbool.h>

/* Whether a list of names joined by sep (" + " in an fp16 point's gpus, ", " in a note) holds this exact name:
 * "RTX 4090" is not in "RTX 4090D". */
bool fit_names_hold(const char *list, const char *sep, const char *name);

#endif
