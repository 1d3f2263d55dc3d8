/* JSON-RPC 2.0 framing and the MCP lifecycle for the stdio transport. */
#include "eco/mcp.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "eco/json.h"

typedef struct {
    char *name, *title, *description;
    json_t *input_schema, *output_schema;
    bool read_only, idempotent, open_world;
    eco_mcp_tool_fn fn;
    void *ctx;
} tool_entry;

struct eco_mcp_server {
    char *name, *version, *instructions;
    FILE *log;
    tool_entry *tools;
    size_t ntools, cap;
    const char *protocol; /* static string once initialized */
    unsigned long line_no;
};

static const char *const supported_versions[] = {ECO_MCP_PROTOCOL_LATEST, ECO_MCP_PROTOCOL_PREVIOUS};

static char *dup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

eco_err eco_mcp_server_new(const char *name, const char *version, eco_mcp_server **out)
{
    if (!out || !name || !version) return eco_fail(ECO_EINVAL, "eco_mcp_server_new: name and version are required");
    eco_mcp_server *srv = calloc(1, sizeof *srv);
    if (!srv) return eco_fail(ECO_ENOMEM, "out of memory creating the MCP server");
    srv->name = strdup(name);
    srv->version = strdup(version);
    srv->log = stderr;
    if (!srv->name || !srv->version) {
        eco_mcp_server_free(srv);
        return eco_fail(ECO_ENOMEM, "out of memory creating the MCP server");
    }
    *out = srv;
    return ECO_OK;
}

void eco_mcp_server_free(eco_mcp_server *srv)
{
    if (!srv) return;
    for (size_t i = 0; i < srv->ntools; i++) {
        tool_entry *t = &srv->tools[i];
        free(t->name);
        free(t->title);
        free(t->description);
        json_decref(t->input_schema);
        json_decref(t->output_schema);
    }
    free(srv->tools);
    free(srv->name);
    free(srv->version);
    free(srv->instructions);
    free(srv);
}

void eco_mcp_server_set_log(eco_mcp_server *srv, FILE *log)
{
    srv->log = log;
}

eco_err eco_mcp_server_set_instructions(eco_mcp_server *srv, const char *instructions)
{
    char *copy = dup_or_null(instructions);
    if (instructions && !copy) return eco_fail(ECO_ENOMEM, "out of memory");
    free(srv->instructions);
    srv->instructions = copy;
    return ECO_OK;
}

const char *eco_mcp_protocol_version(const eco_mcp_server *srv)
{
    return srv->protocol;
}

static bool valid_tool_name(const char *s)
{
    size_t n = strlen(s);
    if (n < 1 || n > 128) return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
              c == '.'))
            return false;
    }
    return true;
}

static bool object_schema(const json_t *schema)
{
    return json_is_object(schema) && json_is_string(json_object_get(schema, "type")) &&
           !strcmp(json_string_value(json_object_get(schema, "type")), "object");
}

