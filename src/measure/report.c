/* The readable Markdown report of an energy.json document (any valid one, ours or a replication's). */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eco/measure.h"

/* A document's string as Markdown text, for the report is Markdown and the document anyone's: one line, with the
 * characters that would make markup (a heading, a table cell, emphasis, a link, HTML) escaped ('_', '>' and a
 * '<' that opens no tag are left: inside a line, as in sw_power_cap or ">= 64M", they make no markup). code: for inside a
 * code span, where escapes are not read, so only the backtick, '|' and line breaks are handled. The copies live until
 * the report is written (md_free_all): a report holds some in variables across many others. */
static _Thread_local struct { char **v; size_t n, cap; } md_copies;

static void md_free_all(void)
{
    for (size_t i = 0; i < md_copies.n; i++) free(md_copies.v[i]);
    free(md_copies.v);
    memset(&md_copies, 0, sizeof md_copies);
}

char *eco_markdown_escape(const char *s, bool code)
{
    char *b = malloc(2 * strlen(s) + 1);
    if (!b) return NULL;
    size_t o = 0;
    for (; *s; s++) {
        char ch = *s == '\n' || *s == '\r' || *s == '\t' ? ' ' : *s;
        if (code && ch == '`') ch = '\'';
        else if (code ? ch == '|' /* GFM reads \| in a code span inside a table cell */
                      : strchr("\\`*[]|#", ch) || (ch == '<' && (isalpha((unsigned char)s[1]) || strchr("/!?", s[1]))))
            b[o++] = '\\'; /* '<' only where it could open a tag: "<= 16 MB" stays */
        b[o++] = ch;
    }
    b[o] = '\0';
    return b;
}

static const char *md_text(const char *s, bool code)
{
    if (!s) return s;
    if (md_copies.n == md_copies.cap) {
        size_t cap = md_copies.cap ? 2 * md_copies.cap : 64;
        char **v = realloc(md_copies.v, cap * sizeof *v);
        if (!v) return "?";
        md_copies.v = v, md_copies.cap = cap;
    }
    char *b = eco_markdown_escape(s, code);
    if (!b) return "?";
    md_copies.v[md_copies.n++] = b;
    return b;
}
static const char *md(const char *s) { return md_text(s, false); }
static const char *md_code(const char *s) { return md_text(s, true); }

/* The SM clock over the measured windows, per precision of `results` (the lowest any timeline sample saw, the
 * mean of the windows' means), and any clock-event reason other than idle: a power cap shows here, not at the
 * start. Files written before the timeline recorded clocks have no sm_mhz_* and get no line. */
static void windows_clock_line(FILE *f, const json_t *results, const json_t *windows)
{
    bool any = false;
    size_t k, i;
    json_t *r, *w;
    json_array_foreach(results, k, r) {
        const char *prec = json_string_value(json_object_get(r, "precision"));
        if (!prec) continue;
        double lo = INFINITY, sum = 0;
        int n = 0;
        char events[256] = "";
        json_array_foreach(windows, i, w) {
            const char *p = json_string_value(json_object_get(w, "precision"));
            if (!p || strcmp(p, prec)) continue;
            json_t *mn = json_object_get(w, "sm_mhz_min"), *mean = json_object_get(w, "sm_mhz_mean");
            if (json_is_number(mn) && json_number_value(mn) < lo) lo = json_number_value(mn);
            if (json_is_number(mean)) { sum += json_number_value(mean); n++; }
            const char *e = json_string_value(json_object_get(w, "clock_event_reasons"));
            if (e && strcmp(e, "none") && strcmp(e, "idle") && !strstr(events, e) && strlen(events) + strlen(e) + 2 < sizeof events)
                snprintf(events + strlen(events), sizeof events - strlen(events), "%s%s", events[0] ? ", " : "", e);
        }
        if (!n) continue;
        fprintf(f, "%s%s min %.0f, mean %.0f MHz%s%s%s", any ? "; " : "- SM clock in the windows: ", md(prec), lo, sum / n,
                events[0] ? " (clock events: " : "", md(events), events[0] ? ")" : "");
        any = true;
    }
    if (any) fputs("\n", f);
}

