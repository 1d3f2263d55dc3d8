/* CSV reader: RFC 4180 plus BOM, CRLF / lone CR and blank-line skipping. Fields are unescaped into a private
 * buffer, so a row's strings stay valid until the next call. */
#include "eco/store.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct eco_csv {
    const char *data;
    size_t len, pos;
    size_t line;  /* current physical line (1-based) */
    char name[160];
    char *buf;    /* unescaped fields of the current row, NUL-separated */
    size_t cap;
};

eco_err eco_csv_open(const char *data, size_t len, const char *name, eco_csv **out)
{
    *out = NULL;
    if (!data && len) return eco_fail(ECO_EINVAL, "csv: NULL data");
    eco_csv *c = calloc(1, sizeof *c);
    if (!c) return eco_fail(ECO_ENOMEM, "csv: out of memory");
    c->data = data;
    c->len = len;
    c->line = 1;
    snprintf(c->name, sizeof c->name, "%s", name ? name : "csv");
    if (len >= 3 && (unsigned char)data[0] == 0xEF && (unsigned char)data[1] == 0xBB && (unsigned char)data[2] == 0xBF)
        c->pos = 3;
    /* Unescaped text is never longer than the input plus one NUL per field. */
    c->cap = len + ECO_CSV_MAX_FIELDS + 1;
    c->buf = malloc(c->cap);
    if (!c->buf) { free(c); return eco_fail(ECO_ENOMEM, "csv: out of memory"); }
    *out = c;
    return ECO_OK;
}

void eco_csv_close(eco_csv *c)
{
    if (!c) return;
    free(c->buf);
    free(c);
}

/* Consumes one line end at pos (LF, CRLF or CR); returns false when pos is not at one. */
static bool eat_eol(eco_csv *c)
{
    if (c->pos >= c->len) return false;
    if (c->data[c->pos] == '\n') { c->pos++; c->line++; return true; }
    if (c->data[c->pos] == '\r') {
        c->pos++;
        if (c->pos < c->len && c->data[c->pos] == '\n') c->pos++;
        c->line++;
        return true;
    }
    return false;
}

/* After an error: drop the rest of the physical line so the next call starts cleanly. */
static void skip_line(eco_csv *c)
{
    while (c->pos < c->len && c->data[c->pos] != '\n' && c->data[c->pos] != '\r') c->pos++;
    eat_eol(c);
}

eco_err eco_csv_next(eco_csv *c, eco_csv_row *row, bool *eof)
{
    *eof = false;
    row->n_fields = 0;
    for (;;) {
        if (c->pos >= c->len) { *eof = true; return ECO_OK; }
        if (!eat_eol(c)) break; /* blank lines are skipped */
    }
    row->line = c->line;
    size_t w = 0;
    for (;;) {
        if (row->n_fields >= ECO_CSV_MAX_FIELDS) {
            size_t line = row->line;
            skip_line(c);
            row->n_fields = 0;
            return eco_fail(ECO_ETOOBIG, "%s:%zu: more than %d fields", c->name, line, ECO_CSV_MAX_FIELDS);
        }
        row->fields[row->n_fields++] = c->buf + w;
        if (c->pos < c->len && c->data[c->pos] == '"') {
            size_t open_line = c->line;
            c->pos++;
            for (;;) {
                if (c->pos >= c->len) {
                    row->n_fields = 0;
                    return eco_fail(ECO_EFORMAT, "%s:%zu: unterminated quoted field", c->name, open_line);
                }
                char ch = c->data[c->pos];
                if (ch == '\0') {
                    size_t line = c->line;
                    skip_line(c);
                    row->n_fields = 0;
                    return eco_fail(ECO_EFORMAT, "%s:%zu: NUL byte in a field", c->name, line);
                }
                if (ch == '"') {
                    if (c->pos + 1 < c->len && c->data[c->pos + 1] == '"') { c->buf[w++] = '"'; c->pos += 2; continue; }
                    c->pos++;
                    break;
                }
                if (ch == '\n' || ch == '\r') {
                    /* keep the newline as written, count the line */
                    c->buf[w++] = ch;
                    if (ch == '\r' && c->pos + 1 < c->len && c->data[c->pos + 1] == '\n') c->buf[w++] = c->data[++c->pos];
                    c->pos++;
                    c->line++;
                    continue;
                }
                c->buf[w++] = ch;
                c->pos++;
            }
            if (c->pos < c->len && c->data[c->pos] != ',' && c->data[c->pos] != '\n' && c->data[c->pos] != '\r') {
                size_t line = c->line;
                skip_line(c);
                row->n_fields = 0;
                return eco_fail(ECO_EFORMAT, "%s:%zu: text after a closing quote", c->name, line);
            }
        } else {
            while (c->pos < c->len) {
                char ch = c->data[c->pos];
                if (ch == ',' || ch == '\n' || ch == '\r') break;
                if (ch == '"' || ch == '\0') {
                    size_t line = c->line;
                    skip_line(c);
                    row->n_fields = 0;
                    return eco_fail(ECO_EFORMAT, "%s:%zu: %s inside an unquoted field", c->name, line,
                                    ch == '"' ? "quote" : "NUL byte");
                }
                c->buf[w++] = ch;
                c->pos++;
            }
        }
        c->buf[w++] = '\0';
        if (c->pos < c->len && c->data[c->pos] == ',') { c->pos++; continue; }
        eat_eol(c); /* end of row (or of data) */
        return ECO_OK;
    }
}

eco_err eco_store_read_file(const char *path, size_t max_bytes, char **out, size_t *len)
{
    *out = NULL;
    *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return eco_fail(ECO_EIO, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        fclose(f);
        return eco_fail(ECO_EIO, "%s: not a regular file", path);
    }
    if ((unsigned long long)st.st_size > max_bytes) {
        fclose(f);
        return eco_fail(ECO_ETOOBIG, "%s: %lld bytes is over the limit of %zu bytes", path, (long long)st.st_size,
                        max_bytes);
    }
    size_t n = (size_t)st.st_size;
    char *buf = malloc(n + 1);
    if (!buf) { fclose(f); return eco_fail(ECO_ENOMEM, "%s: out of memory", path); }
    size_t got = fread(buf, 1, n, f);
    bool err = ferror(f) != 0;
    /* a file that grew after fstat: refuse rather than read a prefix silently */
    bool grew = got == n && fgetc(f) != EOF;
    fclose(f);
    if (err || got != n || grew) {
        free(buf);
        return eco_fail(ECO_EIO, "%s: read error (file changed while reading?)", path);
    }
    buf[n] = '\0';
    *out = buf;
    *len = n;
    return ECO_OK;
}
