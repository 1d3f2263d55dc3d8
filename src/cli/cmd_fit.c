/* eco fit: records from the store -> curves per (arch, precision, protocol) -> curves.json, with a summary table. */
#include <math.h>
#include <stdio.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "eco/fit.h"
#include "eco/store.h"
#include "service/curves_io.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: eco fit --db DB --out curves.json [options]\n"
            "  --arch A            only this architecture (turing, ampere, ada, hopper, blackwell)\n"
            "  --precision P       only this precision (int8, int8-mixed, nf4, nf4-dq, fp8)\n"
            "  --protocol KEY      fit rows of this protocol (default: each group's largest protocol)\n"
            "  --pool              pool every protocol (recorded as pooled_protocols)\n"
            "  --no-split-backend  do not split a protocol by software stack (record.backend)\n"
            "  --source-file F     only records imported from this file (e.g. measured.csv, the anchor's fit input)\n"
            "  --weighting W       trials (default), inverse-variance, none\n"
            "  --anchor-compat     the anchor project's fit (saturating, S >= 0, unweighted) for comparison\n"
            "  --seed N            bootstrap seed (default %u)\n"
            "  --quiet             no table\n",
            ECO_FIT_DEFAULT_SEED);
}

static void fmt_num(char *buf, size_t cap, double v, const char *fmt)
{
    if (isfinite(v)) snprintf(buf, cap, fmt, v);
    else snprintf(buf, cap, "-");
}

