/* The MCP protocol layer (framing, lifecycle, JSON-RPC errors, tools/list, tools/call) with a fake tool table. */
#include "eco_test.h"

#include <string.h>

#include "eco/mcp.h"

/* "add": sums two numbers; errors name the argument, like the real tools. */
static eco_err tool_add(void *ctx, const json_t *args, json_t **structured, char **summary)
{
    int *calls = ctx;
    (*calls)++;
    const char *names[2] = {"a", "b"};
    double v[2];
    for (int i = 0; i < 2; i++) {
        const json_t *x = json_object_get(args, names[i]);
        if (!x) return eco_fail_field(ECO_EINVAL, names[i], "%s is required", names[i]);
        if (!json_is_number(x)) return eco_fail_field(ECO_EINVAL, names[i], "%s must be a number", names[i]);
        v[i] = json_number_value(x);
    }
    *structured = json_pack("{s:f}", "sum", v[0] + v[1]);
    *summary = strdup("sum computed");
    return ECO_OK;
}

static eco_err tool_broken(void *ctx, const json_t *args, json_t **structured, char **summary)
{
    *structured = json_string("not an object");
    *summary = NULL;
    return ECO_OK;
}

static eco_err tool_nodata(void *ctx, const json_t *args, json_t **structured, char **summary)
{
    return eco_fail(ECO_EUNSUPPORTED, "no curve for that GPU");
}

typedef struct {
    eco_mcp_server *srv;
    int calls;
} fixture;

static json_t *schema(const char *text)
{
    json_t *s = json_loads(text, 0, NULL);
    assert_non_null(s);
    return s;
}

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    assert_int_equal(eco_mcp_server_new("test-server", "9.9.9", &f->srv), ECO_OK);
    eco_mcp_server_set_log(f->srv, NULL);
    json_t *in = schema("{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"number\"},\"b\":{\"type\":\"number\"}},"
                        "\"required\":[\"a\",\"b\"],\"additionalProperties\":false}");
    json_t *out = schema("{\"type\":\"object\",\"properties\":{\"sum\":{\"type\":\"number\"}},\"required\":[\"sum\"]}");
    eco_mcp_tool add = {.name = "add", .title = "Add", .description = "adds a and b", .input_schema = in,
                        .output_schema = out, .read_only = true, .idempotent = true, .fn = tool_add, .ctx = &f->calls};
    assert_int_equal(eco_mcp_server_add_tool(f->srv, &add), ECO_OK);
    eco_mcp_tool broken = {.name = "broken", .description = "returns a string", .input_schema = in, .fn = tool_broken};
    assert_int_equal(eco_mcp_server_add_tool(f->srv, &broken), ECO_OK);
    eco_mcp_tool nodata = {.name = "nodata", .description = "fails", .input_schema = in, .fn = tool_nodata};
    assert_int_equal(eco_mcp_server_add_tool(f->srv, &nodata), ECO_OK);
    json_decref(in);
    json_decref(out);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    eco_mcp_server_free(f->srv);
    free(f);
    return 0;
}

/* Sends one line; returns the response (NULL when none). */
static json_t *send(eco_mcp_server *srv, const char *line)
{
    json_t *r = NULL;
    assert_int_equal(eco_mcp_handle_line(srv, line, strlen(line), &r), ECO_OK);
    if (r) assert_string_equal(json_string_value(json_object_get(r, "jsonrpc")), "2.0");
    return r;
}

static int error_code(const json_t *r)
{
    const json_t *e = json_object_get(r, "error");
    if (!e) fail_msg("expected an error, got %s", json_dumps(r, JSON_COMPACT));
    assert_null(json_object_get(r, "result"));
    return (int)json_integer_value(json_object_get(e, "code"));
}

static const char *error_message(const json_t *r)
{
    return json_string_value(json_object_get(json_object_get(r, "error"), "message"));
}