eco_err eco_mcp_server_add_tool(eco_mcp_server *srv, const eco_mcp_tool *tool)
{
    if (!tool || !tool->name || !valid_tool_name(tool->name))
        return eco_fail_field(ECO_EINVAL, "name", "tool name must be 1-128 characters of [A-Za-z0-9_.-], got '%s'",
                              tool && tool->name ? tool->name : "(null)");
    if (!tool->fn) return eco_fail_field(ECO_EINVAL, "fn", "tool '%s' has no implementation", tool->name);
    if (!tool->description) return eco_fail_field(ECO_EINVAL, "description", "tool '%s' has no description", tool->name);
    /* MCP requires object schemas: arguments and structuredContent are JSON objects. */
    if (!object_schema(tool->input_schema))
        return eco_fail_field(ECO_EINVAL, "input_schema", "tool '%s': inputSchema must have \"type\":\"object\"", tool->name);
    if (tool->output_schema && !object_schema(tool->output_schema))
        return eco_fail_field(ECO_EINVAL, "output_schema", "tool '%s': outputSchema must have \"type\":\"object\"",
                              tool->name);
    for (size_t i = 0; i < srv->ntools; i++)
        if (!strcmp(srv->tools[i].name, tool->name))
            return eco_fail_field(ECO_EINVAL, "name", "tool '%s' is already registered", tool->name);
    if (srv->ntools == srv->cap) {
        size_t cap = srv->cap ? srv->cap * 2 : 8;
        tool_entry *grown = realloc(srv->tools, cap * sizeof *grown);
        if (!grown) return eco_fail(ECO_ENOMEM, "out of memory registering tool '%s'", tool->name);
        srv->tools = grown;
        srv->cap = cap;
    }
    tool_entry t = {
        .name = strdup(tool->name),
        .title = dup_or_null(tool->title),
        .description = strdup(tool->description),
        .input_schema = json_incref(tool->input_schema),
        .output_schema = tool->output_schema ? json_incref(tool->output_schema) : NULL,
        .read_only = tool->read_only,
        .idempotent = tool->idempotent,
        .open_world = tool->open_world,
        .fn = tool->fn,
        .ctx = tool->ctx,
    };
    if (!t.name || !t.description || (tool->title && !t.title)) {
        free(t.name);
        free(t.title);
        free(t.description);
        json_decref(t.input_schema);
        json_decref(t.output_schema);
        return eco_fail(ECO_ENOMEM, "out of memory registering tool '%s'", tool->name);
    }
    srv->tools[srv->ntools++] = t;
    return ECO_OK;
}

static void logf_(eco_mcp_server *srv, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void logf_(eco_mcp_server *srv, const char *fmt, ...)
{
    if (!srv->log) return;
    va_list ap;
    va_start(ap, fmt);
    fprintf(srv->log, "eco mcp: line %lu: ", srv->line_no);
    vfprintf(srv->log, fmt, ap);
    fputc('\n', srv->log);
    fflush(srv->log);
    va_end(ap);
}

/* ---- responses ---- */

/* `id` is borrowed; NULL means JSON null (the id could not be determined). `data` is stolen. */
static json_t *error_response(const json_t *id, int code, const char *message, json_t *data)
{
    json_t *err = json_pack("{s:i, s:s}", "code", code, "message", message);
    if (err && data) json_object_set_new(err, "data", data);
    else json_decref(data);
    if (!err) return NULL;
    return json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id ? id : json_null(), "error", err);
}

/* `result` is stolen. */
static json_t *result_response(const json_t *id, json_t *result)
{
    if (!result) return NULL;
    return json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id, "result", result);
}

/* ---- methods ---- */

static json_t *handle_initialize(eco_mcp_server *srv, const json_t *id, const json_t *params)
{
    if (srv->protocol)
        return error_response(id, ECO_JSONRPC_INVALID_REQUEST, "initialize was already received on this connection",
                              NULL);
    const json_t *pv = json_object_get(params, "protocolVersion");
    if (!json_is_string(pv))
        return error_response(id, ECO_JSONRPC_INVALID_PARAMS, "initialize: params.protocolVersion must be a string",
                              json_pack("{s:s}", "field", "protocolVersion"));
    /* Answer the client's revision when we speak it, else our latest; the client then decides whether to go on. */
    const char *chosen = supported_versions[0];
    for (size_t i = 0; i < sizeof supported_versions / sizeof supported_versions[0]; i++)
        if (!strcmp(json_string_value(pv), supported_versions[i])) chosen = supported_versions[i];
    if (strcmp(chosen, json_string_value(pv)))
        logf_(srv, "client asked for protocol %s; offering %s", json_string_value(pv), chosen);
    srv->protocol = chosen;

    json_t *result = json_pack("{s:s, s:{s:{s:b}}, s:{s:s, s:s, s:s}}", "protocolVersion", chosen, "capabilities",
                               "tools", "listChanged", 0, "serverInfo", "name", srv->name, "title",
                               "EcoCompute energy-per-token estimator", "version", srv->version);
    if (result && srv->instructions) json_object_set_new(result, "instructions", json_string(srv->instructions));
    return result_response(id, result);
}

