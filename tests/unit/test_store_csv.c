/* Store: the CSV reader (quotes, embedded commas/newlines, CRLF, BOM, truncated input), file limits, SHA-256. */
#include "eco_test.h"

#include <string.h>
#include <unistd.h>

#include "eco/store.h"

/* Parses all of `text`, returning rows as "a|b|c@LINE" joined by '\n' and errors as "!CODE@LINE". */
static void parse_all(const char *text, size_t len, char *out, size_t cap)
{
    eco_csv *c;
    assert_int_equal(eco_csv_open(text, len, "t.csv", &c), ECO_OK);
    out[0] = '\0';
    eco_csv_row row;
    bool eof;
    for (int guard = 0; guard < 100; guard++) {
        eco_err e = eco_csv_next(c, &row, &eof);
        size_t n = strlen(out);
        if (e) { snprintf(out + n, cap - n, "!%s@%zu\n", eco_err_name(e), row.line); continue; }
        if (eof) break;
        for (size_t i = 0; i < row.n_fields; i++) {
            n = strlen(out);
            snprintf(out + n, cap - n, "%s%s", i ? "|" : "", row.fields[i]);
        }
        n = strlen(out);
        snprintf(out + n, cap - n, "@%zu\n", row.line);
    }
    eco_csv_close(c);
}

static void test_plain_quotes_and_commas(void **state)
{
    (void)state;
    char out[1024];
    const char *t = "a,b,c\n1,\"x, y\",\"say \"\"hi\"\"\"\n,,\n";
    parse_all(t, strlen(t), out, sizeof out);
    assert_string_equal(out, "a|b|c@1\n1|x, y|say \"hi\"@2\n||@3\n");
}

static void test_embedded_newline_advances_lines(void **state)
{
    (void)state;
    char out[1024];
    const char *t = "h1,h2\n\"two\nlines\",z\nlast,row";
    parse_all(t, strlen(t), out, sizeof out);
    assert_string_equal(out, "h1|h2@1\ntwo\nlines|z@2\nlast|row@4\n");
}

static void test_crlf_bom_and_blank_lines(void **state)
{
    (void)state;
    char out[1024];
    const char *t = "\xEF\xBB\xBFgpu,n\r\n\r\nRTX 4090,\"1\r\n2\"\r\nT4,3\rA800,4\r\n";
    parse_all(t, strlen(t), out, sizeof out);
    /* BOM dropped from the first field; blank line 2 skipped; a quoted CRLF is kept; a lone CR ends a row */
    assert_string_equal(out, "gpu|n@1\nRTX 4090|1\r\n2@3\nT4|3@5\nA800|4@6\n");
}

static void test_truncated_and_malformed(void **state)
{
    (void)state;
    char out[1024];
    /* unterminated quote at the end of the data: error at the line the field opened, then end */
    const char *t1 = "a,b\n1,\"open\nnever closed";
    parse_all(t1, strlen(t1), out, sizeof out);
    assert_string_equal(out, "a|b@1\n!EFORMAT@2\n");
    /* a quote inside an unquoted field and text after a closing quote: the row is dropped, the next one is read */
    const char *t2 = "x,ab\"c\n\"q\"z,1\nok,2\n";
    parse_all(t2, strlen(t2), out, sizeof out);
    assert_string_equal(out, "!EFORMAT@1\n!EFORMAT@2\nok|2@3\n");
    /* a NUL byte is refused rather than silently cutting the field */
    const char t3[] = "a,b\0c\nd,e\n";
    parse_all(t3, sizeof t3 - 1, out, sizeof out);
    assert_string_equal(out, "!EFORMAT@1\nd|e@2\n");
    /* a last line without newline is a full row; a lone trailing comma is an empty last field */
    const char *t4 = "1,2,";
    parse_all(t4, strlen(t4), out, sizeof out);
    assert_string_equal(out, "1|2|@1\n");
    /* the error message names the input and line */
    eco_csv *c;
    eco_csv_row row;
    bool eof;
    assert_int_equal(eco_csv_open(t1, strlen(t1), "measured.csv", &c), ECO_OK);
    assert_int_equal(eco_csv_next(c, &row, &eof), ECO_OK);
    assert_int_equal(eco_csv_next(c, &row, &eof), ECO_EFORMAT);
    assert_string_equal(eco_last_error(), "measured.csv:2: unterminated quoted field");
    eco_csv_close(c);
}

static void test_too_many_fields(void **state)
{
    (void)state;
    size_t n = ECO_CSV_MAX_FIELDS + 10;
    char *t = malloc(2 * n + 16);
    assert_non_null(t);
    for (size_t i = 0; i < n; i++) { t[2 * i] = 'x'; t[2 * i + 1] = ','; }
    strcpy(t + 2 * n, "\nok\n");
    char out[256];
    parse_all(t, strlen(t), out, sizeof out);
    assert_string_equal(out, "!ETOOBIG@1\nok@2\n");
    free(t);
}

static void test_empty_input(void **state)
{
    (void)state;
    char out[64];
    parse_all("", 0, out, sizeof out);
    assert_string_equal(out, "");
    parse_all("\xEF\xBB\xBF\n\n", 5, out, sizeof out);
    assert_string_equal(out, "");
}

static void test_read_file_limits(void **state)
{
    (void)state;
    char path[] = "/tmp/eco_store_csv_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "hello", 5), 5);
    close(fd);
    char *buf;
    size_t len;
    assert_int_equal(eco_store_read_file(path, 16, &buf, &len), ECO_OK);
    assert_int_equal(len, 5);
    assert_string_equal(buf, "hello");
    free(buf);
    assert_int_equal(eco_store_read_file(path, 4, &buf, &len), ECO_ETOOBIG);
    assert_null(buf);
    assert_non_null(strstr(eco_last_error(), "over the limit of 4 bytes"));
    unlink(path);
    assert_int_equal(eco_store_read_file(path, 16, &buf, &len), ECO_EIO);
    assert_non_null(strstr(eco_last_error(), "cannot open"));
    assert_int_equal(eco_store_read_file("/tmp", 16, &buf, &len), ECO_EIO);
}

static void test_sha256_vectors(void **state)
{
    (void)state;
    char h[65];
    eco_sha256_hex("", 0, h);
    assert_string_equal(h, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    eco_sha256_hex("abc", 3, h);
    assert_string_equal(h, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"; /* 56 bytes: padding spills */
    eco_sha256_hex(two, strlen(two), h);
    assert_string_equal(h, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    /* the reference corpus, whose hash the anchor publishes */
    char path[1024], *buf;
    size_t len;
    eco_test_path("ECO_SOURCE_DIR", "data/reference/quality_eval_text.txt", path, sizeof path);
    assert_int_equal(eco_store_read_file(path, ECO_STORE_MAX_FILE_BYTES, &buf, &len), ECO_OK);
    assert_int_equal(len, 60600);
    eco_sha256_hex(buf, len, h);
    assert_string_equal(h, "22ac091a6383740d30f8e41ae144032c873c772db5e1c901112c1c330fdc5504");
    free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain_quotes_and_commas),
        cmocka_unit_test(test_embedded_newline_advances_lines),
        cmocka_unit_test(test_crlf_bom_and_blank_lines),
        cmocka_unit_test(test_truncated_and_malformed),
        cmocka_unit_test(test_too_many_fields),
        cmocka_unit_test(test_empty_input),
        cmocka_unit_test(test_read_file_limits),
        cmocka_unit_test(test_sha256_vectors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