static void initialize(eco_mcp_server *srv, const char *version)
{
    char line[256];
    snprintf(line, sizeof line,
             "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"%s\","
             "\"capabilities\":{},\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}",
             version);
    json_t *r = send(srv, line);
    assert_non_null(json_object_get(r, "result"));
    json_decref(r);
    assert_null(send(srv, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}"));
}

static void test_initialize_negotiates(void **state)
{
    const char *asked[] = {"2025-06-18", "2025-11-25", "2024-11-05", "1999-01-01"};
    const char *expect[] = {"2025-06-18", "2025-11-25", "2025-11-25", "2025-11-25"};
    for (int i = 0; i < 4; i++) {
        eco_mcp_server *srv;
        assert_int_equal(eco_mcp_server_new("test-server", "9.9.9", &srv), ECO_OK);
        eco_mcp_server_set_log(srv, NULL);
        assert_null(eco_mcp_protocol_version(srv));
        char line[256];
        snprintf(line, sizeof line,
                 "{\"jsonrpc\":\"2.0\",\"id\":\"init-%d\",\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"%s\","
                 "\"capabilities\":{},\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}",
                 i, asked[i]);
        json_t *r = send(srv, line);
        char id[16];
        snprintf(id, sizeof id, "init-%d", i);
        assert_string_equal(json_string_value(json_object_get(r, "id")), id);
        json_t *res = json_object_get(r, "result");
        assert_string_equal(json_string_value(json_object_get(res, "protocolVersion")), expect[i]);
        assert_string_equal(eco_mcp_protocol_version(srv), expect[i]);
        assert_true(json_is_false(json_object_get(json_object_get(json_object_get(res, "capabilities"), "tools"),
                                                  "listChanged")));
        json_t *info = json_object_get(res, "serverInfo");
        assert_string_equal(json_string_value(json_object_get(info, "name")), "test-server");
        assert_string_equal(json_string_value(json_object_get(info, "version")), "9.9.9");
        json_decref(r);
        /* A second initialize on the same connection is refused. */
        r = send(srv, line);
        assert_int_equal(error_code(r), ECO_JSONRPC_INVALID_REQUEST);
        json_decref(r);
        eco_mcp_server_free(srv);
    }
}

static void test_initialize_bad_params(void **state)
{
    fixture *f = *state;
    json_t *r = send(f->srv, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":20251125}}");
    assert_int_equal(error_code(r), ECO_JSONRPC_INVALID_PARAMS);
    json_decref(r);
    r = send(f->srv, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"initialize\"}");
    assert_int_equal(error_code(r), ECO_JSONRPC_INVALID_PARAMS);
    json_decref(r);
    assert_null(eco_mcp_protocol_version(f->srv));
}

static void test_lifecycle_before_initialize(void **state)
{
    fixture *f = *state;
    json_t *r = send(f->srv, "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/list\"}");
    assert_int_equal(error_code(r), ECO_JSONRPC_INVALID_REQUEST);
    assert_int_equal(json_integer_value(json_object_get(r, "id")), 7);
    assert_non_null(strstr(error_message(r), "initialize"));
    json_decref(r);
    r = send(f->srv, "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"tools/call\",\"params\":{\"name\":\"add\",\"arguments\":{\"a\":1,\"b\":2}}}");
    assert_int_equal(error_code(r), ECO_JSONRPC_INVALID_REQUEST);
    json_decref(r);
    assert_int_equal(f->calls, 0);
    /* ping is allowed at any time and answers an empty object. */
    r = send(f->srv, "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"ping\"}");
    assert_true(json_is_object(json_object_get(r, "result")));
    assert_int_equal(json_object_size(json_object_get(r, "result")), 0);
    json_decref(r);
}

static void test_parse_and_envelope_errors(void **state)
{
    fixture *f = *state;
    initialize(f->srv, "2025-11-25");
    struct {
        const char *line;
        int code;
        bool id_null;
    } cases[] = {
        {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":", ECO_JSONRPC_PARSE_ERROR, true},
        {"not json", ECO_JSONRPC_PARSE_ERROR, true},
        {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"} trailing", ECO_JSONRPC_PARSE_ERROR, true},
        {"\xff\xfe", ECO_JSONRPC_PARSE_ERROR, true},
        {"{\"jsonrpc\":\"2.0\",\"id\":1,\"id\":2,\"method\":\"ping\"}", ECO_JSONRPC_PARSE_ERROR, true}, /* duplicate id */
        /* another duplicate key: valid JSON all the same, answered with its id */
        {"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":\"list_gpus\",\"name\":\"x\"}}",
         ECO_JSONRPC_INVALID_REQUEST, false},
        /* a duplicate "id" inside the arguments leaves the request's own id clear */
        {"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":\"x\",\"arguments\":{\"id\":1,\"id\":2}}}",
         ECO_JSONRPC_INVALID_REQUEST, false},
        {"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":\"list_gpus\",\"arguments\":null}}",
         ECO_JSONRPC_INVALID_PARAMS, false},
        {"[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]", ECO_JSONRPC_INVALID_REQUEST, true},
        {"[]", ECO_JSONRPC_INVALID_REQUEST, true},
        {"42", ECO_JSONRPC_INVALID_REQUEST, true},
        {"\"ping\"", ECO_JSONRPC_INVALID_REQUEST, true},
        {"{\"id\":3,\"method\":\"ping\"}", ECO_JSONRPC_INVALID_REQUEST, false},
        {"{\"jsonrpc\":\"1.0\",\"id\":3,\"method\":\"ping\"}", ECO_JSONRPC_INVALID_REQUEST, false},
        {"{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"ping\"}", ECO_JSONRPC_INVALID_REQUEST, true},
        {"{\"jsonrpc\":\"2.0\",\"id\":true,\"method\":\"ping\"}", ECO_JSONRPC_INVALID_REQUEST, true},
        {"{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"ping\"}", ECO_JSONRPC_INVALID_REQUEST, true},
        {"{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"ping\"}", ECO_JSONRPC_INVALID_REQUEST, true},
        {"{\"jsonrpc\":\"2.0\",\"id\":3}", ECO_JSONRPC_INVALID_REQUEST, false},
        {"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":17}", ECO_JSONRPC_INVALID_REQUEST, false},
        {"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\",\"params\":[1]}", ECO_JSONRPC_INVALID_PARAMS, false},
        {"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"resources/list\"}", ECO_JSONRPC_METHOD_NOT_FOUND, false},
        {"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/list\",\"params\":{\"cursor\":\"abc\"}}", ECO_JSONRPC_INVALID_PARAMS, false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *r = send(f->srv, cases[i].line);
        if (!r) fail_msg("no response to %s", cases[i].line);
        if (error_code(r) != cases[i].code)
            fail_msg("%s: code %d, expected %d", cases[i].line, error_code(r), cases[i].code);
        const json_t *id = json_object_get(r, "id");
        assert_non_null(id); /* always present, null when unknown */
        if (cases[i].id_null) assert_true(json_is_null(id));
        else assert_int_equal(json_integer_value(id), 3);
        json_decref(r);
    }
    /* Still serving after all that. */
    json_t *r = send(f->srv, "{\"jsonrpc\":\"2.0\",\"id\":\"x\",\"method\":\"ping\"}");
    assert_string_equal(json_string_value(json_object_get(r, "id")), "x");
    assert_non_null(json_object_get(r, "result"));
    json_decref(r);
}

static void test_notifications_get_no_response(void **state)
{
    fixture *f = *state;
    initialize(f->srv, "2025-06-18");
    assert_null(send(f->srv, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":1}}"));
    assert_null(send(f->srv, "{\"jsonrpc\":\"2.0\",\"method\":\"no/such/notification\"}"));
    assert_null(send(f->srv, "{\"jsonrpc\":\"2.0\",\"method\":\"tools/call\",\"params\":{\"name\":\"add\",\"arguments\":{\"a\":1,\"b\":1}}}"));
    assert_null(send(f->srv, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/x\",\"params\":5}"));
    /* A response from the client (we never send requests) is ignored. */
    assert_null(send(f->srv, "{\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{}}"));
    assert_int_equal(f->calls, 0);
}

static void test_tools_list(void **state)
{
    fixture *f = *state;
    initialize(f->srv, "2025-11-25");
    json_t *r = send(f->srv, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\",\"params\":{}}");
    json_t *tools = json_object_get(json_object_get(r, "result"), "tools");
    assert_int_equal(json_array_size(tools), 3);
    json_t *add = json_array_get(tools, 0);
    assert_string_equal(json_string_value(json_object_get(add, "name")), "add");
    assert_string_equal(json_string_value(json_object_get(add, "title")), "Add");
    assert_string_equal(json_string_value(json_object_get(add, "description")), "adds a and b");
    assert_string_equal(json_string_value(json_object_get(json_object_get(add, "inputSchema"), "type")), "object");
    assert_non_null(json_object_get(json_object_get(json_object_get(add, "outputSchema"), "properties"), "sum"));
    json_t *ann = json_object_get(add, "annotations");
    assert_true(json_is_true(json_object_get(ann, "readOnlyHint")));
    assert_true(json_is_false(json_object_get(ann, "destructiveHint")));
    assert_true(json_is_true(json_object_get(ann, "idempotentHint")));
    assert_true(json_is_false(json_object_get(ann, "openWorldHint")));
    assert_null(json_object_get(json_array_get(tools, 1), "outputSchema"));
    assert_null(json_object_get(json_object_get(r, "result"), "nextCursor"));
    json_decref(r);
}

static void test_tools_call(void **state)
{
    fixture *f = *state;
    initialize(f->srv, "2025-11-25");
    json_t *r = send(f->srv, "{\"jsonrpc\":\"2.0\",\"id\":10,\"method\":\"tools/call\",\"params\":{\"name\":\"add\",\"arguments\":{\"a\":1.5,\"b\":2}}}");
    json_t *res = json_object_get(r, "result");
    assert_non_null(res);
    assert_true(json_is_false(json_object_get(res, "isError")));
    assert_near(json_number_value(json_object_get(json_object_get(res, "structuredContent"), "sum")), 3.5, 1e-12);
    json_t *content = json_object_get(res, "content");
    assert_int_equal(json_array_size(content), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(content, 0), "type")), "text");
    assert_string_equal(json_string_value(json_object_get(json_array_get(content, 0), "text")), "sum computed");
    /* The second block is the structured content serialized. */
    json_t *echo = json_loads(json_string_value(json_object_get(json_array_get(content, 1), "text")), 0, NULL);
    assert_true(json_equal(echo, json_object_get(res, "structuredContent")));
    json_decref(echo);
    json_decref(r);

    /* Wrong argument type: a tool execution error naming the field, not a JSON-RPC error. */
    r = send(f->srv, "{\"jsonrpc\":\"2.0\",\"id\":11,\"method\":\"tools/call\",\"params\":{\"name\":\"add\",\"arguments\":{\"a\":1,\"b\":\"two\"}}}");
    res = json_object_get(r, "result");
    assert_non_null(res);
    assert_null(json_object_get(r, "error"));
    assert_true(json_is_true(json_object_get(res, "isError")));
    assert_null(json_object_get(res, "structuredContent"));
    const char *text = json_string_value(json_object_get(json_array_get(json_object_get(res, "content"), 0), "text"));
    assert_non_null(strstr(text, "'b'"));
    assert_non_null(strstr(text, "must be a number"));
    json_decref(r);

    /* Missing arguments behave as {} (the tool reports the missing field). */
    r = send(f->srv, "{\"jsonrpc\":\"2.0\",\"id\":12,\"method\":\"tools/call\",\"params\":{\"name\":\"add\"}}");
    res = json_object_get(r, "result");
    assert_true(json_is_true(json_object_get(res, "isError")));
    text = json_string_value(json_object_get(json_array_get(json_object_get(res, "content"), 0), "text"));
    assert_non_null(strstr(text, "'a'"));
    json_decref(r);

    r = send(f->srv, "{\"jsonrpc\":\"2.0\",\"id\":13,\"method\":\"tools/call\",\"params\":{\"name\":\"nodata\",\"arguments\":{}}}");
    res = json_object_get(r, "result");
    assert_true(json_is_true(json_object_get(res, "isError")));
    text = json_string_value(json_object_get(json_array_get(json_object_get(res, "content"), 0), "text"));
    assert_non_null(strstr(text, "no curve for that GPU"));
    json_decref(r);
    assert_int_equal(f->calls, 3);
}