static json_t *tool_json(const tool_entry *t)
{
    json_t *o = json_pack("{s:s, s:s, s:O, s:{s:b, s:b, s:b, s:b}}", "name", t->name, "description", t->description,
                          "inputSchema", t->input_schema, "annotations", "readOnlyHint", t->read_only,
                          "destructiveHint", !t->read_only, "idempotentHint", t->idempotent, "openWorldHint",
                          t->open_world);
    if (!o) return NULL;
    if (t->title) {
        json_object_set_new(o, "title", json_string(t->title));
        json_object_set_new(json_object_get(o, "annotations"), "title", json_string(t->title));
    }
    if (t->output_schema) json_object_set(o, "outputSchema", t->output_schema);
    return o;
}

static json_t *handle_tools_list(eco_mcp_server *srv, const json_t *id, const json_t *params)
{
    const json_t *cursor = json_object_get(params, "cursor");
    /* Everything fits in one page, so no cursor we could have issued exists. */
    if (cursor && !json_is_null(cursor))
        return error_response(id, ECO_JSONRPC_INVALID_PARAMS, "tools/list: invalid cursor (this server does not paginate)",
                              json_pack("{s:s}", "field", "cursor"));
    json_t *tools = json_array();
    if (!tools) return NULL;
    for (size_t i = 0; i < srv->ntools; i++) {
        if (json_array_append_new(tools, tool_json(&srv->tools[i]))) {
            json_decref(tools);
            return NULL;
        }
    }
    return result_response(id, json_pack("{s:o}", "tools", tools));
}

static json_t *text_item(const char *text)
{
    return json_pack("{s:s, s:s}", "type", "text", "text", text);
}

static json_t *tool_error_result(const char *tool, eco_err code)
{
    const char *field = eco_last_error_field();
    const char *msg = eco_last_error();
    const char *kind = code == ECO_EINVAL       ? "invalid argument"
                       : code == ECO_ENOTFOUND  ? "unknown value"
                       : code == ECO_EUNSUPPORTED ? "no data for this request"
                       : code == ECO_ETOOBIG    ? "argument too large"
                                                : "tool failed";
    size_t cap = strlen(tool) + strlen(field) + strlen(msg) + strlen(kind) + 64;
    char *text = malloc(cap);
    if (!text) return NULL;
    if (*field) snprintf(text, cap, "%s: %s '%s': %s", tool, kind, field, *msg ? msg : eco_err_name(code));
    else snprintf(text, cap, "%s: %s: %s", tool, kind, *msg ? msg : eco_err_name(code));
    json_t *r = json_pack("{s:[o], s:b}", "content", text_item(text), "isError", 1);
    free(text);
    return r;
}

