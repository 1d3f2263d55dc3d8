/* Small statistics kit: a seeded RNG (so the fitter's bootstraps are reproducible), summaries, t CIs, a paired ratio CI.
 * Pure C, no I/O: compiled into the WebAssembly build too. */
#ifndef ECO_STATS_H
#define ECO_STATS_H

#include <stddef.h>
#include <stdint.h>

typedef struct { uint64_t s[4]; } eco_rng; /* xoshiro256** */

void eco_rng_seed(eco_rng *rng, uint64_t seed);
uint64_t eco_rng_next(eco_rng *rng);
double eco_rng_uniform(eco_rng *rng);          /* [0, 1) */
size_t eco_rng_below(eco_rng *rng, size_t n);  /* uniform in [0, n), n > 0 */
double eco_rng_normal(eco_rng *rng);           /* standard normal */

double eco_mean(const double *x, size_t n);
double eco_sd(const double *x, size_t n);      /* sample SD (n-1); 0 when n < 2 */
double eco_cv_pct(const double *x, size_t n);  /* 100 * sd / |mean|; 0 when n < 2 */
/* Quantile p in [0,1] of x (linear interpolation between order statistics, like R type 7).
 * `scratch` holds n doubles (may alias nothing in x); x is not modified. */
double eco_quantile(const double *x, size_t n, double p, double *scratch);
double eco_t975(size_t df);                    /* two-sided 95% Student t quantile */

typedef struct { double point, lo, hi; } eco_interval;

/* Mean with a t-based 95% CI (lo = hi = mean when n < 2). */
eco_interval eco_mean_ci95(const double *x, size_t n);
/* Paired ΔE% = 100 * (mean(quant)/mean(base) - 1) with a 95% CI from a paired t interval on the blocks' log
 * ratios log(quant[i]/base[i]) (pairs measured in the same block share drift), widened to hold the point if
 * needed. A percentile bootstrap at 2-3 blocks had given the range of the blocks (48% coverage at n = 2). lo = hi =
 * point when n < 2; NaN bounds when a value is not positive. */
eco_interval eco_paired_delta_pct_t95(const double *quant, const double *base, size_t n);

#endif