int eco_cmd_fit(int argc, char **argv)
{
    const char *db = NULL, *out = NULL, *source_file = NULL;
    bool quiet = false;
    eco_fit_options opt;
    eco_fit_options_default(&opt);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { usage(stdout); return 0; }
        if (!strcmp(a, "--pool")) { opt.pool = true; continue; }
        if (!strcmp(a, "--anchor-compat")) { opt.anchor_compat = true; continue; }
        if (!strcmp(a, "--no-split-backend")) { opt.split_backend = false; continue; }
        if (!strcmp(a, "--quiet")) { quiet = true; continue; }
        if (!val) { fprintf(stderr, "eco fit: %s needs a value (or is unknown)\n", a); usage(stderr); return 2; }
        i++;
        if (!strcmp(a, "--db")) db = val;
        else if (!strcmp(a, "--out")) out = val;
        else if (!strcmp(a, "--source-file")) source_file = val;
        else if (!strcmp(a, "--arch")) {
            if (!eco_arch_is_known(val)) { fprintf(stderr, "eco fit: --arch: unknown architecture '%s'\n", val); return 2; }
            opt.arch = val;
        } else if (!strcmp(a, "--precision")) {
            eco_precision p = ECO_PREC_COUNT;
            if (eco_precision_parse(val, &p) || p == ECO_PREC_FP16) {
                fprintf(stderr, "eco fit: --precision: %s\n", p == ECO_PREC_FP16 ? "fp16 is the baseline" : eco_last_error());
                return 2;
            }
            opt.precision = (int)p;
        } else if (!strcmp(a, "--protocol")) opt.protocol = val;
        else if (!strcmp(a, "--weighting")) {
            if (eco_weighting_parse(val, &opt.weighting)) { fprintf(stderr, "eco fit: --weighting: %s\n", eco_last_error()); return 2; }
        } else if (!strcmp(a, "--seed")) {
            char *end;
            unsigned long long s = strtoull(val, &end, 10);
            if (*end || end == val || s == 0) { fprintf(stderr, "eco fit: --seed must be a positive integer, got '%s'\n", val); return 2; }
            opt.seed = s;
        } else { fprintf(stderr, "eco fit: unknown option %s\n", a); usage(stderr); return 2; }
    }
    if (!db || !out) { fprintf(stderr, "eco fit: --db and --out are required\n"); usage(stderr); return 2; }
    if (opt.pool && opt.protocol) { fprintf(stderr, "eco fit: --pool and --protocol exclude each other\n"); return 2; }

    /* fitting must not create an empty database by accident */
    if (access(db, R_OK) != 0) { fprintf(stderr, "eco fit: %s: no such database (make it with `eco import --db %s data/reference`)\n", db, db); return 1; }
    eco_store *st;
    if (eco_store_open(db, &st)) { fprintf(stderr, "eco fit: %s\n", eco_last_error()); return 1; }
    eco_record_filter f = eco_record_filter_any();
    f.source_file = source_file;
    eco_record *rows = NULL;
    size_t n = 0;
    eco_err e = eco_store_query_records(st, &f, &rows, &n);
    eco_store_close(st);
    if (e) { fprintf(stderr, "eco fit: %s\n", eco_last_error()); return 1; }
    if (n == 0) { fprintf(stderr, "eco fit: the store %s has no records%s (run `eco import` first)\n", db, source_file ? " from that file" : ""); free(rows); return ECO_EXIT_NO_DATA; }

    eco_curve_set *set = malloc(sizeof *set);
    if (!set) { free(rows); fprintf(stderr, "eco fit: out of memory\n"); return 1; }
    e = eco_fit_all(rows, n, &opt, set);
    free(rows);
    if (e) {
        fprintf(stderr, "eco fit: %s\n", eco_last_error());
        free(set);
        /* a valid request the data cannot serve (no group matches the filters) is not a wrong one */
        if (e == ECO_EINVAL && !strcmp(eco_last_error_field(), "rows")) return ECO_EXIT_NO_DATA;
        return e == ECO_EINVAL ? ECO_EXIT_USAGE : ECO_EXIT_FAILED;
    }
    snprintf(set->dataset, sizeof set->dataset, "store:%s%s%s%s", source_file ? source_file : "all records",
             opt.pool ? "; pooled" : "", opt.anchor_compat ? "; anchor-compat" : "", opt.protocol ? "; protocol selected" : "");
    /* the dataset string must not depend on the db path so re-fits of the same data are byte-identical */
    if ((e = eco_curves_write_file(set, out))) { fprintf(stderr, "eco fit: %s\n", eco_last_error()); free(set); return 1; }

    if (!quiet) {
        printf("%-9s %-10s %-34s %3s %-11s %-10s %-30s %8s %8s %9s\n", "arch", "precision", "protocol", "n", "range_b", "form",
               "params (A, S, N*)", "resid_sd", "loo_med", "crossover");
        for (size_t i = 0; i < set->n_curves; i++) {
            const eco_curve *c = &set->curves[i];
            char rng[32], par[64], sd[16], loo[16], cx[16];
            snprintf(rng, sizeof rng, "%g-%g", c->n_min_b, c->n_max_b);
            if (c->form == ECO_FORM_SATURATING) snprintf(par, sizeof par, "%.2f, %.2f, %.3g", c->A, c->S, c->nstar);
            else if (c->form == ECO_FORM_LOGLINEAR) snprintf(par, sizeof par, "%.2f %+.2f*ln N", c->A, c->S);
            else snprintf(par, sizeof par, "%.2f", c->A);
            fmt_num(sd, sizeof sd, c->resid_sd_pct, "%.2f");
            fmt_num(loo, sizeof loo, c->loo_median_abs_pct, "%.2f");
            fmt_num(cx, sizeof cx, c->crossover_b, "%.2fB");
            printf("%-9s %-10s %-34s %3zu %-11s %-10s %-30s %8s %8s %9s\n", c->arch, eco_precision_name(c->precision), c->protocol,
                   c->n_anchors, rng, eco_curve_form_name(c->form), par, sd, loo, cx);
            if (c->card[0]) printf("          card: %s alone (its own curve; the row above pools the arch's cards)\n", c->card);
            if (c->backend[0]) printf("          backend: %s\n", c->backend);
            if (c->n_excluded) printf("          (%zu row(s) left out: e.g. %s: %s)\n", c->n_excluded, c->excluded[0].source, c->excluded[0].reason);
        }
        printf("wrote %s: %zu curve(s) from %zu record(s)\n", out, set->n_curves, set->n_records);
    }
    free(set);
    return 0;
}