static json_t *handle_tools_call(eco_mcp_server *srv, const json_t *id, const json_t *params)
{
    const json_t *name = json_object_get(params, "name");
    if (!json_is_string(name))
        return error_response(id, ECO_JSONRPC_INVALID_PARAMS, "tools/call: params.name must be a string",
                              json_pack("{s:s}", "field", "name"));
    const tool_entry *t = NULL;
    for (size_t i = 0; i < srv->ntools && !t; i++)
        if (!strcmp(srv->tools[i].name, json_string_value(name))) t = &srv->tools[i];
    if (!t) {
        json_t *names = json_array();
        for (size_t i = 0; names && i < srv->ntools; i++) json_array_append_new(names, json_string(srv->tools[i].name));
        char msg[256];
        snprintf(msg, sizeof msg, "Unknown tool: %.200s", json_string_value(name));
        return error_response(id, ECO_JSONRPC_INVALID_PARAMS, msg,
                              json_pack("{s:s, s:O, s:o}", "field", "name", "tool", name, "available", names));
    }
    const json_t *args = json_object_get(params, "arguments");
    if (args && !json_is_object(args))
        return error_response(id, ECO_JSONRPC_INVALID_PARAMS, "tools/call: params.arguments must be an object",
                              json_pack("{s:s}", "field", "arguments"));
    json_t *empty = NULL;
    if (!json_is_object(args)) args = empty = json_object();
    if (!args) return NULL;

    json_t *structured = NULL;
    char *summary = NULL;
    eco_clear_error();
    eco_err rc = t->fn(t->ctx, args, &structured, &summary);
    json_decref(empty);
    if (rc != ECO_OK) {
        json_decref(structured);
        free(summary);
        logf_(srv, "tools/call %s: %s%s%s%s", t->name, eco_last_error(), *eco_last_error_field() ? " (field " : "",
              eco_last_error_field(), *eco_last_error_field() ? ")" : "");
        return result_response(id, tool_error_result(t->name, rc));
    }
    if (!json_is_object(structured)) {
        json_decref(structured);
        free(summary);
        logf_(srv, "tools/call %s returned no structured object", t->name);
        return error_response(id, ECO_JSONRPC_INTERNAL_ERROR, "internal error: the tool returned no result", NULL);
    }
    /* Spec: a tool returning structured content SHOULD also return it serialized in a text block. */
    char *serialized = json_dumps(structured, JSON_COMPACT);
    json_t *content = json_array();
    if (content && summary) json_array_append_new(content, text_item(summary));
    if (content && serialized) json_array_append_new(content, text_item(serialized));
    free(serialized);
    free(summary);
    json_t *result = content ? json_pack("{s:o, s:o, s:b}", "content", content, "structuredContent", structured,
                                         "isError", 0)
                             : NULL;
    if (!content) json_decref(structured);
    return result_response(id, result);
}

/* Validates the envelope, then dispatches. Returns the response (NULL for none). */
static json_t *handle_message(eco_mcp_server *srv, json_t *msg, bool *oom)
{
    if (json_is_array(msg)) {
        logf_(srv, "refused a JSON-RPC batch");
        return error_response(NULL, ECO_JSONRPC_INVALID_REQUEST,
                              "Invalid Request: JSON-RPC batches are not supported (removed in MCP 2025-06-18); "
                              "send one message per line",
                              NULL);
    }
    if (!json_is_object(msg))
        return error_response(NULL, ECO_JSONRPC_INVALID_REQUEST, "Invalid Request: a message must be a JSON object",
                              NULL);

    const json_t *id = json_object_get(msg, "id");
    bool has_id = id != NULL;
    /* MCP: ids are strings or integers, never null. */
    bool id_ok = json_is_string(id) || json_is_integer(id);
    const json_t *echo_id = id_ok ? id : NULL;
    const json_t *version = json_object_get(msg, "jsonrpc");
    const json_t *method = json_object_get(msg, "method");

    if (!json_is_string(version) || strcmp(json_string_value(version), "2.0"))
        return error_response(echo_id, ECO_JSONRPC_INVALID_REQUEST, "Invalid Request: \"jsonrpc\" must be \"2.0\"",
                              json_pack("{s:s}", "field", "jsonrpc"));
    if (!method) {
        /* A response to a request we never send: nothing to answer. */
        if (json_object_get(msg, "result") || json_object_get(msg, "error")) {
            logf_(srv, "ignored a response message from the client");
            return NULL;
        }
        return error_response(echo_id, ECO_JSONRPC_INVALID_REQUEST, "Invalid Request: \"method\" is missing",
                              json_pack("{s:s}", "field", "method"));
    }
    if (has_id && !id_ok)
        return error_response(NULL, ECO_JSONRPC_INVALID_REQUEST,
                              "Invalid Request: \"id\" must be a string or an integer of at most 64 bits", json_pack("{s:s}", "field", "id"));
    if (!json_is_string(method))
        return error_response(echo_id, ECO_JSONRPC_INVALID_REQUEST, "Invalid Request: \"method\" must be a string",
                              json_pack("{s:s}", "field", "method"));
    const char *m = json_string_value(method);
    const json_t *params = json_object_get(msg, "params");
    if (params && !json_is_object(params)) {
        if (!has_id) return NULL; /* a notification is never answered, even a malformed one */
        return error_response(id, ECO_JSONRPC_INVALID_PARAMS, "Invalid params: \"params\" must be an object",
                              json_pack("{s:s}", "field", "params"));
    }

    if (!has_id) {
        if (!strcmp(m, "notifications/initialized") && !srv->protocol)
            logf_(srv, "notifications/initialized before initialize");
        /* cancelled, progress, roots/list_changed, ...: tools here run synchronously, nothing to do. */
        return NULL;
    }

    json_t *r;
    if (!strcmp(m, "ping")) {
        r = result_response(id, json_object());
    } else if (!strcmp(m, "initialize")) {
        r = handle_initialize(srv, id, params);
    } else if (!srv->protocol) {
        /* Lifecycle: only ping may precede initialize. */
        char buf[256];
        snprintf(buf, sizeof buf, "Invalid Request: '%.100s' before initialize; send initialize first", m);
        r = error_response(id, ECO_JSONRPC_INVALID_REQUEST, buf, NULL);
    } else if (!strcmp(m, "tools/list")) {
        r = handle_tools_list(srv, id, params);
    } else if (!strcmp(m, "tools/call")) {
        r = handle_tools_call(srv, id, params);
    } else {
        char buf[256];
        snprintf(buf, sizeof buf, "Method not found: %.200s", m);
        r = error_response(id, ECO_JSONRPC_METHOD_NOT_FOUND, buf, json_pack("{s:s}", "method", m));
    }
    if (!r) *oom = true;
    return r;
}

