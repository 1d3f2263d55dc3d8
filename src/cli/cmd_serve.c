/* eco serve: the REST API and the web site until SIGINT/SIGTERM. */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "eco/api.h"
#include "eco/service.h"

static void usage(FILE *out)
{
    fprintf(out, "usage: eco serve --curves FILE [--db FILE] [--web DIR] [--host ADDR] [--port N] [--threads N]\n"
                 "  --curves FILE  curves.json written by `eco fit` (required)\n"
                 "  --db FILE      SQLite store, for /v1/measurements\n"
                 "  --web DIR      static site served under / (index.html for /)\n"
                 "  --host ADDR    address to bind (default 127.0.0.1)\n"
                 "  --port N       TCP port (default 8080; 0 = any free port, printed at start)\n"
                 "  --threads N    worker threads (default: number of CPUs)\n");
}

int eco_cmd_serve(int argc, char **argv)
{
    const char *curves = NULL, *db = NULL, *web = NULL, *host = "127.0.0.1";
    unsigned long port = 8080, threads = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { usage(stdout); return 0; }
        if (i + 1 >= argc) {
            fprintf(stderr, "eco serve: %s needs a value\n", a);
            usage(stderr);
            return 2;
        }
        const char *v = argv[++i];
        if (!strcmp(a, "--curves")) curves = v;
        else if (!strcmp(a, "--db")) db = v;
        else if (!strcmp(a, "--web")) web = v;
        else if (!strcmp(a, "--host")) host = v;
        else if (!strcmp(a, "--port")) { long n; if (!eco_arg_long("eco serve", a, v, 0, 65535, &n)) return 2; port = (unsigned long)n; }
        else if (!strcmp(a, "--threads")) { long n; if (!eco_arg_long("eco serve", a, v, 1, 1024, &n)) return 2; threads = (unsigned long)n; }
        else {
            fprintf(stderr, "eco serve: unknown option '%s'\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (!curves) {
        fprintf(stderr, "eco serve: --curves FILE is required (write one with `eco fit`)\n");
        usage(stderr);
        return 2;
    }

    /* Block the signals before MHD starts its threads, so they inherit the mask and sigwait() gets them. */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    signal(SIGPIPE, SIG_IGN);

    eco_service *svc = NULL;
    eco_service_config scfg = {.curves_path = curves, .db_path = db};
    if (eco_service_open(&scfg, &svc)) {
        fprintf(stderr, "eco serve: %s\n", eco_last_error());
        return 1;
    }
    eco_api *api = NULL;
    eco_api_config acfg = {.svc = svc, .host = host, .port = (uint16_t)port, .threads = (unsigned)threads, .web_dir = web};
    if (eco_api_start(&acfg, &api)) {
        fprintf(stderr, "eco serve: %s\n", eco_last_error());
        eco_service_close(svc);
        return 1;
    }
    const char *fmt = strchr(host, ':') ? "eco serve: listening on http://[%s]:%u (%u threads, curves %s, db %s, web %s)\n"
                                        : "eco serve: listening on http://%s:%u (%u threads, curves %s, db %s, web %s)\n";
    fprintf(stderr, fmt, host, (unsigned)eco_api_port(api), eco_api_threads(api), curves, db ? db : "none",
            web ? web : "none");
    fflush(stderr);

    int sig = 0;
    while (sigwait(&stop, &sig) != 0) {
    }
    fprintf(stderr, "eco serve: %s, stopping\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
    eco_api_stop(api); /* waits for in-flight requests */
    eco_service_close(svc);
    return 0;
}