static void test_tools_call_protocol_errors(void **state)
{
    fixture *f = *state;
    initialize(f->srv, "2025-11-25");
    json_t *r = send(f->srv, "{\"jsonrpc\":\"2.0\",\"id\":20,\"method\":\"tools/call\",\"params\":{\"name\":\"nope\",\"arguments\":{}}}");
    assert_int_equal(error_code(r), ECO_JSONRPC_INVALID_PARAMS);
    assert_non_null(strstr(error_message(r), "nope"));
    json_t *avail = json_object_get(json_object_get(json_object_get(r, "error"), "data"), "available");
    assert_int_equal(json_array_size(avail), 3);
    json_decref(r);
    r = send(f->srv, "{\"jsonrpc\":\"2.0\",\"id\":21,\"method\":\"tools/call\",\"params\":{\"name\":\"add\",\"arguments\":[1,2]}}");
    assert_int_equal(error_code(r), ECO_JSONRPC_INVALID_PARAMS);
    assert_non_null(strstr(error_message(r), "arguments"));
    json_decref(r);
    r = send(f->srv, "{\"jsonrpc\":\"2.0\",\"id\":22,\"method\":\"tools/call\",\"params\":{\"name\":5}}");
    assert_int_equal(error_code(r), ECO_JSONRPC_INVALID_PARAMS);
    json_decref(r);
    r = send(f->srv, "{\"jsonrpc\":\"2.0\",\"id\":23,\"method\":\"tools/call\"}");
    assert_int_equal(error_code(r), ECO_JSONRPC_INVALID_PARAMS);
    json_decref(r);
    assert_int_equal(f->calls, 0);
    /* A tool that breaks its contract is an internal error. */
    r = send(f->srv, "{\"jsonrpc\":\"2.0\",\"id\":24,\"method\":\"tools/call\",\"params\":{\"name\":\"broken\",\"arguments\":{}}}");
    assert_int_equal(error_code(r), ECO_JSONRPC_INTERNAL_ERROR);
    json_decref(r);
}