/* How deep in objects and arrays byte `pos` of a JSON text lies (1: inside the top-level object), strings skipped:
 * a duplicate "id" there leaves the request's id ambiguous; one deeper (in the arguments) does not. */
static int nesting_at(const char *s, size_t len, size_t pos)
{
    int depth = 0;
    bool in_string = false;
    for (size_t i = 0; i < len && i < pos; i++) {
        char c = s[i];
        if (in_string) {
            if (c == '\\') i++;
            else if (c == '"') in_string = false;
        } else if (c == '"') in_string = true;
        else if (c == '{' || c == '[') depth++;
        else if (c == '}' || c == ']') depth--;
    }
    return depth;
}

eco_err eco_mcp_handle_line(eco_mcp_server *srv, const char *line, size_t len, json_t **response)
{
    *response = NULL;
    srv->line_no++;
    json_error_t jerr;
    /* as eco validate does; an integer past 64 bits is valid JSON, not a parse error (as in the REST API) */
    json_t *msg = eco_json_loadb_wide(line, len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &jerr);
    if (!msg && json_error_code(&jerr) == json_error_duplicate_key &&
        !(strstr(jerr.text, "'\"id\"'") && nesting_at(line, len, (size_t)jerr.position) == 1)) {
        /* valid JSON all the same: answer the request's id, so a client waiting on it is not left hanging */
        json_t *dup = json_loadb(line, len, JSON_DECODE_ANY, NULL);
        const json_t *id = json_is_object(dup) ? json_object_get(dup, "id") : NULL;
        if (id && (json_is_string(id) || json_is_integer(id))) {
            logf_(srv, "invalid request: %s", jerr.text);
            char buf[320];
            snprintf(buf, sizeof buf, "Invalid Request: %s (duplicate keys are refused)", jerr.text);
            *response = error_response(id, ECO_JSONRPC_INVALID_REQUEST, buf, NULL);
            json_decref(dup);
            return *response ? ECO_OK : eco_fail(ECO_ENOMEM, "out of memory answering an invalid request");
        }
        json_decref(dup);
    }
    if (!msg) {
        logf_(srv, "parse error: %s (column %d)", jerr.text, jerr.column);
        char buf[320];
        snprintf(buf, sizeof buf, "Parse error: %s", jerr.text);
        *response = error_response(NULL, ECO_JSONRPC_PARSE_ERROR, buf,
                                   json_pack("{s:i, s:I}", "column", jerr.column, "position", (json_int_t)jerr.position));
        return *response ? ECO_OK : eco_fail(ECO_ENOMEM, "out of memory answering a parse error");
    }
    bool oom = false;
    *response = handle_message(srv, msg, &oom);
    json_decref(msg);
    if (oom) return eco_fail(ECO_ENOMEM, "out of memory building an MCP response");
    return ECO_OK;
}

