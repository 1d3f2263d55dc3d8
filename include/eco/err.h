/* Error codes and messages shared by every module.
 * Functions return eco_err (0 = ok); on failure the message (and, for bad input, the offending field)
 * is kept per thread until the next failure, so callers can report exactly what was wrong. */
#ifndef ECO_ERR_H
#define ECO_ERR_H

#include <stddef.h>

typedef enum {
    ECO_OK = 0,
    ECO_EINVAL,       /* bad input: wrong type, out of range, missing field */
    ECO_ENOMEM,
    ECO_EIO,          /* file or socket error */
    ECO_EFORMAT,      /* malformed file or document (JSON, CSV, safetensors, ...) */
    ECO_ENOTFOUND,    /* unknown name: model, GPU, precision, route, row */
    ECO_EUNSUPPORTED, /* valid request this build or this data cannot serve */
    ECO_ETOOBIG,      /* over a size limit */
    ECO_EDEVICE,      /* GPU / NVML / driver failure */
    ECO_ESTATE,       /* call out of order, internal invariant */
    ECO_EBUSY         /* a resource busy or full for now (a store locked by another writer, a full disk): retry */
} eco_err;

/* Record a failure and return `code`, e.g. `return eco_fail(ECO_EINVAL, "params_b must be > 0, got %g", v);` */
eco_err eco_fail(eco_err code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Same, naming the input field that was wrong (HTTP 400 bodies, MCP errors, CLI flags). */
eco_err eco_fail_field(eco_err code, const char *field, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Prefix the current message with context ("reading data/measured.csv: ") and return its code. */
eco_err eco_fail_context(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

const char *eco_last_error(void);       /* "" when none */
const char *eco_last_error_field(void); /* "" when the failure named no field */
eco_err eco_last_error_code(void);
void eco_clear_error(void);
const char *eco_err_name(eco_err code); /* "EINVAL", ... */
/* Drops a UTF-8 sequence cut short at the end of s (a formatted message that hit its buffer's end), so the text
 * stays valid UTF-8: a JSON encoder refuses it otherwise, and the message would vanish. */
void eco_utf8_cut_partial(char *s);
/* Characters (code points) in `bytes` bytes of valid UTF-8, as JSON Schema's maxLength counts them. */
size_t eco_utf8_chars(const char *s, size_t bytes);

#endif
