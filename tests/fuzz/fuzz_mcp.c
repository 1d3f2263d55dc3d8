/* Feeds arbitrary bytes to the MCP stdio loop (framing, envelope checks, lifecycle, tools/call dispatch). Every
 * input line gets at most one response and every response must be a JSON-RPC 2.0 object. */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eco/mcp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static eco_err echo_tool(void *ctx, const json_t *args, json_t **structured, char **summary)
{
    const json_t *x = json_object_get(args, "x");
    if (x && !json_is_string(x)) return eco_fail_field(ECO_EINVAL, "x", "x must be a string");
    *structured = json_pack("{s:O}", "x", x ? x : json_null());
    *summary = strdup("echoed");
    return *structured ? ECO_OK : eco_fail(ECO_ENOMEM, "out of memory");
}

static void check_response(const json_t *r)
{
    if (!json_is_object(r) || !json_is_string(json_object_get(r, "jsonrpc")) ||
        (!json_object_get(r, "result") == !json_object_get(r, "error")) || !json_object_get(r, "id"))
        abort();
    char *s = json_dumps(r, JSON_COMPACT);
    if (!s || strchr(s, '\n')) abort(); /* one message per line */
    free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    eco_mcp_server *srv;
    if (eco_mcp_server_new("fuzz", "0", &srv)) return 0;
    eco_mcp_server_set_log(srv, NULL);
    json_t *schema = json_pack("{s:s}", "type", "object");
    eco_mcp_tool t = {.name = "echo", .description = "echo", .input_schema = schema, .output_schema = schema,
                      .fn = echo_tool};
    eco_mcp_server_add_tool(srv, &t);
    json_decref(schema);

    /* Line by line through the dispatcher... */
    size_t start = 0;
    for (size_t i = 0; i <= size; i++) {
        if (i < size && data[i] != '\n') continue;
        json_t *r = NULL;
        if (eco_mcp_handle_line(srv, (const char *)data + start, i - start, &r) == ECO_OK && r) check_response(r);
        json_decref(r);
        start = i + 1;
    }
    eco_mcp_server_free(srv);

    /* ...and the same bytes through the stdio loop on a fresh server. */
    if (eco_mcp_server_new("fuzz", "0", &srv)) return 0;
    eco_mcp_server_set_log(srv, NULL);
    FILE *in = fmemopen((void *)data, size ? size : 1, "r");
    FILE *out = fopen("/dev/null", "w");
    if (in && out && size) eco_mcp_serve(srv, in, out);
    if (in) fclose(in);
    if (out) fclose(out);
    eco_mcp_server_free(srv);
    return 0;
}