/* ---- stdio loop ---- */

static eco_err write_message(FILE *out, const json_t *response)
{
    /* Compact output escapes control characters, so a message never contains a raw newline. */
    char *s = json_dumps(response, JSON_COMPACT);
    if (!s) return eco_fail(ECO_ENOMEM, "out of memory serializing an MCP response");
    int bad = fputs(s, out) == EOF || fputc('\n', out) == EOF || fflush(out) == EOF;
    free(s);
    return bad ? eco_fail(ECO_EIO, "writing to the MCP client failed") : ECO_OK;
}

eco_err eco_mcp_serve(eco_mcp_server *srv, FILE *in, FILE *out)
{
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    if (!buf) return eco_fail(ECO_ENOMEM, "out of memory");
    bool too_long = false;
    eco_err rc = ECO_OK;
    for (;;) {
        int c = getc(in);
        if (c != EOF && c != '\n') {
            if (too_long) continue; /* drop the rest of an oversized line */
            if (len == ECO_MCP_MAX_LINE_BYTES) {
                too_long = true;
                continue;
            }
            if (len + 1 >= cap) {
                size_t ncap = cap * 2 > ECO_MCP_MAX_LINE_BYTES + 1 ? ECO_MCP_MAX_LINE_BYTES + 1 : cap * 2;
                char *grown = realloc(buf, ncap);
                if (!grown) {
                    rc = eco_fail(ECO_ENOMEM, "out of memory reading an MCP message");
                    break;
                }
                buf = grown;
                cap = ncap;
            }
            buf[len++] = (char)c;
            continue;
        }
        if (c == EOF && len == 0 && !too_long) break;
        json_t *response = NULL;
        if (too_long) {
            srv->line_no++;
            logf_(srv, "message longer than %zu bytes refused", ECO_MCP_MAX_LINE_BYTES);
            char msg[160];
            snprintf(msg, sizeof msg, "Invalid Request: message exceeds the %zu-byte line limit", ECO_MCP_MAX_LINE_BYTES);
            response = error_response(NULL, ECO_JSONRPC_INVALID_REQUEST, msg,
                                      json_pack("{s:I}", "max_bytes", (json_int_t)ECO_MCP_MAX_LINE_BYTES));
            if (!response) rc = eco_fail(ECO_ENOMEM, "out of memory");
        } else {
            if (len > 0 && buf[len - 1] == '\r') len--; /* tolerate CRLF */
            size_t i = 0;
            while (i < len && (buf[i] == ' ' || buf[i] == '\t' || buf[i] == '\r')) i++;
            if (i < len) rc = eco_mcp_handle_line(srv, buf, len, &response);
            else srv->line_no++; /* a blank line is still a line of the log's numbering */
        }
        len = 0;
        too_long = false;
        if (response) {
            if (rc == ECO_OK) rc = write_message(out, response);
            json_decref(response);
        }
        if (rc != ECO_OK || c == EOF) break;
    }
    if (rc == ECO_OK && ferror(in)) rc = eco_fail(ECO_EIO, "reading MCP messages from the input failed");
    free(buf);
    return rc;
}
