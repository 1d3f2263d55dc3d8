/* The timeline sampler: a thread that polls the cheap power fields into a preallocated array. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "eco/power.h"

struct eco_sampler {
    eco_nvml *meter;
    unsigned period_ms;
    eco_power_sample *samples;
    size_t capacity;
    atomic_size_t count, dropped;
    atomic_bool stop;
    bool joined;
    pthread_t thread;
};

static void *sampler_main(void *arg)
{
    eco_sampler *s = arg;
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    while (!atomic_load(&s->stop)) {
        size_t i = atomic_load(&s->count);
        if (i < s->capacity) {
            if (eco_nvml_sample(s->meter, &s->samples[i]) == ECO_OK) atomic_store(&s->count, i + 1);
            else atomic_fetch_add(&s->dropped, 1);
        } else {
            atomic_fetch_add(&s->dropped, 1);
        }
        /* Absolute deadlines: no drift from the read cost. A late tick is counted as dropped, not bunched. */
        next.tv_nsec += (long)s->period_ms * 1000000L;
        while (next.tv_nsec >= 1000000000L) { next.tv_nsec -= 1000000000L; next.tv_sec++; }
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec > next.tv_sec || (now.tv_sec == next.tv_sec && now.tv_nsec > next.tv_nsec)) {
            atomic_fetch_add(&s->dropped, 1);
            next = now;
            continue;
        }
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL) == EINTR) {}
    }
    return NULL;
}

eco_err eco_sampler_start(eco_nvml *m, unsigned period_ms, size_t capacity, eco_sampler **out)
{
    if (period_ms == 0 || capacity == 0)
        return eco_fail(ECO_EINVAL, "sampler needs period_ms > 0 and capacity > 0 (got %u, %zu)", period_ms, capacity);
    eco_sampler *s = calloc(1, sizeof *s);
    if (!s) return eco_fail(ECO_ENOMEM, "out of memory");
    s->samples = calloc(capacity, sizeof *s->samples);
    if (!s->samples) { free(s); return eco_fail(ECO_ENOMEM, "sampler: cannot allocate %zu samples", capacity); }
    s->meter = m;
    s->period_ms = period_ms;
    s->capacity = capacity;
    if (pthread_create(&s->thread, NULL, sampler_main, s)) {
        free(s->samples);
        free(s);
        return eco_fail(ECO_ESTATE, "sampler: cannot start thread");
    }
    *out = s;
    return ECO_OK;
}

void eco_sampler_stop(eco_sampler *s)
{
    if (!s || s->joined) return;
    atomic_store(&s->stop, true);
    pthread_join(s->thread, NULL);
    s->joined = true;
}

size_t eco_sampler_count(const eco_sampler *s) { return atomic_load(&((eco_sampler *)s)->count); }
const eco_power_sample *eco_sampler_samples(const eco_sampler *s) { return s->samples; }
size_t eco_sampler_dropped(const eco_sampler *s) { return atomic_load(&((eco_sampler *)s)->dropped); }

void eco_sampler_free(eco_sampler *s)
{
    if (!s) return;
    eco_sampler_stop(s);
    free(s->samples);
    free(s);
}

static double field_of(const eco_power_sample *p, int field)
{
    return field == 0 ? p->instant_w : field == 1 ? p->average_w : p->memory_w;
}

double eco_power_trapz_j(const eco_power_sample *s, size_t n, double t0, double t1, int field)
{
    /* Piecewise-linear power between samples, clipped to [t0, t1]; outside the sampled span the edge value holds. */
    if (n == 0 || t1 <= t0) return 0;
    double energy = 0;
    for (size_t i = 0; i + 1 < n; i++) {
        double a = s[i].t_s, b = s[i + 1].t_s;
        double pa = field_of(&s[i], field), pb = field_of(&s[i + 1], field);
        if (b <= t0 || a >= t1 || b <= a || isnan(pa) || isnan(pb)) continue;
        double lo = a < t0 ? t0 : a, hi = b > t1 ? t1 : b;
        double plo = pa + (pb - pa) * (lo - a) / (b - a), phi = pa + (pb - pa) * (hi - a) / (b - a);
        energy += 0.5 * (plo + phi) * (hi - lo);
    }
    if (s[0].t_s > t0 && !isnan(field_of(&s[0], field)))
        energy += field_of(&s[0], field) * ((s[0].t_s < t1 ? s[0].t_s : t1) - t0);
    if (s[n - 1].t_s < t1 && !isnan(field_of(&s[n - 1], field)))
        energy += field_of(&s[n - 1], field) * (t1 - (s[n - 1].t_s > t0 ? s[n - 1].t_s : t0));
    return energy;
}