static void test_add_tool_validation(void **state)
{
    fixture *f = *state;
    json_t *obj = schema("{\"type\":\"object\"}");
    json_t *arr = schema("{\"type\":\"array\"}");
    eco_mcp_tool t = {.name = "bad name", .description = "d", .input_schema = obj, .fn = tool_add};
    assert_int_equal(eco_mcp_server_add_tool(f->srv, &t), ECO_EINVAL);
    assert_string_equal(eco_last_error_field(), "name");
    t.name = "add"; /* duplicate */
    assert_int_equal(eco_mcp_server_add_tool(f->srv, &t), ECO_EINVAL);
    t.name = "ok.tool-1";
    t.input_schema = arr;
    assert_int_equal(eco_mcp_server_add_tool(f->srv, &t), ECO_EINVAL);
    assert_string_equal(eco_last_error_field(), "input_schema");
    t.input_schema = obj;
    t.output_schema = arr;
    assert_int_equal(eco_mcp_server_add_tool(f->srv, &t), ECO_EINVAL);
    t.output_schema = NULL;
    t.fn = NULL;
    assert_int_equal(eco_mcp_server_add_tool(f->srv, &t), ECO_EINVAL);
    t.fn = tool_add;
    assert_int_equal(eco_mcp_server_add_tool(f->srv, &t), ECO_OK);
    json_decref(obj);
    json_decref(arr);
}

