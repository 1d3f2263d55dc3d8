/* Model Context Protocol server over stdio: newline-delimited JSON-RPC 2.0, legacy handshake revisions
 * 2025-06-18 and 2025-11-25. The protocol layer (framing, lifecycle, errors, tools/list, tools/call) knows
 * nothing about energy; tools are registered as callbacks, and eco_mcp_add_eco_tools() registers the four
 * tools backed by the service layer (include/eco/service.h). Only protocol messages go to `out`; logs go to
 * the log stream (stderr by default). */
#ifndef ECO_MCP_H
#define ECO_MCP_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "eco/err.h"
#include "eco/service.h"

#define ECO_MCP_MAX_LINE_BYTES ((size_t)1 << 20) /* one message per line; longer lines are refused */
#define ECO_MCP_PROTOCOL_LATEST "2025-11-25"
#define ECO_MCP_PROTOCOL_PREVIOUS "2025-06-18"

/* JSON-RPC 2.0 error codes used by the server. */
#define ECO_JSONRPC_PARSE_ERROR (-32700)
#define ECO_JSONRPC_INVALID_REQUEST (-32600)
#define ECO_JSONRPC_METHOD_NOT_FOUND (-32601)
#define ECO_JSONRPC_INVALID_PARAMS (-32602)
#define ECO_JSONRPC_INTERNAL_ERROR (-32603)

typedef struct eco_mcp_server eco_mcp_server;

/* A tool implementation. On success it returns ECO_OK with *structured (a new JSON object that conforms to the
 * tool's outputSchema) and *summary (a malloc'd one-paragraph text). On failure it returns an eco_err with
 * eco_fail_field() naming the argument; the server turns that into a result with isError:true (a tool
 * execution error the model can correct), never into a JSON-RPC error. `arguments` is always an object. */
typedef eco_err (*eco_mcp_tool_fn)(void *ctx, const json_t *arguments, json_t **structured, char **summary);

typedef struct {
    const char *name;        /* 1-128 chars of [A-Za-z0-9_.-] */
    const char *title;       /* may be NULL */
    const char *description;
    json_t *input_schema;    /* borrowed (the server takes its own reference); must have "type":"object" */
    json_t *output_schema;   /* borrowed, may be NULL; "type":"object" when given */
    bool read_only;          /* annotations: readOnlyHint, idempotentHint, openWorldHint (destructiveHint = !read_only) */
    bool idempotent;
    bool open_world;
    eco_mcp_tool_fn fn;
    void *ctx;
} eco_mcp_tool;

eco_err eco_mcp_server_new(const char *name, const char *version, eco_mcp_server **out);
void eco_mcp_server_free(eco_mcp_server *srv);
/* Where diagnostics go (default stderr); NULL silences them. Never stdout. */
void eco_mcp_server_set_log(eco_mcp_server *srv, FILE *log);
/* Optional "instructions" string of the initialize result (copied). */
eco_err eco_mcp_server_set_instructions(eco_mcp_server *srv, const char *instructions);
eco_err eco_mcp_server_add_tool(eco_mcp_server *srv, const eco_mcp_tool *tool);

/* Handles one message (one line, without its newline). *response is a new JSON-RPC response object, or NULL
 * when none is due (notifications, responses from the client). ECO_OK unless memory runs out. */
eco_err eco_mcp_handle_line(eco_mcp_server *srv, const char *line, size_t len, json_t **response);

/* Reads messages from `in` until EOF and writes one response per line to `out` (flushed after each).
 * ECO_OK at EOF; ECO_EIO when writing fails (e.g. the client went away). */
eco_err eco_mcp_serve(eco_mcp_server *srv, FILE *in, FILE *out);

/* The negotiated protocol version, or NULL before a successful initialize. */
const char *eco_mcp_protocol_version(const eco_mcp_server *srv);

/* Registers recommend_config, estimate_energy, list_gpus and list_models, backed by `svc` (borrowed: it must
 * outlive the server). Input and output schemas come from eco_service_schema(). */
eco_err eco_mcp_add_eco_tools(eco_mcp_server *srv, eco_service *svc);

#endif
