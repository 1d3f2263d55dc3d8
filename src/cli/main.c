#include <stdio.h>
#include <string.h>

#include "cli/args.h"
#include "cli/commands.h"

typedef struct {
    const char *name;
    const char *help;
    eco_cmd_fn fn;
} command;

#define ECO_CMD_ENTRY(name, help) {#name, help, NULL},
static command commands[] = {ECO_CLI_COMMANDS(ECO_CMD_ENTRY)};
#undef ECO_CMD_ENTRY

static void bind_commands(void)
{
    size_t i = 0;
#define ECO_CMD_BIND(name, help) commands[i++].fn = eco_cmd_##name;
    ECO_CLI_COMMANDS(ECO_CMD_BIND)
#undef ECO_CMD_BIND
}

static void usage(FILE *out)
{
    fprintf(out, "eco %s (build %s): does quantizing an LLM's weights lower GPU energy per token?\n\n"
                 "usage: eco <command> [options]   (eco <command> --help for a command's options)\n\ncommands:\n",
            ECO_VERSION, ECO_BUILD_HASH);
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (commands[i].fn) fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].help);
    fprintf(out, "\nexit status: 0 done, 1 failed, 2 wrong request (usage, bad value, unknown name),\n"
                 "             3 valid request the data or this build cannot serve (no data for that precision, ...)\n");
}

int main(int argc, char **argv)
{
    bind_commands();
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("eco %s (build %s)\n", ECO_VERSION, ECO_BUILD_HASH);
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        if (strcmp(argv[1], commands[i].name)) continue;
        if (!commands[i].fn) {
            fprintf(stderr, "eco: '%s' is not part of this build\n", argv[1]);
            return 2;
        }
        if (!eco_args_once(argv[1], argc - 1, argv + 1)) return 2;
        return commands[i].fn(argc - 1, argv + 1);
    }
    fprintf(stderr, "eco: unknown command '%s'\n\n", argv[1]);
    usage(stderr);
    return 2;
}
