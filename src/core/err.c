#include "eco/err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define ECO_ERR_MSG_MAX 1024

static _Thread_local char last_msg[ECO_ERR_MSG_MAX];
static _Thread_local char last_field[128];
static _Thread_local eco_err last_code;

static eco_err record(eco_err code, const char *field, const char *fmt, va_list ap)
{
    /* Format into a local buffer first: callers may pass eco_last_error() / eco_last_error_field() as arguments. */
    char msg[ECO_ERR_MSG_MAX], fld[sizeof last_field];
    vsnprintf(msg, sizeof msg, fmt, ap);
    eco_utf8_cut_partial(msg);
    snprintf(fld, sizeof fld, "%s", field ? field : "");
    memcpy(last_msg, msg, sizeof msg);
    memcpy(last_field, fld, sizeof fld);
    last_code = code;
    return code;
}

eco_err eco_fail(eco_err code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    record(code, NULL, fmt, ap);
    va_end(ap);
    return code;
}

eco_err eco_fail_field(eco_err code, const char *field, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    record(code, field, fmt, ap);
    va_end(ap);
    return code;
}

eco_err eco_fail_context(const char *fmt, ...)
{
    char prefix[512];
    char old[ECO_ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    memcpy(old, last_msg, sizeof old);
    size_t n = strlen(prefix);
    if (n >= sizeof last_msg) n = sizeof last_msg - 1;
    memcpy(last_msg, prefix, n);
    size_t rest = strnlen(old, sizeof old - 1);
    if (rest > sizeof last_msg - 1 - n) rest = sizeof last_msg - 1 - n; /* keep the newest context, cut the tail */
    memcpy(last_msg + n, old, rest);
    last_msg[n + rest] = '\0';
    return last_code ? last_code : ECO_ESTATE;
}

const char *eco_last_error(void) { return last_msg; }
const char *eco_last_error_field(void) { return last_field; }
eco_err eco_last_error_code(void) { return last_code; }

void eco_clear_error(void)
{
    last_msg[0] = '\0';
    last_field[0] = '\0';
    last_code = ECO_OK;
}

const char *eco_err_name(eco_err code)
{
    static const char *const names[] = {"OK", "EINVAL", "ENOMEM", "EIO", "EFORMAT", "ENOTFOUND",
                                        "EUNSUPPORTED", "ETOOBIG", "EDEVICE", "ESTATE", "EBUSY"};
    return (unsigned)code < sizeof names / sizeof names[0] ? names[code] : "EUNKNOWN";
}

void eco_utf8_cut_partial(char *s)
{
    size_t n = strlen(s), lead = n;
    /* back over at most three continuation bytes to the sequence's lead byte */
    while (lead > 0 && n - lead < 4 && ((unsigned char)s[lead - 1] & 0xC0) == 0x80) lead--;
    if (lead == 0) return;
    unsigned char c = (unsigned char)s[lead - 1];
    size_t want = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
    if (n - (lead - 1) < want) s[lead - 1] = '\0';
}

size_t eco_utf8_chars(const char *s, size_t bytes)
{
    size_t n = 0;
    for (size_t i = 0; i < bytes; i++) n += ((unsigned char)s[i] & 0xC0) != 0x80; /* bytes that start one */
    return n;
}