/* Runs eco_mcp_serve over an input buffer; returns the output lines as a JSON array of parsed messages. */
static json_t *serve_buffer(eco_mcp_server *srv, const char *input, size_t len, eco_err *rc)
{
    FILE *in = tmpfile(), *out = tmpfile();
    assert_non_null(in);
    assert_non_null(out);
    assert_int_equal(fwrite(input, 1, len, in), len);
    rewind(in);
    *rc = eco_mcp_serve(srv, in, out);
    long n = ftell(out);
    rewind(out);
    char *text = calloc(1, (size_t)n + 1);
    assert_int_equal(fread(text, 1, (size_t)n, out), (size_t)n);
    fclose(in);
    fclose(out);
    json_t *lines = json_array();
    char *save = NULL;
    if (n > 0) assert_int_equal(text[n - 1], '\n');
    for (char *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        json_error_t err;
        json_t *m = json_loads(l, 0, &err);
        if (!m) fail_msg("output line is not JSON: %s", l);
        assert_string_equal(json_string_value(json_object_get(m, "jsonrpc")), "2.0");
        json_array_append_new(lines, m);
    }
    free(text);
    return lines;
}

static void test_serve_stream(void **state)
{
    fixture *f = *state;
    const char *input =
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-06-18\"}}\n"
        "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n"
        "\n"
        "   \r\n"
        "{bad json\n"
        "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"add\",\"arguments\":{\"a\":2,\"b\":3}}}\r\n"
        "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"nope\"}\n"
        "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"ping\"}"; /* EOF without a final newline */
    eco_err rc;
    json_t *out = serve_buffer(f->srv, input, strlen(input), &rc);
    assert_int_equal(rc, ECO_OK);
    assert_int_equal(json_array_size(out), 5);
    assert_string_equal(json_string_value(json_object_get(json_object_get(json_array_get(out, 0), "result"),
                                                          "protocolVersion")),
                        "2025-06-18");
    assert_int_equal(error_code(json_array_get(out, 1)), ECO_JSONRPC_PARSE_ERROR);
    assert_true(json_is_null(json_object_get(json_array_get(out, 1), "id")));
    assert_near(json_number_value(json_object_get(
                    json_object_get(json_object_get(json_array_get(out, 2), "result"), "structuredContent"), "sum")),
                5.0, 0);
    assert_int_equal(error_code(json_array_get(out, 3)), ECO_JSONRPC_METHOD_NOT_FOUND);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(out, 4), "id")), 4);
    json_decref(out);
}