/* o[k] for the report's text (md), else dflt; for comparisons use the raw value (only enum words are compared). */
static const char *str(const json_t *o, const char *k, const char *dflt)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? md(s) : dflt;
}

static void num(FILE *f, const json_t *v, const char *fmt)
{
    if (json_is_number(v)) fprintf(f, fmt, json_number_value(v));
    else fputs("—", f);
}

static void interval(FILE *f, const json_t *v, const char *fmt)
{
    if (json_is_array(v) && json_array_size(v) == 2) {
        fputc('[', f);
        num(f, json_array_get(v, 0), fmt);
        fputs(", ", f);
        num(f, json_array_get(v, 1), fmt);
        fputc(']', f);
    } else {
        fputs("—", f);
    }
}

static const json_t *find_by_precision(const json_t *arr, const char *precision)
{
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v) {
        const char *p = json_string_value(json_object_get(v, "precision"));
        if (p && !strcmp(p, precision)) return v;
    }
    return NULL;
}

static void flags_line(FILE *f, const json_t *flags)
{
    size_t i;
    json_t *v;
    json_array_foreach(flags, i, v) fprintf(f, "%s`%s`", i ? ", " : "", md_code(json_string_value(v)));
    if (!json_array_size(flags)) fputs("none", f);
}

eco_err eco_energy_report_md(const json_t *doc, char **markdown)
{
    if (!json_is_object(doc)) return eco_fail(ECO_EINVAL, "report: the document is not a JSON object");
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return eco_fail(ECO_ENOMEM, "report: out of memory");
    const json_t *env = json_object_get(doc, "environment"), *gpu = json_object_get(env, "gpu");
    const json_t *host = json_object_get(env, "host"), *meter = json_object_get(doc, "meter");
    const json_t *proto = json_object_get(doc, "protocol"), *w = json_object_get(doc, "weights");
    const json_t *sw = json_object_get(doc, "software"), *idle = json_object_get(doc, "idle");
    const json_t *results = json_object_get(doc, "results"), *comps = json_object_get(doc, "comparisons");
    const char *device = json_is_object(gpu) ? str(gpu, "name", "GPU") : "CPU (no GPU meter)";
    const char *basis = str(meter, "basis", "unavailable");

    fprintf(f, "# Energy per generated token: %s on %s\n\n", str(w, "model", "model"), device);
    if (json_is_true(json_object_get(doc, "example")))
        fputs("> **Example document: illustrative numbers, not a measurement.**\n\n", f);
    const char *run_id = json_string_value(json_object_get(doc, "run_id"));
    fprintf(f, "Run `%s`, %s · %s %s (build %s), backend %s · meter basis **%s**\n\n", run_id ? md_code(run_id) : "?",
            str(doc, "created_utc", "?"), str(sw, "tool", "eco"), str(sw, "version", "?"), str(sw, "build", "?"),
            str(sw, "engine_backend", "?"), basis);

    fputs("## Headline\n\n", f);
    if (!json_array_size(comps)) fputs("- No comparisons: this run measured no quantized precision against fp16.\n", f);
    size_t i;
    json_t *c;
    json_array_foreach(comps, i, c) {
        const char *p = str(c, "precision", "?"), *verdict = str(c, "verdict", "unavailable");
        if (!json_is_number(json_object_get(c, "delta_pct"))) {
            fprintf(f, "- **%s** vs fp16: energy unavailable (%s)\n", p, str(c, "energy_unavailable_reason", "no meter"));
            continue;
        }
        double d = json_number_value(json_object_get(c, "delta_pct"));
        fprintf(f, "- **%s** vs fp16: %s%.1f%% energy per token (95%% CI ", p, d >= 0 ? "+" : "", d);
        interval(f, json_object_get(c, "ci95_pct"), "%+.1f%%");
        long long pairs = (long long)json_integer_value(json_object_get(c, "n_pairs"));
        fprintf(f, ", %lld paired block%s, %s) — **%s**\n", pairs, pairs == 1 ? "" : "s",
                str(c, "basis", basis), !strcmp(verdict, "saves") ? "quantization saves energy" :
                                        !strcmp(verdict, "costs") ? "quantization costs energy" : "inconclusive");
    }
    fputs("\n## Results per precision (decode, prefill excluded)\n\n", f);
    fputs("| precision | mJ/token gross | mJ/token net of idle | 95% CI (mJ) | CV % | n | tokens/s | mean W | ΔE% vs fp16 [95% CI] | KL to fp16 | top-1 agree | perplexity | flags |\n", f);
    fputs("|---|---:|---:|---|---:|---:|---:|---:|---|---:|---:|---:|---|\n", f);
    json_t *r;
    json_array_foreach(results, i, r) {
        const char *p = str(r, "precision", "?");
        fprintf(f, "| %s | ", p);
        num(f, json_object_get(r, "mj_per_token_gross"), "%.2f");
        fputs(" | ", f);
        num(f, json_object_get(r, "mj_per_token_net"), "%.2f");
        fputs(" | ", f);
        interval(f, json_object_get(r, "ci95_mj"), "%.2f");
        fputs(" | ", f);
        num(f, json_object_get(r, "cv_pct"), "%.2f");
        fprintf(f, " | %lld | ", (long long)json_integer_value(json_object_get(r, "n")));
        num(f, json_object_get(r, "tokens_per_s"), "%.1f");
        fputs(" | ", f);
        num(f, json_object_get(r, "mean_power_w"), "%.1f");
        fputs(" | ", f);
        const json_t *cmp = find_by_precision(comps, p);
        if (cmp && json_is_number(json_object_get(cmp, "delta_pct"))) {
            num(f, json_object_get(cmp, "delta_pct"), "%+.1f");
            fputc(' ', f);
            interval(f, json_object_get(cmp, "ci95_pct"), "%+.1f");
        } else {
            fputs(strcmp(p, "fp16") ? "—" : "baseline", f);
        }
        const json_t *q = json_object_get(r, "quality");
        fputs(" | ", f);
        num(f, json_object_get(q, "kl_to_fp16"), "%.4g");
        fputs(" | ", f);
        num(f, json_object_get(q, "top1_agreement"), "%.3f");
        fputs(" | ", f);
        num(f, json_object_get(q, "perplexity"), "%.3f");
        fputs(" | ", f);
        flags_line(f, json_object_get(r, "flags"));
        fputs(" |\n", f);
    }

    fputs("\n## Meter and protocol\n\n", f);
    const json_t *st = json_object_get(meter, "self_test");
    fprintf(f, "- Energy: %s; sampler every %lld ms, %lld samples, %lld dropped.\n", str(meter, "method", "none"),
            (long long)json_integer_value(json_object_get(meter, "sampler_period_ms")),
            (long long)json_integer_value(json_object_get(meter, "sampler_samples")),
            (long long)json_integer_value(json_object_get(meter, "dropped_samples")));
    fputs("- Self-test: idle counter ", f);
    num(f, json_object_get(st, "idle_counter_w"), "%.1f W");
    fputs(" vs instant-field trapezoid ", f);
    num(f, json_object_get(st, "idle_instant_trapz_w"), "%.1f W");
    fputs("; counter update every ", f);
    num(f, json_object_get(st, "counter_update_median_ms"), "%.1f ms");
    fputs(" (read ", f);
    num(f, json_object_get(st, "counter_read_latency_median_ms"), "%.2f ms");
    fputs(").\n- Idle power before / after: ", f);
    num(f, json_object_get(idle, "before_w"), "%.1f W");
    fputs(" / ", f);
    num(f, json_object_get(idle, "after_w"), "%.1f W");
    fprintf(f, ".\n- Protocol %s: batch 1, greedy, %lld generated tokens after a %lld-token prompt, %lld warm-ups, "
               "%lld blocks in seeded random order (seed %lld), windows of at least ",
            str(proto, "version", "?"), (long long)json_integer_value(json_object_get(proto, "tokens")),
            (long long)json_integer_value(json_object_get(proto, "prompt_tokens")),
            (long long)json_integer_value(json_object_get(proto, "warmups")),
            (long long)json_integer_value(json_object_get(proto, "blocks")),
            (long long)json_integer_value(json_object_get(proto, "seed")));
    num(f, json_object_get(proto, "min_window_s"), "%.1f s");
    fprintf(f, ", prefill %s.\n", json_is_true(json_object_get(proto, "prefill_excluded")) ? "measured separately and excluded" : "included");
    fprintf(f, "- Weights: %s (%s", str(w, "model", "?"), str(w, "source", "?"));
    if (json_is_number(json_object_get(w, "params_b"))) fprintf(f, ", %.4gB parameters", json_number_value(json_object_get(w, "params_b")));
    if (json_is_integer(json_object_get(w, "synthetic_seed")))
        fprintf(f, "; synthetic values of the real shapes, seed %lld: the energy is the model's, the quality figures are not",
                (long long)json_integer_value(json_object_get(w, "synthetic_seed")));
    fputs(").\n", f);
    const json_t *qz = json_object_get(w, "quantization");
    if (json_is_object(qz)) {
        fputs("- Quantization: ", f);
        if (json_is_number(json_object_get(qz, "int8_mixed_threshold")))
            fprintf(f, "LLM.int8() threshold %g; ", json_number_value(json_object_get(qz, "int8_mixed_threshold")));
        fprintf(f, "lm_head %s.\n", str(qz, "lm_head", "?"));
    }
    const char *qtext = NULL;
    for (size_t qi = 0; qi < json_array_size(results) && !qtext; qi++)
        qtext = str(json_object_get(json_array_get(results, qi), "quality"), "text_name", NULL);
    if (qtext) fprintf(f, "- Quality text: %s.\n", qtext);
    fputs("\n## Environment\n\n", f);
    if (json_is_object(gpu)) {
        fprintf(f, "- GPU: %s (%s), UUID %s, driver %s, CUDA driver %lld\n", str(gpu, "name", "?"), str(gpu, "arch", "?"),
                str(gpu, "uuid", "?"), str(gpu, "driver_version", "?"),
                (long long)json_integer_value(json_object_get(gpu, "cuda_driver_version")));
        fputs("- Power limit ", f);
        num(f, json_object_get(gpu, "power_limit_w"), "%.0f W");
        fputs(" (enforced ", f);
        num(f, json_object_get(gpu, "power_limit_enforced_w"), "%.0f W");
        fputs("); SM clock ", f);
        num(f, json_object_get(gpu, "sm_clock_mhz"), "%.0f");
        fputs(" of ", f);
        num(f, json_object_get(gpu, "sm_clock_max_mhz"), "%.0f MHz");
        fputs(", memory ", f);
        num(f, json_object_get(gpu, "mem_clock_mhz"), "%.0f MHz");
        fprintf(f, "; persistence %s; clock events at start: %s\n",
                json_integer_value(json_object_get(gpu, "persistence_mode")) == 1 ? "on" : "off/unknown",
                str(gpu, "clock_event_reasons", "?"));
        windows_clock_line(f, json_object_get(doc, "results"), json_object_get(doc, "windows"));
        fputs("- Clocks and power limits were recorded, never changed.\n", f);
    } else {
        fputs("- No GPU: energy is not measured on the CPU backend.\n", f);
    }
    fprintf(f, "- Host: %s, %s, %lld cores\n", str(host, "cpu", "?"), str(host, "os", "?"),
            (long long)json_integer_value(json_object_get(host, "cpu_cores")));
    /* The kernel design changes speed and energy as much as a format can; a reader comparing runs needs it. */
    if (json_is_string(json_object_get(sw, "engine_design"))) fprintf(f, "- Engine design: %s\n", str(sw, "engine_design", "?"));
    fputs("\n## Flags and notes\n\n- Flags: ", f);
    flags_line(f, json_object_get(doc, "flags"));
    fputc('\n', f);
    json_t *n;
    json_array_foreach(json_object_get(doc, "notes"), i, n) fprintf(f, "- %s\n", md(json_string_value(n)));
    md_free_all();
    if (fclose(f)) { free(buf); return eco_fail(ECO_EIO, "report: write failed"); }
    *markdown = buf;
    return ECO_OK;
}
