#include "eco/stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void eco_rng_seed(eco_rng *rng, uint64_t seed)
{
    for (int i = 0; i < 4; i++) rng->s[i] = splitmix64(&seed);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t eco_rng_next(eco_rng *rng)
{
    uint64_t *s = rng->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double eco_rng_uniform(eco_rng *rng) { return (double)(eco_rng_next(rng) >> 11) * 0x1.0p-53; }

size_t eco_rng_below(eco_rng *rng, size_t n)
{
    /* Rejection sampling: no modulo bias even for large n. */
    uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t r;
    do r = eco_rng_next(rng); while (r >= limit);
    return (size_t)(r % n);
}

double eco_rng_normal(eco_rng *rng)
{
    double u1 = eco_rng_uniform(rng), u2 = eco_rng_uniform(rng);
    if (u1 < 1e-300) u1 = 1e-300;
    return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

double eco_mean(const double *x, size_t n)
{
    if (n == 0) return NAN;
    double s = 0;
    for (size_t i = 0; i < n; i++) s += x[i];
    return s / (double)n;
}

double eco_sd(const double *x, size_t n)
{
    if (n < 2) return 0;
    double m = eco_mean(x, n), s = 0;
    for (size_t i = 0; i < n; i++) s += (x[i] - m) * (x[i] - m);
    return sqrt(s / (double)(n - 1));
}

double eco_cv_pct(const double *x, size_t n)
{
    if (n < 2) return 0;
    double m = eco_mean(x, n);
    return m == 0 ? 0 : 100.0 * eco_sd(x, n) / fabs(m);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double eco_quantile(const double *x, size_t n, double p, double *scratch)
{
    if (n == 0) return NAN;
    memcpy(scratch, x, n * sizeof *x);
    qsort(scratch, n, sizeof *scratch, cmp_double);
    if (p <= 0) return scratch[0];
    if (p >= 1) return scratch[n - 1];
    double h = (double)(n - 1) * p;
    size_t lo = (size_t)floor(h);
    size_t hi = lo + 1 < n ? lo + 1 : lo;
    return scratch[lo] + (h - (double)lo) * (scratch[hi] - scratch[lo]);
}

double eco_t975(size_t df)
{
    static const double table[] = {NAN,   12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262,
                                   2.228, 2.201,  2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093,
                                   2.086, 2.080,  2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042};
    if (df == 0) return NAN;
    if (df <= 30) return table[df];
    /* Cornish-Fisher expansion around the normal quantile: accurate to 1e-4 beyond 30 df. */
    double z = 1.959963984540054, d = (double)df;
    return z + (z * z * z + z) / (4 * d) + (5 * pow(z, 5) + 16 * z * z * z + 3 * z) / (96 * d * d);
}

eco_interval eco_mean_ci95(const double *x, size_t n)
{
    double m = eco_mean(x, n);
    eco_interval r = {m, m, m};
    if (n >= 2) {
        double half = eco_t975(n - 1) * eco_sd(x, n) / sqrt((double)n);
        r.lo = m - half;
        r.hi = m + half;
    }
    return r;
}

eco_interval eco_paired_delta_pct_t95(const double *quant, const double *base, size_t n)
{
    eco_interval r = {NAN, NAN, NAN};
    if (n == 0) return r;
    r.point = 100.0 * (eco_mean(quant, n) / eco_mean(base, n) - 1.0);
    r.lo = r.hi = r.point;
    if (n < 2) return r;
    double *lr = malloc(n * sizeof *lr);
    if (!lr) { r.lo = r.hi = NAN; return r; }
    for (size_t i = 0; i < n; i++) {
        lr[i] = quant[i] > 0 && base[i] > 0 ? log(quant[i] / base[i]) : NAN;
        if (!isfinite(lr[i])) { free(lr); r.lo = r.hi = NAN; return r; }
    }
    double m = eco_mean(lr, n), half = eco_t975(n - 1) * eco_sd(lr, n) / sqrt((double)n);
    free(lr);
    r.lo = 100.0 * (exp(m - half) - 1.0);
    r.hi = 100.0 * (exp(m + half) - 1.0);
    /* the point is the ratio of the means, the interval's centre the geometric mean of the ratios: keep it inside */
    if (r.point < r.lo) r.lo = r.point;
    if (r.point > r.hi) r.hi = r.point;
    return r;
}