static void test_serve_line_limit(void **state)
{
    fixture *f = *state;
    /* A line just over the limit is refused; the next one is served. Exactly at the limit is parsed. */
    size_t big = ECO_MCP_MAX_LINE_BYTES + 10;
    const char *tail = "\n{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"ping\"}\n";
    size_t total = big + strlen(tail) + ECO_MCP_MAX_LINE_BYTES + 1;
    char *input = malloc(total);
    memset(input, ' ', big);
    memcpy(input, "{\"a\":\"", 6);
    memcpy(input + big, tail, strlen(tail));
    char *exact = input + big + strlen(tail);
    memset(exact, ' ', ECO_MCP_MAX_LINE_BYTES);
    memcpy(exact, "[1]", 3); /* parses (padded with spaces) and is refused as a batch */
    exact[ECO_MCP_MAX_LINE_BYTES] = '\n';
    eco_err rc;
    json_t *out = serve_buffer(f->srv, input, total, &rc);
    free(input);
    assert_int_equal(rc, ECO_OK);
    assert_int_equal(json_array_size(out), 3);
    assert_int_equal(error_code(json_array_get(out, 0)), ECO_JSONRPC_INVALID_REQUEST);
    assert_non_null(strstr(error_message(json_array_get(out, 0)), "line limit"));
    assert_int_equal(json_integer_value(json_object_get(json_array_get(out, 1), "id")), 9);
    assert_int_equal(error_code(json_array_get(out, 2)), ECO_JSONRPC_INVALID_REQUEST);
    assert_non_null(strstr(error_message(json_array_get(out, 2)), "batch"));
    json_decref(out);
}

static void test_serve_empty_and_write_failure(void **state)
{
    fixture *f = *state;
    eco_err rc;
    json_t *out = serve_buffer(f->srv, "", 0, &rc);
    assert_int_equal(rc, ECO_OK);
    assert_int_equal(json_array_size(out), 0);
    json_decref(out);

    FILE *full = fopen("/dev/full", "w");
    if (!full) skip();
    FILE *in = tmpfile();
    fputs("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n", in);
    rewind(in);
    assert_int_equal(eco_mcp_serve(f->srv, in, full), ECO_EIO);
    fclose(in);
    fclose(full);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_initialize_negotiates),
        cmocka_unit_test_setup_teardown(test_initialize_bad_params, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lifecycle_before_initialize, setup, teardown),
        cmocka_unit_test_setup_teardown(test_parse_and_envelope_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_notifications_get_no_response, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tools_list, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tools_call, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tools_call_protocol_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_add_tool_validation, setup, teardown),
        cmocka_unit_test_setup_teardown(test_serve_stream, setup, teardown),
        cmocka_unit_test_setup_teardown(test_serve_line_limit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_serve_empty_and_write_failure, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
